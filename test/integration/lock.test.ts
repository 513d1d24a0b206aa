import { once } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { query, Sandbox, FENEC_SERVER } from './processes.js';

describe('the lock of a served file', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it("refuses a second fenec-server naming the first's pid, and lets a new one in after kill -9", async () => {
    const file = path.join(sandbox.dir(), 'locked.fenec');
    const first = await sandbox.startServer(['--file', file]);

    const second = await sandbox.run(FENEC_SERVER, ['--file', file, '--port', '0']);
    expect(second.code).to.equal(1);
    expect(second.stderr).to.include('lock_held');
    expect(second.stderr).to.include(`pid ${first.pid}`);
    expect(second.stderr.trim().split('\n')).to.have.length(1);

    await sandbox.kill(first.child);
    const third = await sandbox.startServer(['--file', file]);
    expect((await query(third.url, 'schema')).status).to.equal(200);
  });

  it('releases the lock when stopped with SIGTERM, and exits 0', async () => {
    const file = path.join(sandbox.dir(), 'stopped.fenec');
    const server = await sandbox.startServer(['--file', file]);
    expect(fs.existsSync(`${file}.lock`)).to.equal(true);
    const exited = once(server.child, 'exit');
    server.child.kill('SIGTERM');
    expect(await exited).to.deep.equal([0, null]);
    expect(fs.existsSync(`${file}.lock`)).to.equal(false);
  });

  it('serves the file --read-only beside a writer', async () => {
    const file = path.join(sandbox.dir(), 'shared.fenec');
    const writer = await sandbox.startServer(['--file', file]);
    expect((await query(writer.url, 'create collection notes (title text)')).status).to.equal(200);
    const reader = await sandbox.startServer(['--file', file, '--read-only']);
    expect((await query(reader.url, 'get notes count')).json).to.deep.equal({ count: 0 });
  });
});
