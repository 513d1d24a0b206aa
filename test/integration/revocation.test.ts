/**
 * `fenec token revoke`: a token revoked by its jti, or a sub's tokens, is refused 401 `revoked` over
 * /query and /_mcp at once, at the server and — hosted — through the router and at the tenant's node;
 * the revocation is kept in the file (it outlives a restart, and a --read-only server beside the writer
 * sees it within a second), and it is audited. Only the server's token revokes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { mintToken } from '../../shared/auth/token.js';
import { FENEC, FENEC_ROUTER, query, request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'revocation-server-token';
const SECRET = 'a-revocation-secret-of-32-bytes-or-more';
const POLICY = 'notes read,write\n';

const mcpList = (base: string, token: string, prefix = ''): Promise<Reply> =>
  request(base, {
    method: 'POST',
    path: `${prefix}/_mcp`,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  });

function expectRevoked(reply: Reply): void {
  expect(reply.status, reply.text).to.equal(401);
  expect(reply.json.error.code).to.equal('revoked');
}

describe('revoking a token', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let dir: string;
  let file: string;
  let audit: string;
  let server: ServerProcess;
  const serverArgs = (): string[] => [
    '--file',
    file,
    '--http-token',
    TOKEN,
    '--jwt-secret',
    SECRET,
    '--policy',
    path.join(dir, 'policy.txt'),
    '--audit',
    audit,
    '--mcp',
  ];
  const revoke = (args: string[], url: string, token = TOKEN) =>
    sandbox.run(FENEC, ['token', 'revoke', ...args, '--url', url], { FENEC_TOKEN: token });

  before(async () => {
    dir = sandbox.dir();
    file = path.join(dir, 'notes.fenec');
    audit = path.join(dir, 'audit.log');
    fs.writeFileSync(path.join(dir, 'policy.txt'), POLICY);
    server = await sandbox.startServer(serverArgs());
    expect((await query(server.url, 'create collection notes (title text)', [], TOKEN)).status).to.equal(200);
  });

  after(() => sandbox.cleanUp());

  it("mints a one-file server's token without --tenant, each with a jti of its own", async () => {
    const [a, b] = await Promise.all(
      [1, 2].map(() => sandbox.run(FENEC, ['token', '--sub', 'dee', '--ttl', '1h'], { FENEC_JWT_SECRET: SECRET })),
    );
    const claims = [a!, b!].map((minted) => {
      expect(minted.code, minted.stderr).to.equal(0);
      return jwt.verify(minted.stdout.trim(), SECRET) as jwt.JwtPayload;
    });
    expect(claims[0]).to.not.have.property('tenant');
    expect(claims[0]!.jti).to.match(/^[0-9a-f]{32}$/);
    expect(claims[1]!.jti).to.not.equal(claims[0]!.jti);
    expect((await query(server.url, 'get notes', [], a!.stdout.trim())).status).to.equal(200);
  });

  it("refuses a token revoked by its jti at once, over /query and /_mcp, and takes the holder's other tokens", async () => {
    const leaked = mintToken({ secret: SECRET, sub: 'agent-1', ttlSeconds: 600 });
    const other = mintToken({ secret: SECRET, sub: 'agent-1', ttlSeconds: 600 });
    expect((await query(server.url, 'get notes', [], leaked)).status).to.equal(200);
    const done = await revoke([(jwt.decode(leaked) as jwt.JwtPayload).jti!], server.url);
    expect(done.code, done.stderr).to.equal(0);
    expect(JSON.parse(done.stdout)).to.deep.include({ created: true });
    // The very next request: no delay at the server that keeps the list.
    expectRevoked(await query(server.url, 'get notes', [], leaked));
    expectRevoked(await mcpList(server.url, leaked));
    expect((await query(server.url, 'get notes', [], other)).status).to.equal(200);
    expect((await mcpList(server.url, other)).status).to.equal(200);
    const again = await revoke([(jwt.decode(leaked) as jwt.JwtPayload).jti!], server.url);
    expect(JSON.parse(again.stdout)).to.deep.include({ created: false });
  });

  it("revokes a sub's tokens issued until then, and takes one minted after", async () => {
    const before = [0, 1].map(() => mintToken({ secret: SECRET, sub: 'agent-2', ttlSeconds: 600 }));
    const bystander = mintToken({ secret: SECRET, sub: 'agent-3', ttlSeconds: 600 });
    const done = await revoke(['--sub', 'agent-2'], server.url);
    expect(done.code, done.stderr).to.equal(0);
    for (const token of before) expectRevoked(await query(server.url, 'get notes', [], token));
    expect((await query(server.url, 'get notes', [], bystander)).status).to.equal(200);
    // Issued in a later second than the revocation's.
    const after = mintToken({ secret: SECRET, sub: 'agent-2', ttlSeconds: 600, now: Date.now() + 2000 });
    expect((await query(server.url, 'get notes', [], after)).status).to.equal(200);
  });

  it('takes revocations from the server token only, and refuses a malformed one changing nothing', async () => {
    const agent = mintToken({ secret: SECRET, sub: 'agent-4', ttlSeconds: 600 });
    const byAgent = await revoke(['--sub', 'agent-4'], server.url, agent);
    expect(byAgent.code).to.equal(1);
    expect(JSON.parse(byAgent.stderr).error.code).to.equal('invalid_token');
    for (const body of [
      '{"jti": 7}',
      '{"jti": "a", "sub": "b"}',
      '{"kid": "x"}',
      '[]',
      'not json',
      `{"sub": "${'x'.repeat(600)}"}`,
    ]) {
      const reply = await request(server.url, {
        method: 'POST',
        path: '/_revocations',
        headers: { authorization: `Bearer ${TOKEN}` },
        body,
      });
      expect(reply.status, body).to.equal(400);
      expect(reply.json.error.code, body).to.be.oneOf(['bad_json', 'bad_request']);
    }
    expect((await query(server.url, 'get notes', [], agent)).status).to.equal(200);
    const usage = await sandbox.run(FENEC, ['token', 'revoke', 'some-jti', '--sub', 'x', '--url', server.url], {
      FENEC_TOKEN: TOKEN,
    });
    expect(usage.code).to.equal(2);
  });

  it('audits each revocation and each revoked token refused, never the token', async () => {
    const lines = fs
      .readFileSync(audit, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const revokes = lines.filter((line) => line.event === 'revoke');
    expect(revokes.map((line) => [line.kind, line.created])).to.deep.equal([
      ['jti', true],
      ['jti', false],
      ['sub', true],
    ]);
    expect(revokes[2]).to.include({ value: 'agent-2', tenant: null, who: 'server' });
    expect(lines.filter((line) => line.event === 'auth' && line.why === 'revoked').length).to.be.at.least(4);
    expect(fs.readFileSync(audit, 'utf8')).to.not.include('eyJ');
  });

  it('keeps the revocations in the file: a restart refuses them still, and a --read-only server beside the writer within a second', async () => {
    const revokedSub = mintToken({ secret: SECRET, sub: 'agent-2', ttlSeconds: 600, now: Date.now() - 60_000 });
    const listed = await request(server.url, { path: '/_revocations', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(listed.json.revocations.map((r: Record<string, string>) => r.sub ?? 'jti')).to.have.members([
      'agent-2',
      'jti',
    ]);
    await sandbox.kill(server.child);
    server = await sandbox.startServer(serverArgs());
    expectRevoked(await query(server.url, 'get notes', [], revokedSub));

    const reader = await sandbox.startServer([
      '--file',
      file,
      '--read-only',
      '--jwt-secret',
      SECRET,
      '--policy',
      path.join(dir, 'policy.txt'),
    ]);
    const late = mintToken({ secret: SECRET, sub: 'agent-5', ttlSeconds: 600 });
    expect((await query(reader.url, 'get notes', [], late)).status).to.equal(200);
    const done = await revoke(['--sub', 'agent-5'], server.url);
    expect(done.code, done.stderr).to.equal(0);
    const revokedAt = Date.now();
    let reply: Reply;
    do reply = await query(reader.url, 'get notes', [], late);
    while (reply.status === 200 && Date.now() - revokedAt < 1000);
    expectRevoked(reply);
    const refused = await request(reader.url, {
      method: 'POST',
      path: '/_revocations',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{"sub": "x"}',
    });
    expect(refused.status).to.be.oneOf([401, 403]);
  });

  it("revokes a tenant's token through the router: refused there and at the tenant's node, after a restart of the node too", async () => {
    const root = sandbox.dir();
    fs.writeFileSync(path.join(root, 'policy.txt'), POLICY);
    const env = { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET };
    const nodeArgs = ['--data-dir', path.join(root, 'a'), '--policy', path.join(root, 'policy.txt'), '--mcp'];
    let node = await sandbox.startServer(nodeArgs, env);
    const router = await sandbox.startProgram(FENEC_ROUTER, ['--port', '0', '--nodes', `a=${node.url}`], env);
    expect(
      (
        await request(router.url, {
          method: 'PUT',
          path: '/t/acme',
          headers: { authorization: `Bearer ${TOKEN}` },
          body: '{}',
        })
      ).status,
    ).to.equal(201);
    const post = (base: string, token: string): Promise<Reply> =>
      request(base, {
        method: 'POST',
        path: '/t/acme/query',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement: 'schema' }),
      });
    const minted = await sandbox.run(FENEC, ['token', '--tenant', 'acme', '--sub', 'bot'], {
      FENEC_JWT_SECRET: SECRET,
    });
    const agent = minted.stdout.trim();
    expect((await post(router.url, agent)).status).to.equal(200);

    const withoutTenant = await revoke(['--sub', 'bot'], router.url);
    expect(withoutTenant.code).to.equal(1);
    expect(withoutTenant.stderr).to.include('--tenant');
    const done = await sandbox.run(
      FENEC,
      ['token', 'revoke', (jwt.decode(agent) as jwt.JwtPayload).jti!, '--tenant', 'acme', '--url', router.url],
      { FENEC_TOKEN: TOKEN },
    );
    expect(done.code, done.stderr).to.equal(0);
    expectRevoked(await post(router.url, agent));
    expectRevoked(await post(node.url, agent));
    expectRevoked(await mcpList(router.url, agent, '/t/acme'));

    await sandbox.kill(node.child);
    node = await sandbox.startServer(['--port', new URL(node.url).port, ...nodeArgs], env);
    expectRevoked(await post(router.url, agent));
    const fresh = mintToken({ secret: SECRET, tenant: 'acme', sub: 'bot', ttlSeconds: 600 });
    expect((await post(router.url, fresh)).status).to.equal(200);
  });
});
