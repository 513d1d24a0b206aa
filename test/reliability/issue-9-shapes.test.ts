/**
 * Issue 9's reproductions, points 1 to 7, as regression tests against real processes:
 *
 * 1. statements whose compile time doubled with each term (`1 + 1 + …`, nested `coalesce`, `1.5 + …`,
 *    an MCP filter, insert and set values) answer within the bound, and /_health is not held up by them;
 * 2. inputs that were merely large (nesting, chains, long patterns, float32 overflow) answer a 4xx with
 *    a code that says what to change, never `internal`, and change no data;
 * 3. numbers past float32 (vectors) or float64 (`1e308 * 10`, a 1e400 param) are refused, never stored;
 * 4. a tenant at its byte quota can free space: del, set that does not grow, compact; the file shrinks;
 * 5. MCP writes at the byte quota are tool results (`isError`, 507 `storage_full`), not protocol errors;
 * 6. a token for another tenant leaves an audit line at the node, and the router audits refused tokens;
 * 7. a vector of the wrong length is refused by MCP search and recall on an empty collection too.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { mintToken } from '../../shared/auth/token.js';
import { FENEC_ROUTER, request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';
import { ANSWER_LIMIT_MS, expectServing, HANG_MS, judged, newTally, type Tally } from './harness.js';

const TOKEN = 'issue-9-server-token';
const SECRET = 'issue-9-secret-of-at-least-32-bytes!!';
const POLICY = 'docs read\nvecs read\nmemories read,write where owner = $jwt.sub\n';

/** Codes that say what to change about a large or malformed input (too_complex once the limits land). */
const SAYS_WHAT_TO_CHANGE = [
  'too_complex',
  'invalid_number',
  'invalid_value',
  'syntax_error',
  'type_mismatch',
  'payload_too_large',
  'vector_length',
];

const post = (server: ServerProcess, pathname: string, token: string, body: unknown): Promise<Reply> =>
  request(server.url, {
    method: 'POST',
    path: pathname,
    timeoutMs: HANG_MS + ANSWER_LIMIT_MS,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const mcpCall = (name: string, args: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: args },
});

describe("reliability: issue 9's shapes", function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let reader: string;
  const tally: Tally = newTally();

  const admin = async (statement: string, params: unknown[] = []): Promise<any> => {
    const reply = await post(server, '/query', TOKEN, { statement, params });
    expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
    return reply.json;
  };
  /** One /query, held to the fuzzers' properties (no 5xx, JSON, under the bound), as `who`. */
  const judgedQuery = (statement: string, params: unknown[] | string = [], token = TOKEN): Promise<Reply> =>
    judged(tally, `${statement.slice(0, 80)}… (${statement.length} chars)`, server.url, {
      method: 'POST',
      path: '/query',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      // params as text: JSON.stringify itself overflows the stack on a value 5 000 deep.
      body:
        typeof params === 'string'
          ? `{"statement": ${JSON.stringify(statement)}, "params": ${params}}`
          : JSON.stringify({ statement, params }),
    });
  const expectRefusal = (reply: Reply, what: string): void => {
    expect(reply.status, `${what}: ${reply.text.slice(0, 300)}`).to.be.within(400, 499);
    expect(SAYS_WHAT_TO_CHANGE, `${what}: ${reply.text.slice(0, 300)}`).to.include(reply.json.error.code);
    expect(reply.json.error.message).to.be.a('string').and.not.equal('');
  };

  before(async () => {
    reader = mintToken({ secret: SECRET, tenant: 'acme', sub: 'ada', ttlSeconds: 3600 });
    const dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), POLICY);
    server = await sandbox.startServer([
      '--file',
      path.join(dir, 'shapes.fenec'),
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
      '--policy',
      path.join(dir, 'policy.txt'),
      '--mcp-write',
      '--mcp-memory',
      'memories',
    ]);
    await admin('create collection docs (title text @text, year int @sorted, f float, j json, v vector<4> @hnsw(l2))');
    await admin(
      'insert into docs [{title: "fox", year: 2, f: 1.5, j: {}, v: [1, 2, 3, 4]}, {title: "dog", year: 3, f: 2.5, j: [], v: [4, 3, 2, 1]}]',
    );
    await admin('create collection vecs (title text @text, v vector<3> @hnsw(cosine))');
    await admin(
      'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))',
    );
  });
  after(() => sandbox.cleanUp());

  describe('1. compile time linear in the statement', () => {
    const chain = (n: number, term = '1'): string => Array(n).fill(term).join(' + ');
    const nested = (n: number): string => `${'coalesce('.repeat(n)}1${', 1)'.repeat(n)}`;
    const shapes: Array<[string, string]> = [
      ['23 terms of 1 + 1, under a read-only JWT', `get docs where year = ${chain(23)} count`],
      ['1 000 terms of 1 + 1', `get docs where year = ${chain(1000)} count`],
      ['1 000 terms of 1.5 + 1.5', `get docs where f = ${chain(1000, '1.5')} count`],
      ['21 nested coalesce', `get docs where year = ${nested(21)} count`],
      ['300 nested coalesce', `get docs where year = ${nested(300)} count`],
      ['an insert value of 1 000 terms', `insert into docs {year: ${chain(1000)}}`],
      ['a set value of 1 000 terms', `set docs {year: ${chain(1000)}} where id < 0`],
    ];
    for (const [what, statement] of shapes) {
      it(`answers ${what} within ${ANSWER_LIMIT_MS} ms, never 5xx`, async () => {
        const reply = await judgedQuery(statement, [], what.includes('JWT') ? reader : TOKEN);
        if (reply.status !== 200) expectRefusal(reply, what);
      });
    }

    it(`answers an MCP search whose filter has 21 and 1 000 terms within ${ANSWER_LIMIT_MS} ms`, async () => {
      for (const n of [21, 1000]) {
        const reply = await judged(tally, `search filter of ${n} terms`, server.url, {
          method: 'POST',
          path: '/_mcp',
          headers: {
            authorization: `Bearer ${reader}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify(mcpCall('search', { collection: 'docs', text: 'fox', filter: `year = ${chain(n)}` })),
        });
        expect(reply.status).to.equal(200);
        const result = reply.json.result;
        if (result.isError) expect(SAYS_WHAT_TO_CHANGE).to.include(result.structuredContent.error.code);
      }
    });

    it('answers /_health within the bound while another request sends a 25-term statement', async () => {
      const heavy = post(server, '/query', reader, { statement: `get docs where year = ${chain(25)} count` });
      // The heavy statement is on its way first; a health check queued behind a stalled event loop waits for it.
      await new Promise((resolve) => setTimeout(resolve, 20));
      await expectServing(server.url);
      const answered = await heavy;
      expect(answered.status).to.be.below(500);
    });
  });

  describe('2. large input answers a 4xx that says what to change, never internal', () => {
    const shapes: Array<[string, () => [string, unknown[] | string]]> = [
      ['979 nested parentheses', () => [`get docs where ${'('.repeat(979)}year = 1${')'.repeat(979)}`, []]],
      ['2 000 nested parentheses', () => [`get docs where ${'('.repeat(2000)}year = 1${')'.repeat(2000)}`, []]],
      ['a not chain of 497', () => [`get docs where ${'not '.repeat(497)}year = 1`, []]],
      ['a not chain of 2 000', () => [`get docs where ${'not '.repeat(2000)}year = 1`, []]],
      ['an or chain of 999 terms', () => [`get docs where ${Array(999).fill('year = 1').join(' or ')}`, []]],
      ['an and chain of 2 000 terms', () => [`get docs where ${Array(2000).fill('year = 1').join(' and ')}`, []]],
      ['1 000 unary minuses', () => [`get docs where year = ${'- '.repeat(1000)}1`, []]],
      [
        'nested array literals 1 958 deep in a json field',
        () => [`insert into docs {j: ${'['.repeat(1958)}${']'.repeat(1958)}}`, []],
      ],
      ['nested array literals 4 000 deep', () => [`insert into docs {j: ${'['.repeat(4000)}${']'.repeat(4000)}}`, []]],
      [
        'nested object literals 1 582 deep',
        () => [`insert into docs {j: ${'{a: '.repeat(1582)}1${'}'.repeat(1582)}}`, []],
      ],
      [
        'a nested JSON parameter 4 111 deep into a json field',
        () => ['insert into docs {j: $1}', `[${'['.repeat(4111)}${']'.repeat(4111)}]`],
      ],
      [
        'a nested JSON parameter 5 000 deep',
        () => ['insert into docs {j: $1}', `[${'['.repeat(5000)}${']'.repeat(5000)}]`],
      ],
      [
        'a nested JSON parameter 100 000 deep',
        () => ['insert into docs {j: $1}', `[${'['.repeat(100_000)}${']'.repeat(100_000)}]`],
      ],
      ['a like pattern of 50 001 characters', () => [`get docs where title like "${'%a'.repeat(25_001)}"`, []]],
      ['a vector component past float32 in near', () => ['get docs near v [3.5e38, 1, 1, 1] limit 1', []]],
    ];
    // A parser may take a shape of the size, or refuse it past its limit; never a fault.
    for (const [what, shape] of shapes) {
      it(`answers ${what} with a 4xx that says what to change (or takes it), never a 5xx`, async () => {
        const [statement, params] = shape();
        const before = (await admin('get docs count')).count;
        const reply = await judgedQuery(statement, params);
        if (reply.status === 200) return;
        expectRefusal(reply, what);
        expect((await admin('get docs count')).count).to.equal(before);
      });
    }
  });

  describe('3. non-finite numbers refused at the door, never stored', () => {
    const shapes: Array<[string, string]> = [
      ['a vector component of 1e39 in an insert', 'insert into docs {v: [1e39, 1, 1, 1]}'],
      ['1e308 * 10 in an insert', 'insert into docs {f: 1e308 * 10}'],
      ['1e308 * 10 in a set', 'set docs {f: 1e308 * 10} where true'],
      ['1e309 written as a literal', 'insert into docs {f: 1e309}'],
    ];
    for (const [what, statement] of shapes) {
      it(`refuses ${what} (400), storing nothing`, async () => {
        const before = await admin('get docs select * order id limit 100');
        const reply = await judgedQuery(statement);
        expectRefusal(reply, what);
        expect(await admin('get docs select * order id limit 100')).to.deep.equal(before);
        expect((await admin('get docs where f > 1e308 count')).count).to.equal(0);
      });
    }

    it('refuses a parameter of 1e400 (Infinity once the body is parsed)', async () => {
      const before = (await admin('get docs count')).count;
      const reply = await judged(tally, '1e400 param', server.url, {
        method: 'POST',
        path: '/query',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: '{"statement": "insert into docs {f: $1}", "params": [1e400]}',
      });
      expectRefusal(reply, 'a 1e400 param');
      expect((await admin('get docs count')).count).to.equal(before);
    });
  });

  describe('7. a vector of the wrong length is refused before the data is read', () => {
    it('MCP search on an empty vector<3> collection answers vector_length, as /query does', async () => {
      const tool = await post(server, '/_mcp', TOKEN, mcpCall('search', { collection: 'vecs', vector: [1, 2] }));
      expect(tool.json.result.isError, tool.text).to.equal(true);
      expect(tool.json.result.structuredContent.error.code).to.equal('vector_length');
      const direct = await post(server, '/query', TOKEN, { statement: 'get vecs near v [1, 2] limit 5' });
      expect(direct.json.error.code).to.equal('vector_length');
    });

    it('MCP recall on an empty memory collection answers vector_length, for the server token and a scoped JWT', async () => {
      for (const token of [TOKEN, reader]) {
        const tool = await post(server, '/_mcp', token, mcpCall('recall', { vector: [1, 2] }));
        expect(tool.json.result.isError, tool.text).to.equal(true);
        expect(tool.json.result.structuredContent.error.code).to.equal('vector_length');
      }
    });
  });
});

describe("reliability: issue 9's shapes on a tenant node and a router", function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let node: ServerProcess;
  let dir: string;
  let nodeAudit: string;
  const tq = (tenant: string, statement: string, token = TOKEN): Promise<Reply> =>
    post(node, `/t/${tenant}/query`, token, { statement });

  before(async () => {
    dir = sandbox.dir();
    nodeAudit = path.join(dir, 'node-audit.log');
    fs.mkdirSync(path.join(dir, 'data'));
    node = await sandbox.startServer([
      '--data-dir',
      path.join(dir, 'data'),
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
      '--audit',
      nodeAudit,
      '--mcp-write',
      '--mcp-memory',
      'memories',
      '--tenant-rate',
      '10000',
      '--tenant-burst',
      '10000',
    ]);
  });
  after(() => sandbox.cleanUp());

  /** A row with many distinct words, a unique key, an indexed number and a vector: every index grows with it. */
  const rowOf = (k: number, words = 60): Record<string, unknown> => ({
    k,
    key: `key${k}`,
    body: Array.from({ length: words }, (_, j) => `w${(k * 7 + j) % 97}x${k % 50}`).join(' '),
    v: [(k % 7) + 1, 2, 3, k % 5],
  });

  /** A tenant filled to the brim of a byte quota of `maxBytes`: batches, then single rows, each until refused. */
  /** Waits (bounded) until the schema says no index of the tenant is building or has rows pending. */
  async function indexAtRest(name: string): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const fields = (
        (await tq(name, 'schema')).json.collections as {
          fields: { index?: { pending: number; building: boolean } }[];
        }[]
      ).flatMap((c) => c.fields);
      if (fields.every((field) => field.index === undefined || (!field.index.building && field.index.pending === 0)))
        return;
      if (Date.now() > deadline) throw new Error(`tenant ${name}'s index was still at work after 20 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function fullTenant(name: string, maxBytes: number): Promise<void> {
    expect(
      (
        await request(node.url, {
          method: 'PUT',
          path: `/t/${name}`,
          headers: { authorization: `Bearer ${TOKEN}` },
          body: JSON.stringify({ maxBytes }),
        })
      ).status,
    ).to.equal(201);
    expect(
      (
        await tq(
          name,
          'create collection f (k int @sorted, key text unique, body text @text, v vector<4> @hnsw(cosine))',
        )
      ).status,
    ).to.equal(200);
    let k = 0;
    for (const rows of [25, 1]) {
      for (let tries = 0; ; tries += 1) {
        if (tries === 500) throw new Error(`tenant ${name} never reached its quota of ${maxBytes} bytes`);
        const batch = [...Array(rows).keys()].map(() => rowOf((k += 1)));
        const reply = await tq(name, `insert into f ${JSON.stringify(batch)}`);
        if (reply.status === 507) break;
        expect(reply.status, reply.text).to.equal(200);
      }
    }
  }

  describe('4. a tenant at its byte quota can free space', () => {
    it('takes del, a set that does not grow the row, and compact; the file shrinks; writes that grow it stay refused', async () => {
      await fullTenant('full', 256 * 1024);
      const file = path.join(dir, 'data', 'full.fenec');
      const grow = await tq('full', `insert into f ${JSON.stringify([...Array(25).keys()].map((k) => rowOf(-1 - k)))}`);
      expect(grow.status, grow.text).to.equal(507);
      expect(grow.json.error.code).to.equal('storage_full');
      for (const statement of [
        'del f where k = 1',
        'del f where k >= 2 and k <= 11',
        'set f {body: "short"} where k = 12',
        'compact f',
        'compact',
      ]) {
        const reply = await tq('full', statement);
        expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
      }
      // compact rebuilds the vector index in the background, and its snapshot lands in the file when
      // the build ends: sizes are compared with the index at rest, not in the middle of that write.
      // What the tenant holds on disk is its file and its write-ahead log: committed pages wait in the
      // log until a checkpoint, so the file alone can be smaller before compact than after it.
      const onDisk = (): number =>
        fs.statSync(file).size + (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0);
      await indexAtRest('full');
      const sizeBefore = onDisk();
      await tq('full', 'del f where k >= 12 and k < 40');
      await indexAtRest('full');
      const compacted = await tq('full', 'compact f');
      expect(compacted.status, compacted.text).to.equal(200);
      expect(compacted.json.bytes_after).to.be.below(compacted.json.bytes_before);
      await indexAtRest('full');
      expect(onDisk()).to.be.below(sizeBefore);
    });
  });

  describe('5. MCP at the byte quota answers a tool result, not a protocol error', () => {
    it('write and remember at the quota are isError results with 507 storage_full', async () => {
      await fullTenant('fullmcp', 256 * 1024);
      const calls = [
        mcpCall('write', { collection: 'f', insert: [...Array(25).keys()].map((k) => rowOf(-1 - k)) }),
        mcpCall('remember', { text: 'z'.repeat(40_000) }),
      ];
      for (const call of calls) {
        const reply = await post(node, '/t/fullmcp/_mcp', TOKEN, call);
        expect(reply.status, reply.text).to.equal(200);
        expect(reply.json.error, reply.text).to.equal(undefined);
        expect(reply.json.result.isError, reply.text).to.equal(true);
        expect(reply.json.result.structuredContent.error).to.include({ code: 'storage_full', status: 507 });
      }
    });
  });

  describe('6. an audit line for every refused token, at the node and at the router', () => {
    const auditLines = (file: string): Array<Record<string, unknown>> =>
      fs.existsSync(file)
        ? fs
            .readFileSync(file, 'utf8')
            .split('\n')
            .filter((l) => l !== '')
            .map((l) => JSON.parse(l) as Record<string, unknown>)
        : [];

    it('writes one when a tenant-A token is used on the node for tenant B (wrong_tenant)', async () => {
      for (const tenant of ['alpha', 'beta'])
        await request(node.url, { method: 'PUT', path: `/t/${tenant}`, headers: { authorization: `Bearer ${TOKEN}` } });
      const before = auditLines(nodeAudit).length;
      const reply = await tq(
        'beta',
        'get notes',
        mintToken({ secret: SECRET, tenant: 'alpha', sub: 'ada', ttlSeconds: 600 }),
      );
      expect(reply.status).to.equal(403);
      expect(reply.json.error.code).to.equal('wrong_tenant');
      const lines = auditLines(nodeAudit).slice(before);
      expect(lines, JSON.stringify(lines)).to.have.length(1);
      expect(lines[0]!.event).to.equal('auth');
      expect(JSON.stringify(lines[0])).to.include('wrong_tenant');
    });

    it("fenec-router --audit writes one for a forged token and one for another tenant's", async () => {
      const routerAudit = path.join(dir, 'router-audit.log');
      const router = await sandbox.startProgram(FENEC_ROUTER, [
        '--port',
        '0',
        '--nodes',
        `a=${node.url}`,
        '--http-token',
        TOKEN,
        '--jwt-secret',
        SECRET,
        '--audit',
        routerAudit,
      ]);
      const forged = await post(
        router,
        '/t/alpha/query',
        `${mintToken({ secret: SECRET, tenant: 'alpha', sub: 'ada', ttlSeconds: 600 })}x`,
        { statement: 'get notes' },
      );
      expect(forged.status).to.equal(401);
      const wrong = await post(
        router,
        '/t/beta/query',
        mintToken({ secret: SECRET, tenant: 'alpha', sub: 'ada', ttlSeconds: 600 }),
        { statement: 'get notes' },
      );
      expect(wrong.status).to.equal(403);
      const lines = auditLines(routerAudit);
      expect(
        lines.map((l) => l.event),
        JSON.stringify(lines),
      ).to.deep.equal(['auth', 'auth']);
      expect(JSON.stringify(lines[1])).to.include('wrong_tenant');
    });
  });
});
