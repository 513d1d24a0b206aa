/**
 * Issue 9 over MCP, through the official clients: a tool's arguments are checked before the data is
 * consulted (a wrong vector is refused on an empty collection as on a full one), and arguments that are
 * too deep, too complex or past a number's range are refused as tool errors with their code, never
 * answered with nothing, never `internal`.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { query, Sandbox, type ServerProcess } from '../processes.js';
import { connect, type ClientKind, type McpTestClient, type ToolResult } from './clients.js';

const TOKEN = 'mcp-hostile-server-token';
const MEMORIES =
  'create collection memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))';

/** The error of a tool result that must be one. */
function refusal(result: ToolResult): { code: string; status: number; message: string } {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(true);
  return (result.structuredContent as { error: { code: string; status: number; message: string } }).error;
}

const repeat = (n: number, text: string, separator = ''): string => Array<string>(n).fill(text).join(separator);

describe('hostile MCP arguments, through the official clients', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;

  before(async () => {
    server = await sandbox.startServer([
      '--file',
      path.join(sandbox.dir(), 'mcp.fenec'),
      '--http-token',
      TOKEN,
      '--mcp-write',
      '--mcp-memory',
      'memories',
    ]);
    for (const statement of [
      MEMORIES,
      'create collection empty (title text @text, v vector<3>)',
      'create collection notes (title text, j json)',
    ]) {
      expect((await query(server.url, statement, [], TOKEN)).status, statement).to.equal(200);
    }
  });
  after(() => sandbox.cleanUp());

  for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
    describe(kind, () => {
      let client: McpTestClient;
      before(async () => {
        client = await connect(kind, { transport: 'http', url: `${server.url}/_mcp`, token: TOKEN });
      });
      after(() => client?.close());

      it('refuses a vector of another length with vector_length on an empty collection, as /query does', async () => {
        const search = refusal(await client.callTool('search', { collection: 'empty', vector: [1, 2] }));
        expect([search.code, search.status]).to.deep.equal(['vector_length', 400]);
        expect(search.message).to.contain('vector<3>');
        const recall = refusal(await client.callTool('recall', { vector: [1, 2] }));
        expect([recall.code, recall.status]).to.deep.equal(['vector_length', 400]);
        const direct = await query(server.url, 'get empty near v [1, 2] limit 5', [], TOKEN);
        expect(direct.json.error.code).to.equal('vector_length');
        // Whatever the filter lets through: none of the rows here.
        const filtered = refusal(
          await client.callTool('search', { collection: 'empty', vector: [1, 2], filter: 'title = "none"' }),
        );
        expect(filtered.code).to.equal('vector_length');
      });

      it('refuses a vector component past float32 with invalid_number', async () => {
        const error = refusal(await client.callTool('search', { collection: 'empty', vector: [3.5e38, 1, 1] }));
        expect([error.code, error.status]).to.deep.equal(['invalid_number', 400]);
        const remember = refusal(await client.callTool('remember', { text: 'too big', vector: [1e39, 1, 1] }));
        expect(remember.code).to.equal('invalid_number');
      });

      it('refuses a filter nested past the limit, or 1000 times the usual size, with too_complex', async () => {
        for (const filter of [
          `${repeat(300, 'not ')}title = "a"`,
          repeat(3000, 'title = "a"', ' or '),
          `title = ${repeat(2000, '(')}"a"${repeat(2000, ')')}`,
        ]) {
          const started = performance.now();
          const error = refusal(await client.callTool('search', { collection: 'notes', filter }));
          expect([error.code, error.status]).to.deep.equal(['too_complex', 400]);
          expect(performance.now() - started).to.be.below(5000);
        }
      });

      it('refuses a row value nested past 256 levels with too_complex, writing nothing', async () => {
        let deep: unknown = 1;
        for (let i = 0; i < 300; i++) deep = { a: deep };
        const error = refusal(
          await client.callTool('write', { collection: 'notes', insert: [{ title: 'deep', j: deep }] }),
        );
        expect([error.code, error.status]).to.deep.equal(['too_complex', 400]);
        expect(error.message).to.match(/^write\.insert\[0\]\.j(\.a)+ nests deeper than 256 levels/);
        expect((await query(server.url, 'get notes count', [], TOKEN)).json).to.deep.equal({ count: 0 });
      });

      it('refuses a row holding a lone surrogate with invalid_value, naming where, writing nothing', async () => {
        const error = refusal(
          await client.callTool('write', {
            collection: 'notes',
            insert: [{ title: 'fine 🦊' }, { title: 'half \ud83e' }],
          }),
        );
        expect([error.code, error.status]).to.deep.equal(['invalid_value', 400]);
        expect(error.message).to.contain(
          String.raw`write.insert[1].title holds a lone surrogate (\ud83e) at character 5`,
        );
        expect((await query(server.url, 'get notes count', [], TOKEN)).json).to.deep.equal({ count: 0 });
      });
    });
  }

  describe('afterwards', () =>
    it('has logged no internal error', () => expect(server.stderr()).not.to.contain('"code":"internal"')));
});
