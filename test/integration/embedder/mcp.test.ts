/**
 * The MCP tools on a server with an embedder, through both official MCP clients, over HTTP (fenec-server) and stdio
 * (fenec mcp --file): `remember` embeds, `recall` of "when do we ship?" finds "the deploy runs on fridays" through the
 * vector alone (BM25 shares no word with it), `search` with words fuses meaning on an @embed collection, the tools say
 * so; and --mcp-memory-merge refreshes a near twin instead of adding it, audited like any write.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EmbedderRig, embedderFlags } from '../../helpers/embedder-rig.js';
import { connect, type ClientKind, type McpTestClient, type ToolResult } from '../mcp/clients.js';
import { query } from '../processes.js';

const DIMS = 32;

function answer(result: ToolResult): any {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(false);
  return result.structuredContent;
}

describe('the MCP tools with an embedder', function () {
  this.timeout(60_000);
  const rig = new EmbedderRig({ embedder: { dims: DIMS }, server: false });
  const { sandbox } = rig;
  let client: McpTestClient | undefined;

  beforeEach(() => rig.open());
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await rig.close();
  });

  const flags = (): string[] => embedderFlags(rig.embedder);

  for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
    for (const transport of ['http', 'stdio'] as const) {
      it(`${kind} over ${transport}: remember embeds, and recall finds a memory by meaning alone`, async () => {
        const file = path.join(sandbox.dir(), 'm.fenec');
        if (transport === 'http') {
          const server = await sandbox.startServer(['--file', file, '--mcp-memory', 'memories', ...flags()]);
          client = await connect(kind, { transport: 'http', url: `${server.url}/_mcp` });
        } else {
          client = await connect(kind, {
            transport: 'stdio',
            args: ['mcp', '--file', file, '--memory', 'memories', ...flags()],
          });
        }
        const tools = await client.listTools();
        expect(tools.find((t) => t.name === 'recall')!.description).to.include('by meaning too');
        expect(tools.find((t) => t.name === 'remember')!.description).to.include('The server embeds its text');
        answer(await client.callTool('remember', { text: 'the deploy runs on fridays', tags: ['ops'] }));
        answer(await client.callTool('remember', { text: 'staging is in eu-west-1', tags: ['ops'] }));
        const recalled = answer(await client.callTool('recall', { text: 'when do we ship?', limit: 1 }));
        expect(recalled.rows.map((r: { text: string }) => r.text)).to.deep.equal(['the deploy runs on fridays']);
        const words = answer(
          await client.callTool('query', { statement: 'get memories match text "when do we ship?"' }),
        );
        expect(words.rows, 'BM25 alone would miss it').to.deep.equal([]);
        const schema = answer(await client.callTool('schema', { collection: 'memories' }));
        const vector = schema.collections[0].fields.find((f: { name: string }) => f.name === 'vector');
        expect(vector.type).to.equal(`vector<${DIMS}>`);
        expect(vector.annotations).to.include(`@embed(text, model = "${rig.embedder.model}")`);
      });
    }
  }

  for (const transport of ['http', 'stdio'] as const) {
    it(`over ${transport}, an embedder that fails refuses the call as the tool's refusal, writing nothing`, async () => {
      const file = path.join(sandbox.dir(), 'f.fenec');
      if (transport === 'http') {
        const server = await sandbox.startServer([
          '--file',
          file,
          '--mcp-memory',
          'memories',
          ...flags(),
          '--embedder-retries',
          '0',
        ]);
        client = await connect('sdk 1.x', { transport: 'http', url: `${server.url}/_mcp` });
      } else {
        client = await connect('client 2.x', {
          transport: 'stdio',
          args: ['mcp', '--file', file, '--memory', 'memories', ...flags(), '--embedder-retries', '0'],
        });
      }
      answer(await client.callTool('remember', { text: 'the deploy runs on fridays' }));
      rig.embedder.fault = { kind: 'status', status: 500, times: 100, body: '{"error": {"message": "model crashed"}}' };
      const refused = await client.callTool('remember', { text: 'staging is in eu-west-1' });
      expect(refused.isError).to.equal(true);
      const error = (refused.structuredContent as { error: { code: string; status: number; message: string } }).error;
      expect(error.code).to.equal('embedder_failed');
      expect(error.status).to.equal(502);
      expect(error.message).to.include('model crashed');
      const recalled = await client.callTool('recall', { text: 'which region' });
      expect(recalled.isError, 'a recall by words needs the embedder too').to.equal(true);
      rig.embedder.fault = undefined;
      const rows = answer(await client.callTool('query', { statement: 'get memories count' }));
      expect(rows.count, 'nothing was written').to.equal(1);
    });
  }

  it('search with words alone fuses meaning on a collection with an @embed field', async () => {
    const server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 's.fenec'), '--mcp', ...flags()]);
    await query(server.url, `create collection notes (body text @text, vec vector<${DIMS}> @embed(body))`);
    await query(server.url, 'insert into notes [{body: "the deploy runs on fridays"}, {body: "cats sleep all day"}]');
    client = await connect('client 2.x', { transport: 'http', url: `${server.url}/_mcp` });
    expect((await client.listTools()).find((t) => t.name === 'search')!.description).to.include('by meaning too');
    const found = answer(await client.callTool('search', { collection: 'notes', text: 'when do we ship?', limit: 1 }));
    expect(found.rows.map((r: { body: string }) => r.body)).to.deep.equal(['the deploy runs on fridays']);
  });

  it('--mcp-memory-merge refreshes a memory within the cosine instead of adding a twin, audited', async () => {
    const dir = sandbox.dir();
    const audit = path.join(dir, 'audit.log');
    const server = await sandbox.startServer([
      '--file',
      path.join(dir, 'merge.fenec'),
      '--mcp-memory',
      'memories',
      '--mcp-memory-merge',
      '0.92',
      '--audit',
      audit,
      ...flags(),
    ]);
    client = await connect('sdk 1.x', { transport: 'http', url: `${server.url}/_mcp` });
    const first = answer(await client.callTool('remember', { text: 'the deploy runs on fridays', tags: ['ops'] }));
    expect(first.ids).to.deep.equal([1]);
    // The same words folded ("friday", "deploys"): cosine 1 for the tests' embedder.
    const twin = answer(await client.callTool('remember', { text: 'the deploys run on friday', tags: ['release'] }));
    expect(twin).to.deep.equal({ id: 1, merged: true });
    const other = answer(await client.callTool('remember', { text: 'staging is in eu-west-1' }));
    expect(other.ids).to.deep.equal([2]);
    const rows = (await query(server.url, 'get memories select id, text, tags order id')).json.rows;
    expect(rows).to.deep.equal([
      { id: 1, text: 'the deploys run on friday', tags: ['release'] },
      { id: 2, text: 'staging is in eu-west-1', tags: [] },
    ]);
    const lines = fs
      .readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; tool?: string });
    expect(lines.filter((l) => l.tool === 'remember')).to.have.length(3);
  });

  it('a server without an embedder keeps its memories as before: no vector field, recall by words', async () => {
    const server = await sandbox.startServer([
      '--file',
      path.join(sandbox.dir(), 'n.fenec'),
      '--mcp-memory',
      'memories',
    ]);
    client = await connect('client 2.x', { transport: 'http', url: `${server.url}/_mcp` });
    expect((await client.listTools()).find((t) => t.name === 'recall')!.description).to.not.include('by meaning too');
    answer(await client.callTool('remember', { text: 'the deploy runs on fridays' }));
    const fields = (await query(server.url, 'schema memories')).json.collections[0].fields.map(
      (f: { name: string }) => f.name,
    );
    expect(fields).to.not.include('vector');
    expect(answer(await client.callTool('recall', { text: 'when do we ship?' })).rows).to.deep.equal([]);
    expect(rig.embedder.requests).to.have.length(0);
  });
});
