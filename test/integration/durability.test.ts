import * as path from 'node:path';
import { expect } from 'chai';
import { query, Sandbox } from './processes.js';

const N = 200;

describe('durability', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it(`keeps all ${N} acknowledged inserts of a server killed with SIGKILL`, async () => {
    const file = path.join(sandbox.dir(), 'durable.fenec');
    const first = await sandbox.startServer(['--file', file]);
    expect((await query(first.url, 'create collection notes (title text, n int)')).status).to.equal(200);
    const acknowledged: number[] = [];
    for (let n = 0; n < N; n += 1) {
      const reply = await query(first.url, 'insert into notes {title: $1, n: $2}', [`note ${n}`, n]);
      expect(reply.status, reply.text).to.equal(200);
      acknowledged.push(...(reply.json.ids as number[]));
    }
    // No shutdown, no checkpoint: the process is gone the moment the last answer is in.
    await sandbox.kill(first.child);

    const second = await sandbox.startServer(['--file', file]);
    expect((await query(second.url, 'get notes count')).json).to.deep.equal({ count: N });
    const rows = await query(second.url, `get notes select n order id limit ${N + 1}`);
    expect(rows.json.rows.map((row: { id: number }) => row.id)).to.deep.equal(acknowledged);
    expect(rows.json.rows.map((row: { n: number }) => row.n)).to.deep.equal([...Array(N).keys()]);
  });
});
