/**
 * Tenant quotas on a real tenant node process. At the byte quota, writes that free space pass, the
 * file shrinks after compact, and only writes that grow the file are refused. Every quota refusal,
 * over /query and over each MCP tool (the official clients), is the tool's isError result with its
 * status — never a JSON-RPC fault — and is counted on /_metrics by its quota.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connect, type ClientKind, type McpTestClient, type ToolResult } from './mcp/clients.js';
import { request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'tenant-quota-test-token';
const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau'.split(
  ' ',
);

const tq = (node: ServerProcess, tenant: string, statement: string, params: unknown[] = []): Promise<Reply> =>
  request(node.url, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ statement, params }),
  });

/** A row's text: 60 words, varied so that the text index has many terms. */
const bodyOf = (i: number): string =>
  Array.from({ length: 60 }, (_, j) => `${WORDS[(i * 7 + j) % WORDS.length]}${i % 50}`).join(' ');
/** A row as a FenecQL object literal. */
const rowOf = (i: number): string =>
  `{k: "key${i}", body: ${JSON.stringify(bodyOf(i))}, n: ${i}, v: [${(i % 7) + 1}, 2, 3, ${i % 5}]}`;

/** Inserts rows until the quota refuses one, in batches, then one by one: the file is full to the page. */
async function fill(node: ServerProcess, tenant: string): Promise<number> {
  let rows = 0;
  for (const batch of [25, 1]) {
    for (;;) {
      const reply = await tq(
        node,
        tenant,
        `insert into docs [${Array.from({ length: batch }, (_, j) => rowOf(rows + j)).join(', ')}]`,
      );
      if (reply.status !== 200) {
        expect(reply.status, reply.text).to.equal(507);
        expect(reply.json.error.code).to.equal('storage_full');
        break;
      }
      rows += batch;
    }
  }
  return rows;
}

const DOCS = 'create collection docs (k text unique, body text @text, n int @sorted, v vector<4> @hnsw(cosine))';

const admin = (node: ServerProcess, tenant: string, quotas: Record<string, number> = {}): Promise<Reply> =>
  request(node.url, {
    method: 'PUT',
    path: `/t/${tenant}`,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(quotas),
  });

/** fenec_tenant_quota_refusals_total by quota (0 for a quota not counted yet). */
async function refusals(node: ServerProcess): Promise<Record<string, number>> {
  const text = (await request(node.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } })).text;
  const counts: Record<string, number> = { rate: 0, bytes: 0, collections: 0, rows: 0 };
  for (const [, quota, value] of text.matchAll(/^fenec_tenant_quota_refusals_total\{quota="(\w+)"\} (\d+)$/gm))
    counts[quota!] = Number(value);
  return counts;
}

/** fenec_mcp_tool_calls_total{tool, outcome}. */
async function toolCalls(node: ServerProcess, tool: string, outcome: string): Promise<number> {
  const text = (await request(node.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } })).text;
  const line = new RegExp(`^fenec_mcp_tool_calls_total\\{tool="${tool}",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(
    text,
  );
  return line === null ? 0 : Number(line[1]);
}

/** How each count moved between two readings. */
function moved(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(before).map((quota) => [quota, after[quota]! - before[quota]!]));
}

/** A tool's refusal: the isError result's error (code, status, …), never a JSON-RPC fault. */
function refusal(result: ToolResult): { code: string; status: number } & Record<string, unknown> {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(true);
  const text = result.content.find((c) => c.type === 'text')?.text;
  expect(JSON.parse(text!)).to.deep.equal(result.structuredContent);
  return (result.structuredContent as { error: { code: string; status: number } }).error;
}

function answered(result: ToolResult): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(false);
  return result.structuredContent as Record<string, unknown>;
}

describe('tenant quotas (a tenant node process)', () => {
  const sandbox = new Sandbox();
  let dir: string;
  let node: ServerProcess;

  before(async () => {
    dir = path.join(sandbox.dir(), 'data');
    node = await sandbox.startServer(
      [
        '--data-dir',
        dir,
        '--tenant-max-bytes',
        '1mb',
        '--tenant-rate',
        '10000',
        '--tenant-burst',
        '10000',
        '--mcp-write',
        '--mcp-memory',
        'memories',
      ],
      { FENEC_TOKEN: TOKEN },
    );
  });
  after(() => sandbox.cleanUp());

  it('frees space at the byte quota: del, a set that does not grow, compact; the file shrinks; only growing writes get 507', async function () {
    this.timeout(120_000);
    expect((await admin(node, 'full')).status).to.equal(201);
    expect((await tq(node, 'full', DOCS)).status).to.equal(200);
    const counted = await refusals(node);
    const rows = await fill(node, 'full');
    expect(moved(counted, await refusals(node))).to.deep.equal({ rate: 0, bytes: 2, collections: 0, rows: 0 });
    expect(rows).to.be.above(100);

    // A write that grows the file is refused, whatever its kind.
    expect((await tq(node, 'full', `insert into docs ${rowOf(rows)}`)).status).to.equal(507);
    expect(
      (await tq(node, 'full', 'insert into docs {k: "big", body: $1, n: 0}', ['x'.repeat(100_000)])).status,
    ).to.equal(507);
    expect(
      (await tq(node, 'full', 'set docs {body: $1} where k = $2', ['x'.repeat(200_000), 'key3'])).json.error.code,
    ).to.equal('storage_full');

    // Writes that free space, or rewrite it without growing, pass.
    const one = await tq(node, 'full', 'del docs where k = $1', ['key1']);
    expect(one.status, one.text).to.equal(200);
    expect(one.json.count).to.equal(1);
    const same = await tq(node, 'full', 'set docs {body: $1, n: $2} where k = $3', [
      bodyOf(2).split('').reverse().join(''),
      -2,
      'key2',
    ]);
    expect(same.status, same.text).to.equal(200);
    expect(same.json.count).to.equal(1);
    const shorter = await tq(node, 'full', 'set docs {body: "alpha beta"} where n >= $1 and n < $2', [10, 20]);
    expect(shorter.status, shorter.text).to.equal(200);
    expect(shorter.json.count).to.equal(10);
    const ten = await tq(node, 'full', 'del docs where n >= $1 and n < $2', [20, 30]);
    expect(ten.status, ten.text).to.equal(200);
    expect(ten.json.count).to.equal(10);

    // compact (one collection, then the file): it shrinks, on the disk too.
    const file = path.join(dir, 'full.fenec');
    const some = await tq(node, 'full', 'compact docs');
    expect(some.status, some.text).to.equal(200);
    expect(some.json.bytes_after).to.be.below(some.json.bytes_before);
    const all = await tq(node, 'full', 'compact');
    expect(all.status, all.text).to.equal(200);
    expect(all.json.bytes_after).to.be.at.most(some.json.bytes_after);
    expect(fs.statSync(file).size).to.equal(all.json.bytes_after);
    expect(fs.statSync(`${file}-wal`).size).to.equal(0);

    // Room again: a row that fits is taken; a write that grows past the quota is still refused.
    const fits = await tq(node, 'full', `insert into docs ${rowOf(rows)}`);
    expect(fits.status, fits.text).to.equal(200);
    const grows = await tq(node, 'full', 'insert into docs {k: "big", body: $1, n: 0}', ['x'.repeat(600_000)]);
    expect(grows.status).to.equal(507);
    expect(grows.json.error.code).to.equal('storage_full');
    expect((await tq(node, 'full', 'get docs count')).json.count).to.equal(rows - 11 + 1);
    const found = await tq(node, 'full', 'get docs match body $1 limit 1', [
      `${WORDS[(rows * 7) % WORDS.length]}${rows % 50}`,
    ]);
    expect(found.status, found.text).to.equal(200);
    expect(found.json.count).to.equal(1);
  });

  for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
    describe(`over MCP (${kind})`, () => {
      const tenant = (name: string): string => `${name}-${kind.startsWith('sdk') ? 'v1' : 'v2'}`;
      let client: McpTestClient | undefined;
      afterEach(async () => {
        await client?.close();
        client = undefined;
      });

      it('answers every tool of a tenant past its rate with its isError result (429, retry_after), counted as rate', async () => {
        const name = tenant('paced');
        expect((await admin(node, name)).status).to.equal(201);
        expect((await tq(node, name, 'create collection docs (title text @text)')).status).to.equal(200);
        expect((await tq(node, name, 'insert into docs {title: "the quick fox"}')).status).to.equal(200);
        client = await connect(kind, { transport: 'http', url: `${node.url}/t/${name}/_mcp`, token: TOKEN });
        const memory = answered(await client.callTool('remember', { text: 'the deploy runs on fridays' }));
        expect((await admin(node, name, { rate: 0 })).status).to.equal(200);

        const before = await refusals(node);
        const refusedBefore = await toolCalls(node, 'write', 'refused');
        const calls: [string, Record<string, unknown>][] = [
          ['query', { statement: 'get docs' }],
          ['search', { collection: 'docs', text: 'fox' }],
          ['schema', {}],
          ['write', { collection: 'docs', insert: { title: 'the lazy dog' } }],
          ['remember', { text: 'the build takes ten minutes' }],
          ['recall', { text: 'deploy' }],
          ['forget', { id: (memory.ids as number[])[0] }],
        ];
        for (const [tool, args] of calls) {
          const error = refusal(await client.callTool(tool, args));
          expect(error.code, tool).to.equal('quota_exceeded');
          expect(error.status, tool).to.equal(429);
          expect(error.retry_after, tool).to.be.a('number').and.at.least(1);
        }
        const refused = await tq(node, name, 'get docs count');
        expect(refused.status).to.equal(429);
        expect(moved(before, await refusals(node))).to.deep.equal({ rate: 8, bytes: 0, collections: 0, rows: 0 });
        expect(await toolCalls(node, 'write', 'refused')).to.equal(refusedBefore + 1);
        // Nothing ran: the paused tenant's rows are as they were.
        expect((await admin(node, name, { rate: 1000, burst: 1000 })).status).to.equal(200);
        expect((await tq(node, name, 'get docs count')).json.count).to.equal(1);
        expect((await tq(node, name, 'get memories count')).json.count).to.equal(1);
      });

      it('answers write and remember at the byte quota with their isError result (507 storage_full); forget and a del pass', async function () {
        this.timeout(120_000);
        const name = tenant('filled');
        expect((await admin(node, name)).status).to.equal(201);
        expect((await tq(node, name, DOCS)).status).to.equal(200);
        client = await connect(kind, { transport: 'http', url: `${node.url}/t/${name}/_mcp`, token: TOKEN });
        const memory = answered(await client.callTool('remember', { text: 'the deploy runs on fridays' }));
        const rows = await fill(node, name);

        const before = await refusals(node);
        const write = refusal(
          await client.callTool('write', { collection: 'docs', insert: { k: 'one more', body: 'x'.repeat(100_000) } }),
        );
        expect(write).to.include({ code: 'storage_full', status: 507 });
        const remember = refusal(await client.callTool('remember', { text: 'y'.repeat(100_000) }));
        expect(remember).to.include({ code: 'storage_full', status: 507 });
        expect(moved(before, await refusals(node))).to.deep.equal({ rate: 0, bytes: 2, collections: 0, rows: 0 });

        expect(answered(await client.callTool('forget', { id: (memory.ids as number[])[0] })).count).to.equal(1);
        expect(
          answered(
            await client.callTool('write', { collection: 'docs', del: true, filter: 'k = $1', params: ['key3'] }),
          ).count,
        ).to.equal(1);
        expect(
          answered(
            await client.callTool('write', { collection: 'docs', set: { n: -4 }, filter: 'k = $1', params: ['key4'] }),
          ).count,
        ).to.equal(1);
        expect((await tq(node, name, 'get docs count')).json.count).to.equal(rows - 1);
      });

      it('answers a row or collection past its quota with the isError result (429), counted as rows or collections, as over /query', async () => {
        const name = tenant('counted');
        expect((await admin(node, name, { maxRows: 3, maxCollections: 1 })).status).to.equal(201);
        const before = await refusals(node);
        expect((await tq(node, name, 'create collection docs (title text)')).status).to.equal(200);
        const second = await tq(node, name, 'create collection others (title text)');
        expect(second.status).to.equal(429);
        client = await connect(kind, { transport: 'http', url: `${node.url}/t/${name}/_mcp`, token: TOKEN });
        // remember makes the memory collection at the first memory: one collection too many.
        expect(refusal(await client.callTool('remember', { text: 'the deploy runs on fridays' }))).to.include({
          code: 'quota_exceeded',
          status: 429,
        });
        expect(moved(before, await refusals(node))).to.deep.equal({ rate: 0, bytes: 0, collections: 2, rows: 0 });

        expect(
          answered(
            await client.callTool('write', {
              collection: 'docs',
              insert: [{ title: 'a' }, { title: 'b' }, { title: 'c' }],
            }),
          ).count,
        ).to.equal(3);
        expect(refusal(await client.callTool('write', { collection: 'docs', insert: { title: 'd' } }))).to.include({
          code: 'quota_exceeded',
          status: 429,
        });
        const over = await tq(node, name, 'insert into docs {title: "e"}');
        expect(over.status).to.equal(429);
        expect(moved(before, await refusals(node))).to.deep.equal({ rate: 0, bytes: 0, collections: 2, rows: 2 });
      });
    });
  }
});
