/**
 * A tenant node and the read-only flags: --http-read-only refuses every write on every tenant (over
 * /query and MCP, through the worker threads) and serves reads; --read-only is refused at start.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import { FENEC_SERVER, request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'tenant-read-only-token';
const SECRET = 'tenant-read-only-secret-of-32-bytes!!';
const ENV = { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET };
const TENANTS = ['acme', 'globex', 'initech'];

const tq = (node: ServerProcess, tenant: string, statement: string, token = TOKEN): Promise<Reply> =>
  request(node.url, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ statement }),
  });
const mcp = (node: ServerProcess, tenant: string, method: string, params: unknown, token = TOKEN): Promise<Reply> =>
  request(node.url, {
    method: 'POST',
    path: `/t/${tenant}/_mcp`,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });

describe('a tenant node with --http-read-only or --read-only', function () {
  this.timeout(90_000);
  const sandbox = new Sandbox();
  let data: string;

  before(async () => {
    data = path.join(sandbox.dir(), 'data');
    fs.mkdirSync(data);
    fs.writeFileSync(path.join(data, 'acme.policy'), 'notes read,write\n');
    const writer = await sandbox.startServer(['--data-dir', data, '--workers', '2'], ENV);
    for (const tenant of TENANTS) {
      expect(
        (
          await request(writer.url, {
            method: 'PUT',
            path: `/t/${tenant}`,
            headers: { authorization: `Bearer ${TOKEN}` },
          })
        ).status,
      ).to.equal(201);
      expect((await tq(writer, tenant, 'create collection notes (title text)')).status).to.equal(200);
      expect((await tq(writer, tenant, `insert into notes {title: "${tenant} note"}`)).status).to.equal(200);
    }
    await sandbox.kill(writer.child);
  });
  after(() => sandbox.cleanUp());

  it('--http-read-only: refuses every write on every tenant with read_only (403), changes nothing, and serves reads', async () => {
    const node = await sandbox.startServer(
      ['--data-dir', data, '--workers', '2', '--http-read-only', '--mcp', '--mcp-write'],
      ENV,
    );
    try {
      for (const tenant of TENANTS) {
        for (const statement of [
          'insert into notes {title: "late"}',
          'del notes where title = "x"',
          'create collection more (a text)',
          'drop collection notes',
        ]) {
          const refused = await tq(node, tenant, statement);
          expect(refused.status, `${tenant}: ${statement}`).to.equal(403);
          expect(refused.json.error.code).to.equal('read_only');
        }
        const count = await tq(node, tenant, 'get notes count');
        expect(count.status).to.equal(200);
        expect(count.json.count, tenant).to.equal(1);
      }
      // A tenant's JWT under its policy is held to the same.
      const byJwt = await tq(
        node,
        'acme',
        'insert into notes {title: "late"}',
        mintToken({ secret: SECRET, tenant: 'acme', sub: 'a', ttlSeconds: 60 }),
      );
      expect(byJwt.json.error.code).to.equal('read_only');
      // Over MCP the write tool is not offered, and a write through the query tool is refused.
      const tools = await mcp(node, 'globex', 'tools/list', {});
      expect(tools.status, tools.text).to.equal(200);
      const names = (tools.json.result.tools as { name: string }[]).map((tool) => tool.name);
      expect(names).to.include('query').and.not.include('write');
      const write = await mcp(node, 'globex', 'tools/call', {
        name: 'query',
        arguments: { statement: 'insert into notes {title: "late"}' },
      });
      expect(write.json.result.isError, write.text).to.equal(true);
      expect((await tq(node, 'globex', 'get notes count')).json.count).to.equal(1);
    } finally {
      await sandbox.kill(node.child);
    }
  });

  it('--read-only: refuses to start a tenant node, saying what to use instead, and touches no file', async () => {
    const before = fs.readdirSync(data).sort();
    const done = await sandbox.run(FENEC_SERVER, ['--port', '0', '--data-dir', data, '--read-only'], ENV);
    expect(done.code).to.equal(2);
    expect(done.stderr).to.include('--read-only').and.include('--http-read-only');
    expect(fs.readdirSync(data).sort()).to.deep.equal(before);
  });
});
