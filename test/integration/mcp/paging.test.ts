/**
 * Pages: every read tool (query, search, recall) and /query answer next_cursor when more rows follow
 * and take cursor to continue, through both official clients against real servers, over HTTP and
 * stdio. A walk of 1 000 rows, 100 at a time, with rows inserted between its pages, answers each row
 * once; cursors are refused altered, for another read, to another token, and after a restart.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../../shared/auth/token.js';
import { FenecDatabase } from '../../../node/database.js';
import { query, request, Sandbox, type ServerProcess } from '../processes.js';
import { connect, type ClientKind, type McpTestClient, type ToolResult } from './clients.js';

const TOKEN = 'paging-test-server-token';
const SECRET = 'paging-test-secret-of-at-least-32-bytes!';
const POLICY = 'items read,write\nmemories read,write where owner = $jwt.sub\n';
const ROWS = 1000;
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'omega', 'kappa', 'sigma'];

/** Row n: a group, and a body where "alpha" comes 1 to 4 times among 2 to 8 other words, so that scores differ. */
function item(n: number): { n: number; grp: number | null; body: string } {
  const words = [
    ...Array.from({ length: 1 + (n % 4) }, () => 'alpha'),
    ...Array.from({ length: 2 + (n % 7) }, (_, i) => WORDS[1 + ((n + i) % 6)]!),
  ];
  return { n, grp: n % 10 === 0 ? null : n % 7, body: words.join(' ') };
}

function ok(result: ToolResult): any {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(false);
  return result.structuredContent;
}

function refusal(result: ToolResult): any {
  expect(result.isError, JSON.stringify(result.structuredContent)).to.equal(true);
  return (result.structuredContent as any).error;
}

async function post(base: string, body: unknown, token = TOKEN) {
  return request(base, {
    method: 'POST',
    path: '/query',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** Walks pages until no next_cursor, calling `between` after each; every row's id, in order. */
async function walk(
  page: (cursor: string | undefined) => Promise<{ rows: { id: number }[]; next_cursor?: string }>,
  between: () => Promise<unknown> = async () => {},
) {
  const ids: number[] = [];
  const sizes: number[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 100; pages++) {
    const answer = await page(cursor);
    ids.push(...answer.rows.map((r) => r.id));
    sizes.push(answer.rows.length);
    if (answer.next_cursor === undefined) return { ids, sizes };
    cursor = answer.next_cursor;
    await between();
  }
  return expect.fail('the walk did not end');
}

function eachOnce(ids: number[], expected: number[]): void {
  expect(new Set(ids).size, 'no row twice').to.equal(ids.length);
  expect([...ids].sort((a, b) => a - b)).to.deep.equal(expected);
}

describe('pages: next_cursor and cursor', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let file: string;
  let dir: string;
  const original = Array.from({ length: ROWS }, (_, i) => i + 1);
  const jwt = (sub: string) => mintToken({ secret: SECRET, tenant: 'local', sub, ttlSeconds: 3600 });
  let inserted = 0;
  /** Rows inserted between pages: they match every walk here, and come after its first page. */
  const insertSome = async () => {
    const rows = Array.from({ length: 7 }, (_, i) => item(ROWS + inserted + i));
    inserted += rows.length;
    expect((await query(server.url, 'insert into items $1', [rows], TOKEN)).status).to.equal(200);
  };
  const args = () => [
    '--file',
    file,
    '--http-token',
    TOKEN,
    '--jwt-secret',
    SECRET,
    '--policy',
    path.join(dir, 'policy.txt'),
    '--mcp',
    '--mcp-memory',
    'memories',
  ];

  before(async () => {
    dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), POLICY);
    file = path.join(dir, 'paging.fenec');
    const db = FenecDatabase.open({ file, readOnly: false, program: 'test' });
    db.execute('create collection items (n int @sorted, grp int, body text @text)');
    db.execute('insert into items $1', [original.map((id) => item(id - 1))]);
    db.execute(
      'create collection memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms))',
    );
    for (let i = 0; i < 23; i++)
      db.execute('insert into memories {text: $1, owner: "ada", at: $2}', [
        `memory ${i} about alpha`,
        1_700_000_000_000 + (i % 5) * 1000,
      ]);
    db.close();
    server = await sandbox.startServer(args());
  });
  after(() => sandbox.cleanUp());

  for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
    describe(`${kind} over HTTP`, () => {
      let client: McpTestClient;
      before(async () => {
        client = await connect(kind, { transport: 'http', url: `${server.url}/_mcp`, token: TOKEN });
      });
      after(() => client?.close());

      it('query: walks 1 000 rows 100 at a time, rows inserted between pages, each row once', async () => {
        const { ids, sizes } = await walk(
          async (cursor) =>
            ok(
              await client.callTool('query', {
                statement: 'get items select n where id <= $1 limit 100',
                params: [ROWS],
                cursor,
              }),
            ),
          insertSome,
        );
        expect(sizes).to.deep.equal(Array(10).fill(100));
        eachOnce(ids, original);
        expect(ids).to.deep.equal(original);
      });

      it('query: walks in its own order (nulls first, ties by id), the order field answered only when selected', async () => {
        const { ids } = await walk(async (cursor) => {
          const answer = ok(
            await client.callTool('query', { statement: 'get items select n order grp desc, n limit 100', cursor }),
          );
          for (const row of answer.rows) expect(Object.keys(row)).to.deep.equal(['id', 'n']);
          return answer;
        }, insertSome);
        const walked = ids.filter((id) => id <= ROWS);
        eachOnce(walked, original);
        const expected = original
          .map((id) => item(id - 1))
          .sort((a, b) => (b.grp ?? -1) - (a.grp ?? -1) || a.n - b.n)
          .map((r) => r.n + 1);
        expect(walked).to.deep.equal(expected);
      });

      it('query: walks an order with ties (grp desc): tied rows by id in the direction of grp, each row once', async () => {
        const { ids } = await walk(
          async (cursor) =>
            ok(await client.callTool('query', { statement: 'get items select n order grp desc limit 100', cursor })),
          insertSome,
        );
        const walked = ids.filter((id) => id <= ROWS);
        eachOnce(walked, original);
        const grp = (id: number) => item(id - 1).grp ?? -1;
        expect(walked).to.deep.equal([...original].sort((a, b) => grp(b) - grp(a) || b - a));
      });

      it('search: walks a ranking by words ((_score, id) after the last row), each row once, rows inserted between pages', async () => {
        const scores: number[] = [];
        // The walk holds the rows there were at its first page: those inserted by the tests before it too.
        const present = Array.from({ length: ROWS + inserted }, (_, i) => i + 1);
        const { ids } = await walk(async (cursor) => {
          const answer = ok(
            await client.callTool('search', { collection: 'items', text: 'alpha', detail: 'ids', limit: 100, cursor }),
          );
          scores.push(...answer.rows.map((r: any) => r._score));
          return answer;
        }, insertSome);
        eachOnce(ids, present);
        expect(new Set(scores).size, 'scores that differ').to.be.above(5);
      });

      it('recall: pages the latest first, and a ranked recall', async () => {
        const latest = await walk(async (cursor) => ok(await client.callTool('recall', { limit: 10, cursor })));
        expect(latest.sizes).to.deep.equal([10, 10, 3]);
        eachOnce(
          latest.ids,
          Array.from({ length: 23 }, (_, i) => i + 1),
        );
        const ranked = await walk(async (cursor) =>
          ok(await client.callTool('recall', { text: 'alpha', limit: 10, cursor })),
        );
        eachOnce(
          ranked.ids,
          Array.from({ length: 23 }, (_, i) => i + 1),
        );
      });

      it('answers no next_cursor when the rows end with the page', async () => {
        const answer = ok(await client.callTool('query', { statement: 'get items where id <= 100 limit 100' }));
        expect(answer.count).to.equal(100);
        expect(answer).not.to.have.property('next_cursor');
      });

      it('a refusal past the bounds names a call with the cursor that fits, and it continues the walk', async () => {
        const first = ok(
          await client.callTool('query', {
            statement: 'get items select n where n >= $1 order n limit 10',
            params: [0],
          }),
        );
        const error = refusal(
          await client.callTool('query', {
            statement: 'get items where n >= $1 order n',
            params: [0],
            cursor: first.next_cursor,
          }),
        );
        expect([error.code, error.status]).to.deep.equal(['answer_too_large', 413]);
        expect(error.try.arguments).to.deep.include({ cursor: first.next_cursor, params: [0] });
        expect(error.try.arguments.statement).to.equal('get items where n >= $1 order n limit 100');
        const next = ok(await client.callTool(error.try.name, error.try.arguments));
        expect(next.rows.map((r: any) => r.n)).to.deep.equal(Array.from({ length: 100 }, (_, i) => i + 10));
        expect(next.next_cursor).to.be.a('string');
      });

      it('refuses a cursor altered (invalid_cursor, 400) or made for another call (cursor_mismatch, 400)', async () => {
        const first = ok(await client.callTool('search', { collection: 'items', text: 'alpha', limit: 5 }));
        const altered = `${first.next_cursor.slice(0, -3)}${first.next_cursor.endsWith('AAA') ? 'BBB' : 'AAA'}`;
        expect(
          refusal(await client.callTool('search', { collection: 'items', text: 'alpha', limit: 5, cursor: altered })),
        ).to.include({ code: 'invalid_cursor', status: 400 });
        expect(
          refusal(
            await client.callTool('search', { collection: 'items', text: 'beta', limit: 5, cursor: first.next_cursor }),
          ),
        ).to.include({ code: 'cursor_mismatch', status: 400 });
        expect(
          refusal(await client.callTool('query', { statement: 'get items limit 5', cursor: first.next_cursor })),
        ).to.include({ code: 'cursor_mismatch', status: 400 });
        // limit and the fields answered may change: a narrower call keeps its cursor.
        expect(
          ok(
            await client.callTool('search', {
              collection: 'items',
              text: 'alpha',
              limit: 3,
              detail: 'ids',
              cursor: first.next_cursor,
            }),
          ).count,
        ).to.equal(3);
      });

      it("refuses another token's cursor (foreign_cursor, 403)", async () => {
        const alice = await connect(kind, { transport: 'http', url: `${server.url}/_mcp`, token: jwt('alice') });
        const bob = await connect(kind, { transport: 'http', url: `${server.url}/_mcp`, token: jwt('bob') });
        try {
          const call = { statement: 'get items order n limit 5' };
          const first = ok(await alice.callTool('query', call));
          expect(ok(await alice.callTool('query', { ...call, cursor: first.next_cursor })).rows[0].n).to.equal(5);
          expect(refusal(await bob.callTool('query', { ...call, cursor: first.next_cursor }))).to.include({
            code: 'foreign_cursor',
            status: 403,
          });
          expect(refusal(await client.callTool('query', { ...call, cursor: first.next_cursor }))).to.include({
            code: 'foreign_cursor',
            status: 403,
          });
        } finally {
          await Promise.all([alice.close(), bob.close()]);
        }
      });
    });
  }

  describe('/query', () => {
    it('walks 1 000 rows 100 at a time with cursor in the body, rows inserted between pages, each row once', async () => {
      const { ids, sizes } = await walk(async (cursor) => {
        const reply = await post(server.url, {
          statement: 'get items where id <= $1 and n >= $2 order n desc limit $3',
          params: [ROWS, 0, 100],
          ...(cursor === undefined ? {} : { cursor }),
        });
        expect(reply.status, reply.text).to.equal(200);
        return reply.json;
      }, insertSome);
      expect(sizes).to.deep.equal(Array(10).fill(100));
      expect(ids).to.deep.equal([...original].reverse());
    });

    it('answers the codes of a bad, foreign and mismatched cursor with their statuses', async () => {
      const first = (await post(server.url, { statement: 'get items order n limit 5' })).json;
      expect(first.next_cursor).to.be.a('string');
      expect(
        (await post(server.url, { statement: 'get items order n limit 5', cursor: 'c1.nonsense.x' })).json.error.code,
      ).to.equal('invalid_cursor');
      const foreign = await post(
        server.url,
        { statement: 'get items order n limit 5', cursor: first.next_cursor },
        jwt('alice'),
      );
      expect([foreign.status, foreign.json.error.code]).to.deep.equal([403, 'foreign_cursor']);
      const other = await post(server.url, { statement: 'get items order n desc limit 5', cursor: first.next_cursor });
      expect([other.status, other.json.error.code]).to.deep.equal([400, 'cursor_mismatch']);
      const notRead = await post(server.url, { statement: 'schema items', cursor: first.next_cursor });
      expect([notRead.status, notRead.json.error.code]).to.deep.equal([400, 'bad_request']);
      const notString = await post(server.url, { statement: 'get items limit 5', cursor: 7 });
      expect([notString.status, notString.json.error.code]).to.deep.equal([400, 'bad_request']);
    });

    it('refuses a cursor made before the server started again (expired_cursor, 410)', async () => {
      const first = (await post(server.url, { statement: 'get items order n limit 5' })).json;
      await sandbox.kill(server.child);
      server = await sandbox.startServer(args());
      const stale = await post(server.url, { statement: 'get items order n limit 5', cursor: first.next_cursor });
      expect([stale.status, stale.json.error.code]).to.deep.equal([410, 'expired_cursor']);
    });
  });

  describe('over stdio (fenec mcp --file)', () => {
    it('sdk 1.x and client 2.x walk a search and a query to the end', async () => {
      const stdioFile = path.join(dir, 'stdio.fenec');
      fs.copyFileSync(file, stdioFile);
      for (const kind of ['sdk 1.x', 'client 2.x'] as ClientKind[]) {
        const client = await connect(kind, { transport: 'stdio', args: ['mcp', '--file', stdioFile] });
        try {
          const searched = await walk(async (cursor) =>
            ok(
              await client.callTool('search', {
                collection: 'items',
                text: 'alpha',
                detail: 'ids',
                limit: 100,
                cursor,
              }),
            ),
          );
          expect(searched.ids.length).to.be.at.least(ROWS);
          expect(new Set(searched.ids).size).to.equal(searched.ids.length);
          const read = await walk(async (cursor) =>
            ok(await client.callTool('query', { statement: 'get items select n limit 100', cursor })),
          );
          expect(read.ids).to.deep.equal([...read.ids].sort((a, b) => a - b));
          expect(read.ids.length).to.equal(searched.ids.length);
        } finally {
          await client.close();
        }
      }
    });
  });
});
