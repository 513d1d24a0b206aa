/**
 * Every client configuration on docs/agents-and-mcp.md (each ```json block with "mcpServers"), loaded
 * as Claude Code, Cursor and Claude Desktop load them, and each of its servers called with both
 * official MCP clients. What differs from the page: the port (the test server's), the token (the
 * placeholders `${FENEC_TOKEN}`, `${env:FENEC_TOKEN}` and "the token" expanded to the test's), and
 * where `fenec` is (this checkout's).
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connect, type ClientKind, type Endpoint } from '../integration/mcp/clients.js';
import { Sandbox, type ServerProcess } from '../integration/processes.js';

const PAGE = new URL('../../../docs/agents-and-mcp.md', import.meta.url);
const TOKEN = 'docs-config-token';
const DOCUMENTED_BASE = 'http://127.0.0.1:8080';

interface ServerConfig {
  readonly type?: string;
  readonly command?: string;
  readonly args?: string[];
  readonly env?: Record<string, string>;
  readonly url?: string;
  readonly headers?: Record<string, string>;
}

/** The page's client configurations, each with the line its block starts on. */
function configurations(): { line: number; name: string; server: ServerConfig }[] {
  const found: { line: number; name: string; server: ServerConfig }[] = [];
  const lines = fs.readFileSync(PAGE, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```json') continue;
    const end = lines.indexOf('```', i + 1);
    const text = lines.slice(i + 1, end).join('\n');
    if (text.includes('"mcpServers"')) {
      const servers = (JSON.parse(text) as { mcpServers: Record<string, ServerConfig> }).mcpServers;
      for (const [name, server] of Object.entries(servers)) found.push({ line: i + 1, name, server });
    }
    i = end;
  }
  return found;
}

/** The token placeholders of the clients' configuration formats, expanded. */
function expand(text: string, base: string): string {
  return text.replaceAll('${FENEC_TOKEN}', TOKEN).replaceAll('${env:FENEC_TOKEN}', TOKEN).replaceAll(DOCUMENTED_BASE, base);
}

function endpointOf(server: ServerConfig, base: string, cwd: string): Endpoint {
  const stdio = server.type === 'stdio' || (server.type === undefined && server.command !== undefined);
  if (stdio) {
    expect(path.basename(server.command!), 'the program a stdio configuration starts').to.equal('fenec');
    const env = Object.fromEntries(Object.entries(server.env ?? {}).map(([k, v]) => [k, v === 'the token' ? TOKEN : expand(v, base)]));
    return { transport: 'stdio', args: (server.args ?? []).map((a) => expand(a, base)), env, cwd };
  }
  expect(server.type ?? 'http', 'a configuration with a url').to.equal('http');
  const authorization = expand(server.headers?.Authorization ?? '', base);
  expect(authorization).to.equal(`Bearer ${TOKEN}`);
  return { transport: 'http', url: expand(server.url!, base), token: TOKEN };
}

describe('the client configurations in docs/agents-and-mcp.md', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  const found = configurations();

  before(async () => {
    server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'served.fenec'), '--http-token', TOKEN, '--mcp-write', '--mcp-memory', 'memories']);
  });
  after(() => sandbox.cleanUp());

  it('finds the configurations of Claude Code, Cursor and Claude Desktop: stdio and HTTP, a file and a bridge', () => {
    expect(found).to.have.length(5);
    expect(found.filter((c) => c.server.url !== undefined)).to.have.length(2);
    expect(found.filter((c) => c.server.args?.includes('--url'))).to.have.length(1);
  });

  for (const { line, name, server: config } of found) {
    for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
      it(`line ${line}: ${name} (${config.url ?? `${config.command} ${config.args?.join(' ')}`}) answers ${kind}`, async () => {
        const cwd = sandbox.dir();
        const client = await connect(kind, endpointOf(config, server.url, cwd));
        try {
          const tools = (await client.listTools()).map((t) => t.name);
          expect(tools).to.include.members(['query', 'search', 'schema', 'remember', 'recall', 'forget']);
          const remembered = await client.callTool('remember', { text: `configured at line ${line}`, tags: ['docs'] });
          expect(remembered.isError).to.equal(false);
          const recalled = await client.callTool('recall', { text: `configured line ${line}` });
          expect((recalled.structuredContent as { rows: { text: string }[] }).rows[0]?.text).to.equal(`configured at line ${line}`);
        } finally {
          await client.close();
        }
        if (config.args?.includes('--file')) expect(fs.existsSync(path.join(cwd, 'notes.fenec')), 'the file, where the agent started it').to.equal(true);
      });
    }
  }
});
