/**
 * Bulk writes through the real server: `insert into C $1` over HTTP, under a token's policy and a
 * tenant's quotas, and MCP `write` with an array through the official client.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import { connect, type McpTestClient, type ToolResult } from './mcp/clients.js';
import { query, request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'bulk-test-token';
const SECRET = 'bulk-test-secret-of-at-least-32-bytes!';
const jwtOf = (sub: string): string => mintToken({ secret: SECRET, tenant: 'local', sub, ttlSeconds: 600 });

const rowsOf = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    title: `row ${from + i}`,
    body: `words of row ${from + i}`,
    year: 2000 + ((from + i) % 25),
  }));

function structured(result: ToolResult): any {
  return result.structuredContent;
}

describe('bulk writes through the server', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();

  after(() => sandbox.cleanUp());

  describe('one file', () => {
    let server: ServerProcess;
    const q = (statement: string, params: unknown[] = [], token = TOKEN): Promise<Reply> =>
      query(server.url, statement, params, token);

    before(async () => {
      const dir = sandbox.dir();
      fs.writeFileSync(path.join(dir, 'policy.txt'), 'notes read,write where owner = $jwt.sub\n');
      server = await sandbox.startServer([
        '--file',
        path.join(dir, 'bulk.fenec'),
        '--http-token',
        TOKEN,
        '--jwt-secret',
        SECRET,
        '--policy',
        path.join(dir, 'policy.txt'),
        '--mcp-write',
      ]);
      expect(
        (await q('create collection docs (title text required unique @text, body text @text, year int @sorted)'))
          .status,
      ).to.equal(200);
      expect((await q('create collection notes (text text required, owner text @hash)')).status).to.equal(200);
    });

    it('inserts 5 000 rows sent as one parameter', async () => {
      const reply = await q('insert into docs $1', [rowsOf(5000)]);
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.json.count).to.equal(5000);
      expect(reply.json.ids).to.have.length(5000);
      expect((await q('get docs count')).json.count).to.equal(5000);
      expect(
        (await q('get docs select title match body "4321"')).json.rows.map((r: { title: string }) => r.title),
      ).to.deep.equal(['row 4321']);
    });

    it('refuses a bad row in the middle with its place and commits none of the rows', async () => {
      const rows: unknown[] = rowsOf(2000, 10_000);
      rows.splice(1000, 0, { title: 'bad', year: 'not a year' });
      const reply = await q('insert into docs $1', [rows]);
      expect(reply.status).to.equal(400);
      expect(reply.json.error).to.include({ code: 'type_mismatch', row: 1000 });
      expect(reply.json.error.message).to.match(/^\$1\[1000\]: field year takes int/);
      expect((await q('get docs count')).json.count).to.equal(5000);
      const duplicate = await q('insert into docs $1', [[{ title: 'fresh' }, { title: 'row 7' }]]);
      expect([duplicate.status, duplicate.json.error.code, duplicate.json.error.row]).to.deep.equal([
        409,
        'unique_violation',
        1,
      ]);
      expect((await q('get docs where title = "fresh" count')).json.count).to.equal(0);
    });

    it("holds a token's bulk write to its policy: the pinned owner filled, a row outside it refuses them all", async () => {
      const mine = await q('insert into notes $1', [[{ text: 'a' }, { text: 'b', owner: 'ann' }]], jwtOf('ann'));
      expect(mine.status, mine.text).to.equal(200);
      const theirs = await q('insert into notes $1', [[{ text: 'c' }, { text: 'd', owner: 'bob' }]], jwtOf('ann'));
      expect([theirs.status, theirs.json.error.code]).to.deep.equal([403, 'forbidden']);
      const all = await q('get notes select text, owner order id');
      expect(all.json.rows.map((r: { text: string; owner: string }) => [r.text, r.owner])).to.deep.equal([
        ['a', 'ann'],
        ['b', 'ann'],
      ]);
      const replaced = await q('put notes $1', [[{ id: 1, text: 'A' }]], jwtOf('bob'));
      expect([replaced.status, replaced.json.error.code]).to.deep.equal([403, 'forbidden']);
    });

    it('writes an array through MCP write with the official client, all or nothing', async () => {
      const client: McpTestClient = await connect('sdk 1.x', {
        transport: 'http',
        url: `${server.url}/_mcp`,
        token: TOKEN,
      });
      try {
        const rows = rowsOf(1500, 20_000);
        const written = await client.callTool('write', { collection: 'docs', insert: rows });
        expect(written.isError, JSON.stringify(written.structuredContent)).to.equal(false);
        expect(structured(written).count).to.equal(1500);
        expect(structured(written).ids).to.have.length(1500);
        const bad = await client.callTool('write', {
          collection: 'docs',
          insert: [{ title: 'mcp ok' }, { title: 'mcp bad', colour: 'red' }],
        });
        expect(bad.isError).to.equal(true);
        expect(structured(bad).error).to.include({ code: 'unknown_field', row: 1 });
        expect((await q('get docs where title = "mcp ok" count')).json.count).to.equal(0);
        const put = await client.callTool('write', {
          collection: 'docs',
          put: [
            { id: 1, title: 'first, replaced' },
            { id: 90_000, title: 'far' },
          ],
        });
        expect(structured(put)).to.deep.equal({ count: 2, ids: [1, 90_000] });
        const tooMany = await client.callTool('write', { collection: 'docs', insert: rowsOf(2001, 30_000) });
        expect(structured(tooMany).error.code).to.equal('invalid_argument');
        expect((await q('get docs where title = "row 30000" count')).json.count).to.equal(0);
      } finally {
        await client.close();
      }
    });
  });

  describe('a tenant node', () => {
    let node: ServerProcess;
    const tq = (tenant: string, statement: string, params: unknown[] = []): Promise<Reply> =>
      request(node.url, {
        method: 'POST',
        path: `/t/${tenant}/query`,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement, params }),
      });
    const admin = (tenant: string, quotas: unknown): Promise<Reply> =>
      request(node.url, {
        method: 'PUT',
        path: `/t/${tenant}`,
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(quotas),
      });

    before(async () => {
      const dir = path.join(sandbox.dir(), 'data');
      fs.mkdirSync(dir);
      node = await sandbox.startServer(['--data-dir', dir, '--tenant-rate', '1000', '--tenant-burst', '1000'], {
        FENEC_TOKEN: TOKEN,
        FENEC_JWT_SECRET: SECRET,
      });
    });

    it("counts a bulk write's rows against maxRows, refusing one that would pass it whole", async () => {
      expect((await admin('rows', { maxRows: 100 })).status).to.be.oneOf([200, 201]);
      expect((await tq('rows', 'create collection docs (title text, body text, year int)')).status).to.equal(200);
      expect((await tq('rows', 'insert into docs $1', [rowsOf(80)])).status).to.equal(200);
      const over = await tq('rows', 'insert into docs $1', [rowsOf(21)]);
      expect([over.status, over.json.error.code]).to.deep.equal([429, 'quota_exceeded']);
      expect(over.json.error.message).to.include('21 more');
      expect((await tq('rows', 'insert into docs $1', [rowsOf(20)])).status).to.equal(200);
      expect((await tq('rows', 'get docs count')).json.count).to.equal(100);
    });

    it('refuses a bulk write past maxBytes with 507, keeping every row written before', async () => {
      expect((await admin('bytes', { maxBytes: 256 * 1024 })).status).to.be.oneOf([200, 201]);
      expect((await tq('bytes', 'create collection docs (title text, body text, year int)')).status).to.equal(200);
      const wide = (n: number, from: number) => rowsOf(n, from).map((r) => ({ ...r, body: 'x'.repeat(2000) }));
      expect((await tq('bytes', 'insert into docs $1', [wide(20, 0)])).status).to.equal(200);
      const over = await tq('bytes', 'insert into docs $1', [wide(400, 20)]);
      expect([over.status, over.json.error.code]).to.deep.equal([507, 'storage_full']);
      expect((await tq('bytes', 'get docs count')).json.count).to.equal(20);
    });
  });
});
