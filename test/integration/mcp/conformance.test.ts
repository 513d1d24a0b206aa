/**
 * The MCP conformance suite's generic server scenarios against fenec-server with --mcp and no
 * token (the suite's client sends none), on the Node.js running this test (22 or newer, as make's is),
 * installed by scripts/install-mcp-conformance.sh into .cache/ when missing.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Sandbox, type ServerProcess } from '../processes.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const DIR = path.join(ROOT, '.cache/mcp-conformance');
const SUITE = path.join(DIR, 'node_modules/@modelcontextprotocol/conformance');
const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
const run = promisify(execFile);

describe('the MCP conformance suite (generic server scenarios)', function () {
  this.timeout(180_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let cli: string;

  before(async function () {
    await run('bash', [path.join(ROOT, 'scripts/install-mcp-conformance.sh')], { timeout: 170_000 });
    const manifest = JSON.parse(fs.readFileSync(path.join(SUITE, 'package.json'), 'utf8')) as {
      bin: string | Record<string, string>;
    };
    cli = path.join(SUITE, typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin)[0]!);
    server = await sandbox.startServer([
      '--file',
      path.join(sandbox.dir(), 'conformance.fenec'),
      '--mcp-write',
      '--mcp-memory',
      'memories',
    ]);
  });
  after(() => sandbox.cleanUp());

  for (const scenario of SCENARIOS) {
    it(`passes ${scenario}`, async () => {
      const env = {
        ...process.env,
        PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      };
      let output: string;
      try {
        const done = await run(
          process.execPath,
          [cli, 'server', '--url', `${server.url}/_mcp`, '--scenario', scenario],
          { env, timeout: 120_000, cwd: sandbox.dir() },
        );
        output = done.stdout + done.stderr;
      } catch (err) {
        const failed = err as { stdout?: string; stderr?: string; code?: number };
        return expect.fail(`${scenario} exited ${failed.code}:\n${failed.stdout ?? ''}${failed.stderr ?? ''}`);
      }
      expect(output).to.match(/0 failed/);
      expect(output).not.to.match(/[1-9]\d* warnings?/);
    });
  }
});
