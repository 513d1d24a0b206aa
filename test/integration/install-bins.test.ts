/**
 * `make install`'s last step (scripts/link-bins.sh) puts fenec, fenec-server and fenec-router on the
 * PATH; then the seed's stdio line — `claude mcp add fenecdb -- fenec mcp --file notes.fenec --memory
 * memories` — starts `fenec` by its name, and the official MCP client speaks to it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { connect, type McpTestClient } from './mcp/clients.js';
import { linkBins as link, Sandbox, SYSTEM_PATH } from './processes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('make install: fenec on the PATH', function () {
  this.timeout(40_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it("links the three programs in the bin folder it is given, and the seed's stdio line runs fenec by name", async () => {
    const dir = sandbox.dir();
    const bin = path.join(dir, 'bin');
    const done = await link({ FENEC_BIN_DIR: bin, HOME: dir });
    expect(done.code, done.stderr).to.equal(0);
    expect(fs.readdirSync(bin).sort()).to.deep.equal(['fenec', 'fenec-router', 'fenec-server']);
    expect(fs.realpathSync(path.join(bin, 'fenec'))).to.equal(
      fs.realpathSync(path.join(ROOT, 'dist/node/cli/fenec.js')),
    );
    expect(done.stderr.trim().split('\n')).to.have.length(1);

    let client: McpTestClient | undefined;
    try {
      // `fenec mcp --file notes.fenec --memory memories`, as `claude mcp add fenecdb -- …` starts it.
      client = await connect('sdk 1.x', {
        transport: 'stdio',
        command: 'fenec',
        args: ['mcp', '--file', 'notes.fenec', '--memory', 'memories'],
        env: { PATH: `${bin}:${SYSTEM_PATH}` },
        cwd: dir,
      });
      const tools = (await client.listTools()).map((tool) => tool.name);
      expect(tools).to.include.members(['query', 'search', 'schema', 'remember', 'recall', 'forget']);
      const kept = await client.callTool('remember', { text: 'the deploy runs on fridays' });
      expect(kept.isError ?? false, JSON.stringify(kept)).to.equal(false);
      const recalled = await client.callTool('recall', { text: 'when do we deploy' });
      expect((recalled.structuredContent as { rows: { text: string }[] }).rows.map((row) => row.text)).to.deep.equal([
        'the deploy runs on fridays',
      ]);
    } finally {
      await client?.close();
    }
    expect(fs.existsSync(path.join(dir, 'notes.fenec'))).to.equal(true);
  });

  it('falls back to ~/.local/bin and says in one line how to put it on the PATH', async () => {
    const home = sandbox.dir();
    const done = await link({ HOME: home });
    expect(done.code, done.stderr).to.equal(0);
    expect(fs.readdirSync(path.join(home, '.local/bin')).sort()).to.deep.equal([
      'fenec',
      'fenec-router',
      'fenec-server',
    ]);
    const lines = done.stderr.trim().split('\n');
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include(`export PATH="${path.join(home, '.local/bin')}:$PATH"`);
  });

  it('uses ~/.local/bin without a word of PATH when it is on the PATH already, and links again over its own links', async () => {
    const home = sandbox.dir();
    const bin = path.join(home, '.local/bin');
    fs.mkdirSync(bin, { recursive: true });
    for (let i = 0; i < 2; i++) {
      const done = await link({ HOME: home, PATH: `${bin}:${SYSTEM_PATH}` });
      expect(done.code, done.stderr).to.equal(0);
      expect(done.stderr).to.include('(on your PATH)').and.not.include('export PATH');
    }
  });

  it('leaves alone a file of that name that is not its link, and says so', async () => {
    const bin = sandbox.dir();
    fs.writeFileSync(path.join(bin, 'fenec'), '#!/bin/sh\necho another fenec\n');
    const done = await link({ FENEC_BIN_DIR: bin, HOME: bin });
    expect(done.code).to.equal(1);
    expect(done.stderr).to.include('is not a link of ours');
    expect(fs.readFileSync(path.join(bin, 'fenec'), 'utf8')).to.include('another fenec');
  });
});
