/**
 * The official MCP clients against the real programs, as an agent's host runs them: each client
 * (SDK 1.x, client 2.x in auto mode) over HTTP with the server's token and with a scoped JWT, and
 * over stdio through `fenec mcp --file` and `fenec mcp --url`. Every tool is called; the seed's
 * search and memory scenario run as written; every refusal the seed names comes back with its status.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../../shared/auth/token.js';
import { FenecDatabase } from '../../../node/database.js';
import { unmarked } from '../../../shared/mcp/untrusted.js';
import { bm25Term } from '../../helpers/bm25.js';
import { query, Sandbox, type ServerProcess } from '../processes.js';
import { connect, type ClientKind, type Endpoint, type McpTestClient, type ToolResult } from './clients.js';

const TOKEN = 'mcp-test-server-token';
const SECRET = 'mcp-test-secret-of-at-least-32-bytes!!';
const POLICY = 'memories  read,write  where owner = $jwt.sub\ndocs  read\nbulk  read\n';
const SEED_MEMORIES =
  'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))';
const ALL_TOOLS = ['query', 'search', 'schema', 'write', 'remember', 'recall', 'forget'];
const SETUP = [
  'create collection docs (title text @text, body text @text, year int @sorted, embedding vector<3> @hnsw(cosine))',
  'insert into docs [{title: "fox", body: "the quick brown fox", year: 2023, embedding: [1, 0, 0]}, {title: "dog", body: "a lazy dog sleeps", year: 2024, embedding: [0, 1, 0]}, {title: "cat", body: "the cat watches the fox", year: 2025, embedding: [0, 0, 1]}]',
  'create collection bulk (n int @sorted, body text)',
  ...Array.from(
    { length: 3 },
    (_, chunk) =>
      `insert into bulk [${Array.from({ length: 50 }, (_, i) => `{n: ${chunk * 50 + i}, body: "${'x'.repeat(800)}"}`).join(', ')}]`,
  ),
];

/** The JSON a tool answered (its structured content), checked to be the same as its text (rows marked as data). */
function answerOf(result: ToolResult): any {
  const text = result.content.find((c) => c.type === 'text')?.text;
  expect(text, 'the answer as text').to.be.a('string');
  const rows = (result.structuredContent as { rows?: unknown }).rows !== undefined;
  if (rows) expect(unmarked(text!), 'rows are marked as data').to.be.a('string');
  expect(JSON.parse(unmarked(text!) ?? text!)).to.deep.equal(result.structuredContent);
  return result.structuredContent;
}

function ok(result: ToolResult): any {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(false);
  return answerOf(result);
}

/** A refusal's error: code and the status /query would have answered. */
function refusal(
  result: ToolResult,
): { code: string; status: number; message: string; hint?: string } & Record<string, unknown> {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(true);
  return answerOf(result).error;
}

async function rpcError(call: Promise<unknown>): Promise<{ code: number; message: string }> {
  try {
    await call;
  } catch (err) {
    return err as { code: number; message: string };
  }
  return expect.fail('expected a JSON-RPC error');
}

describe('the official MCP clients', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let bare: ServerProcess;
  let stdioFile: string;
  let auditFile: string;
  const jwt = (sub: string) => mintToken({ secret: SECRET, tenant: 'local', sub, ttlSeconds: 3600 });

  before(async () => {
    const dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), POLICY);
    auditFile = path.join(dir, 'audit.log');
    [server, bare] = await Promise.all([
      sandbox.startServer([
        '--file',
        path.join(dir, 'server.fenec'),
        '--http-token',
        TOKEN,
        '--jwt-secret',
        SECRET,
        '--policy',
        path.join(dir, 'policy.txt'),
        '--mcp-write',
        '--mcp-memory',
        'memories',
        '--audit',
        auditFile,
      ]),
      sandbox.startServer(['--file', path.join(dir, 'bare.fenec'), '--http-token', TOKEN, '--mcp']),
    ]);
    for (const statement of SETUP)
      expect((await query(server.url, statement, [], TOKEN)).status, statement).to.equal(200);
    stdioFile = path.join(dir, 'stdio.fenec');
    const db = FenecDatabase.open({ file: stdioFile, readOnly: false, program: 'test' });
    for (const statement of SETUP) db.execute(statement);
    db.close();
  });
  after(() => sandbox.cleanUp());

  describe('the memory collection over HTTP', () => {
    it("answers a scoped token's first remember with the statement the server's token must run (403), making nothing", async () => {
      const client = await connect('client 2.x', { transport: 'http', url: `${server.url}/_mcp`, token: jwt('alice') });
      try {
        const error = refusal(await client.callTool('remember', { text: 'too early', vector: [1, 0, 0] }));
        expect([error.code, error.status]).to.deep.equal(['forbidden', 403]);
        expect(error.message).to.contain(SEED_MEMORIES);
      } finally {
        await client.close();
      }
      expect((await query(server.url, 'schema memories', [], TOKEN)).status).to.equal(404);
    });

    it("makes it at the server token's first remember, as the seed writes it", async () => {
      const client = await connect('sdk 1.x', { transport: 'http', url: `${server.url}/_mcp`, token: TOKEN });
      try {
        ok(await client.callTool('remember', { text: 'the first memory', tags: ['first'], vector: [0.5, 0.5, 0] }));
      } finally {
        await client.close();
      }
      const made = (await query(server.url, 'schema memories', [], TOKEN)).json;
      const reference = FenecDatabase.open({
        file: path.join(sandbox.dir(), 'ref.fenec'),
        readOnly: false,
        program: 'test',
      });
      reference.execute(SEED_MEMORIES);
      // The schema as the seed writes it; the index state (schema's `index`) differs by the memory held.
      const withoutIndex = (answer: any): unknown => ({
        collections: answer.collections.map((c: any) => ({
          ...c,
          fields: c.fields.map(({ index: _index, ...f }: any) => f),
        })),
      });
      expect(withoutIndex(made)).to.deep.equal(withoutIndex(reference.execute('schema memories')));
      expect(made.collections[0].fields.find((f: { name: string }) => f.name === 'vector').index).to.deep.equal({
        rows: 1,
        pending: 0,
        building: false,
      });
      reference.close();
    });
  });

  const endpoints: { label: string; scoped: boolean; endpoint: () => Endpoint }[] = [
    {
      label: 'HTTP with the server token',
      scoped: false,
      endpoint: () => ({ transport: 'http', url: `${server.url}/_mcp`, token: TOKEN }),
    },
    {
      label: 'HTTP with a scoped JWT',
      scoped: true,
      endpoint: () => ({ transport: 'http', url: `${server.url}/_mcp`, token: jwt('alice') }),
    },
    {
      label: 'stdio through fenec mcp --file',
      scoped: false,
      endpoint: () => ({ transport: 'stdio', args: ['mcp', '--file', stdioFile, '--memory', 'memories', '--write'] }),
    },
    {
      label: 'stdio through fenec mcp --url',
      scoped: false,
      endpoint: () => ({
        transport: 'stdio',
        args: ['mcp', '--url', `${server.url}/_mcp`],
        env: { FENEC_TOKEN: TOKEN },
      }),
    },
  ];

  for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
    for (const { label, scoped, endpoint } of endpoints) {
      describe(`${kind} over ${label}`, () => {
        let client: McpTestClient;
        const call = (name: string, args: Record<string, unknown>) => client.callTool(name, args);
        before(async () => {
          client = await connect(kind, endpoint());
        });
        after(() => client?.close());

        if (kind === 'client 2.x') {
          it('speaks 2026-07-28, the stateless revision', () => expect(client.revision).to.equal('2026-07-28'));
        }

        it('lists every tool, each with a description and an input schema', async () => {
          const tools = await client.listTools();
          expect(tools.map((t) => t.name)).to.deep.equal(ALL_TOOLS);
          for (const tool of tools) expect(tool.description).to.be.a('string').and.not.equal('');
        });

        it("answers the seed's search call with the seed's answer, scored by BM25 over the three rows", async () => {
          const answer = ok(
            await call('search', { collection: 'docs', text: 'fox', filter: 'year >= $1', params: [2024] }),
          );
          expect(answer.count).to.equal(1);
          const { _score, ...row } = answer.rows[0];
          expect(row).to.deep.equal({
            id: 3,
            title: 'cat',
            body: 'the cat watches the fox',
            year: 2025,
            snippet: 'the cat watches the **fox**',
          });
          // fox is in 2 of the 3 rows; this row holds it once in 6 words of title and body, the rows 16 words.
          expect(_score).to.be.closeTo(bm25Term(3, 2, 1, 6, 16 / 3), 1e-9);
        });

        it('searches by vector, vectors left out unless fields names them', async () => {
          const near = ok(await call('search', { collection: 'docs', vector: [0.9, 0.1, 0], limit: 1 }));
          expect(near.rows.map((r: any) => [r.title, r.embedding])).to.deep.equal([['fox', undefined]]);
          const kept = ok(
            await call('search', {
              collection: 'docs',
              vector: [0.9, 0.1, 0],
              limit: 1,
              fields: ['title', 'embedding'],
            }),
          );
          expect(kept.rows[0]).to.deep.include({ title: 'fox', embedding: [1, 0, 0] });
        });

        it('runs a read through query, and keeps vectors only with include_vectors', async () => {
          const answer = ok(
            await call('query', {
              statement: 'get docs select title, year where year >= $1 order year',
              params: [2024],
            }),
          );
          expect(answer).to.deep.equal({
            rows: [
              { id: 2, title: 'dog', year: 2024 },
              { id: 3, title: 'cat', year: 2025 },
            ],
            count: 2,
          });
          expect(ok(await call('query', { statement: 'get docs select * where id = 1' })).rows[0]).not.to.have.property(
            'embedding',
          );
          expect(
            ok(await call('query', { statement: 'get docs where id = 1', include_vectors: true })).rows[0].embedding,
          ).to.deep.equal([1, 0, 0]);
        });

        it('lists the schema: a scoped token only what its policy reads', async () => {
          const names = ok(await call('schema', {})).collections.map((c: any) => c.name);
          expect(names).to.include.members(['docs', 'bulk']);
          if (scoped) expect(names).to.have.members(['docs', 'bulk', 'memories']);
        });

        if (scoped) {
          it("refuses a write the token's policy refuses (403)", async () => {
            const error = refusal(await call('write', { collection: 'docs', insert: { title: 'mine', year: 2030 } }));
            expect([error.code, error.status]).to.deep.equal(['forbidden', 403]);
          });
        } else {
          it('writes rows: insert, set, del — never a schema change', async () => {
            const inserted = ok(
              await call('write', { collection: 'docs', insert: { title: `by ${kind}`, year: 1999 } }),
            );
            expect(inserted.count).to.equal(1);
            expect(
              ok(
                await call('write', {
                  collection: 'docs',
                  set: { year: 1998 },
                  filter: 'id = $1',
                  params: inserted.ids,
                }),
              ).count,
            ).to.equal(1);
            expect(
              ok(
                await call('write', {
                  collection: 'docs',
                  del: true,
                  filter: 'id = $1 and year = $2',
                  params: [inserted.ids[0], 1998],
                }),
              ).count,
            ).to.equal(1);
            expect(refusal(await call('query', { statement: 'drop collection docs' })).status).to.equal(403);
          });
        }

        it("runs the seed's memory scenario through remember, recall and forget", async () => {
          const ids: number[] = [];
          for (const memory of [
            { text: 'the deploy runs on fridays', tags: ['ops'], vector: [0.9, 0.1, 0] },
            { text: 'staging is in eu-west-1', tags: ['ops'], vector: [0, 0.2, 1] },
            { text: 'the user is debugging the login page', tags: ['session'], expires_in: '10s' },
          ]) {
            const answer = ok(await call('remember', memory));
            expect(answer.count).to.equal(1);
            ids.push(answer.ids[0]);
          }
          expect(ok(await call('recall', { text: 'when do we deploy' })).rows[0].text).to.equal(
            'the deploy runs on fridays',
          );
          expect(ok(await call('recall', { text: 'which region', vector: [0, 0.1, 1] })).rows[0].text).to.equal(
            'staging is in eu-west-1',
          );
          expect(ok(await call('recall', { tags: ['session'] })).rows[0].text).to.equal(
            'the user is debugging the login page',
          );
          const latest = ok(await call('recall', {}));
          expect(latest.rows[0]).to.deep.include({ id: ids[2], text: 'the user is debugging the login page' });
          for (const id of ids) expect(ok(await call('forget', { id }))).to.deep.equal({ count: 1 });
          expect(ok(await call('recall', { tags: ['session'] })).rows.map((r: any) => r.id)).not.to.include(ids[2]);
        });

        it('refuses an argument a tool does not take (400)', async () => {
          const error = refusal(await call('search', { collection: 'docs', text: 'fox', colection: 'docs' }));
          expect([error.code, error.status]).to.deep.equal(['invalid_argument', 400]);
        });

        it("refuses a vector of another length, naming the field's (400)", async () => {
          const error = refusal(await call('search', { collection: 'docs', vector: [1, 0] }));
          expect([error.code, error.status]).to.deep.equal(['vector_length', 400]);
          expect(error.message).to.contain('vector<3>');
        });

        it('refuses a filter with a second statement, and one with a closing parenthesis (400)', async () => {
          const second = refusal(
            await call('search', {
              collection: 'docs',
              text: 'fox',
              filter: 'year >= $1; del docs where true',
              params: [0],
            }),
          );
          expect([second.code, second.status]).to.deep.equal(['multiple_statements', 400]);
          const closing = refusal(
            await call('search', { collection: 'docs', text: 'fox', filter: 'year >= $1) or (true', params: [0] }),
          );
          expect([closing.code, closing.status]).to.deep.equal(['syntax_error', 400]);
        });

        it('refuses 101 rows (413) with the rows found and a narrower call that fits', async () => {
          const error = refusal(await call('query', { statement: 'get bulk select n' }));
          expect([error.code, error.status, error.rows]).to.deep.equal(['answer_too_large', 413, 150]);
          const next = error.try as { name: string; arguments: Record<string, unknown> };
          expect(next.arguments.statement).to.equal('get bulk select n limit 100');
          expect(ok(await call(next.name, next.arguments)).count).to.equal(100);
        });

        it('refuses 65 KB (413) with the bytes, and the same search narrowed with limit and fields', async () => {
          const error = refusal(
            await call('search', { collection: 'bulk', filter: 'n < $1', params: [100], limit: 100 }),
          );
          expect([error.code, error.status]).to.deep.equal(['answer_too_large', 413]);
          expect(error.bytes).to.be.above(65 * 1024);
          const next = error.try as { name: string; arguments: Record<string, unknown> };
          expect(next.arguments).to.deep.include({
            collection: 'bulk',
            filter: 'n < $1',
            params: [100],
            fields: ['n'],
          });
          expect(ok(await call(next.name, next.arguments)).count).to.equal(100);
        });

        it('answers an unknown tool with a JSON-RPC error (-32602)', async () => {
          expect((await rpcError(call('drop_everything', {}))).code).to.equal(-32602);
        });
      });
    }

    describe(`${kind} over HTTP to a server without --mcp-write or --mcp-memory`, () => {
      let client: McpTestClient;
      before(async () => {
        client = await connect(kind, { transport: 'http', url: `${bare.url}/_mcp`, token: TOKEN });
      });
      after(() => client?.close());

      it('lists query, search and schema only', async () => {
        expect((await client.listTools()).map((t) => t.name)).to.deep.equal(['query', 'search', 'schema']);
      });

      it('answers write as a tool it does not offer (-32602), saying how it is offered', async () => {
        const error = await rpcError(client.callTool('write', { collection: 'docs', insert: { title: 'x' } }));
        expect(error.code).to.equal(-32602);
        expect(error.message).to.contain('--mcp-write');
      });
    });
  }

  // A suite of its own: mocha runs a suite's tests before its child suites, and this one reads what they did.
  describe('afterwards, the audit log', () =>
    it('holds every write, remember and forget, with the subject and never a row', () => {
      const lines = fs
        .readFileSync(auditFile, 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
      const mcp = lines.filter((l) => l.event === 'mcp');
      expect(mcp.map((l) => l.tool)).to.include.members(['write', 'remember', 'forget']);
      expect(mcp.some((l) => l.sub === 'alice' && l.tool === 'remember' && l.ok === true)).to.equal(true);
      expect(mcp.some((l) => l.tool === 'write' && l.ok === false && l.error === 'forbidden')).to.equal(true);
      expect(JSON.stringify(mcp)).not.to.contain('fridays');
      expect(lines.filter((l) => l.event === 'schema').map((l) => [l.statement, l.collection, l.who])).to.deep.include([
        'create',
        'memories',
        'server',
      ]);
    }));
});
