/**
 * The MCP Inspector's command lines of docs/agents-and-mcp.md, run as the page writes them but for the
 * port and the token: against a server's /_mcp, and against `fenec mcp` started by name. The inspector
 * is a devDependency: npx finds it in node_modules, and npm is told to stay offline so that a missing
 * one fails rather than downloads.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { linkBins, runCommand, Sandbox, SYSTEM_PATH, type Finished } from '../processes.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const PAGE = path.join(ROOT, 'docs/agents-and-mcp.md');
const TOKEN = 'inspector-test-token';
const COMMAND = 'npx @modelcontextprotocol/inspector --cli ';

/** The page's inspector lines, each split into its words as a shell would (double quotes, $FENEC_TOKEN). */
function documentedLines(): string[][] {
  return fs
    .readFileSync(PAGE, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith(COMMAND))
    .map((line) =>
      [...line.slice(COMMAND.length).matchAll(/"([^"]*)"|(\S+)/g)].map((word) =>
        (word[1] ?? word[2])!.replaceAll('$FENEC_TOKEN', TOKEN),
      ),
    );
}

/** `npx @modelcontextprotocol/inspector --cli ARGS`, run from the checkout (whose node_modules hold it). */
function inspector(args: readonly string[], bin: string): Promise<Finished> {
  return runCommand('npx', ['@modelcontextprotocol/inspector', '--cli', ...args], {
    env: { PATH: `${bin}:${SYSTEM_PATH}`, HOME: bin, npm_config_offline: 'true', npm_config_update_notifier: 'false' },
    cwd: ROOT,
    timeoutMs: 90_000,
  });
}

function answer(done: Finished): any {
  expect(done.code, `${done.stdout}\n${done.stderr}`).to.equal(0);
  return JSON.parse(done.stdout);
}

describe("the MCP Inspector's command lines in docs/agents-and-mcp.md", function () {
  this.timeout(150_000);
  const sandbox = new Sandbox();
  let bin: string;

  before(async () => {
    bin = path.join(sandbox.dir(), 'bin');
    const linked = await linkBins({ FENEC_BIN_DIR: bin, HOME: bin });
    expect(linked.code, linked.stderr).to.equal(0);
  });

  after(() => sandbox.cleanUp());

  it("lists the tools of a server's /_mcp and of fenec mcp over stdio, and calls one", async () => {
    const lines = documentedLines();
    expect(lines).to.have.length(3);
    const dir = sandbox.dir();
    const server = await sandbox.startServer([
      '--file',
      path.join(dir, 'served.fenec'),
      '--http-token',
      TOKEN,
      '--mcp',
    ]);
    const [http, list, call] = lines.map((words) =>
      words.map((word) => word.replace('http://127.0.0.1:8080', server.url)),
    );
    // Each stdio line gets a folder of its own (the inspector's --cwd), so that the two hold no lock in common.
    const own = (words: string[]): string[] => [...words, '--cwd', sandbox.dir()];
    // An inspector loads for seconds: the three run at once.
    const [overHttp, overStdio, remembered] = await Promise.all([
      inspector(http!, bin),
      inspector(own(list!), bin),
      inspector(own(call!), bin),
    ]);
    expect(answer(overHttp).tools.map((tool: { name: string }) => tool.name)).to.deep.equal([
      'query',
      'search',
      'schema',
    ]);
    expect(answer(overStdio).tools.map((tool: { name: string }) => tool.name)).to.deep.equal([
      'query',
      'search',
      'schema',
      'remember',
      'recall',
      'forget',
    ]);
    expect(answer(remembered)).to.deep.include({ isError: false, structuredContent: { count: 1, ids: [1] } });

    const refused = await inspector(
      http!.filter((word) => word !== '--header' && !word.startsWith('Authorization')),
      bin,
    );
    expect(refused.code).to.not.equal(0);
    expect(`${refused.stdout}${refused.stderr}`).to.match(/auth_required|401/);
  });
});
