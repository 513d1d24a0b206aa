/**
 * Each refusal of an OAuth token, through the router (and the node, for the audience), against tokens
 * shaped as the development authorization server's, signed with its keys or with others: each is a
 * 401 (403 for a missing scope) saying why, with WWW-Authenticate, audited with its reason and the
 * tenant asked for, and counted on /_metrics by reason. Then the IdP down: cached keys keep working.
 */
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { exportSPKI, importJWK } from 'jose';
import { signingKey } from '../../../scripts/dev-oidc.js';
import { request, Sandbox } from '../processes.js';
import { accessToken } from './sign-in.js';
import { admin, authLines, counter, mcp, startStack, type Stack } from './stack.js';

describe('OAuth: each refused token', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let stack: Stack;
  let resourceA: string;

  before(async () => {
    stack = await startStack(sandbox);
    resourceA = `${stack.router.url}/t/a/_mcp`;
  });
  after(async () => {
    await sandbox.cleanUp();
    await stack?.issuer.close();
  });

  /** The token at tenant a's MCP route through the router: refused 401 invalid_token, audited and counted as `why`. */
  async function refused(token: string, why: string, message: RegExp): Promise<void> {
    const before = await counter(stack.router, 'fenec_auth_refusals_total', `why="${why}"`);
    const reply = await mcp(stack.router, '/t/a/_mcp', token, 'tools/list');
    expect(reply.status, reply.text).to.equal(401);
    expect(reply.json.error.code).to.equal('invalid_token');
    expect(reply.json.error.message).to.match(message);
    expect(reply.headers['www-authenticate']).to.equal(
      `Bearer resource_metadata="${stack.router.url}/.well-known/oauth-protected-resource/t/a/_mcp", error="invalid_token"`,
    );
    const line = authLines(stack.audit).at(-1)!;
    expect(line).to.include({ why, route: '/t/<tenant>/_mcp', tenant: 'a' });
    expect(await counter(stack.router, 'fenec_auth_refusals_total', `why="${why}"`)).to.equal(before + 1);
  }

  it('takes a token for tenant a at tenant a (the refusals below differ from it in one thing each)', async () => {
    const token = await accessToken(stack.issuer.keys[0]!, { iss: stack.issuer.issuer, aud: resourceA });
    const reply = await mcp(stack.router, '/t/a/_mcp', token, 'tools/list');
    expect(reply.status, reply.text).to.equal(200);
  });

  it("refuses another tenant's resource, on /_mcp and /query, at the router and at the node, auditing both tenants and the sub", async () => {
    const token = await accessToken(stack.issuer.keys[0]!, { iss: stack.issuer.issuer, aud: resourceA, sub: 'alice' });
    const before = await counter(stack.router, 'fenec_auth_refusals_total', 'why="wrong_audience"');
    for (const server of [stack.router, stack.node]) {
      const viaMcp = await mcp(server, '/t/b/_mcp', token, 'tools/list');
      expect(viaMcp.status).to.equal(401);
      const viaQuery = await request(server.url, {
        method: 'POST',
        path: '/t/b/query',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement: 'get memories' }),
      });
      expect(viaQuery.status).to.equal(401);
      expect(viaQuery.json.error.message).to.contain(`not ${stack.router.url}/t/b/_mcp`);
    }
    expect(authLines(stack.audit).at(-1)).to.include({
      why: 'wrong_audience',
      tenant: 'b',
      token_tenant: 'a',
      sub: 'alice',
    });
    expect(authLines(stack.nodeAudit).at(-1)).to.include({ why: 'wrong_audience', tenant: 'b', token_tenant: 'a' });
    expect(await counter(stack.router, 'fenec_auth_refusals_total', 'why="wrong_audience"')).to.equal(before + 2);
  });

  it('refuses a token with no audience', async () => {
    const token = await accessToken(stack.issuer.keys[0]!, { iss: stack.issuer.issuer });
    await refused(token, 'no_audience', /names no audience/);
  });

  it('refuses an expired token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await accessToken(stack.issuer.keys[0]!, {
      iss: stack.issuer.issuer,
      aud: resourceA,
      iat: now - 3600,
      exp: now - 600,
    });
    await refused(token, 'expired', /expired/);
  });

  it('refuses a token from an issuer this server does not trust', async () => {
    const token = await accessToken(stack.issuer.keys[0]!, { iss: 'http://127.0.0.1:1', aud: resourceA });
    await refused(token, 'wrong_issuer', /not from a trusted issuer/);
  });

  it('refuses a token signed with a key the issuer does not have', async () => {
    const token = await accessToken(await signingKey('not-the-issuers'), { iss: stack.issuer.issuer, aud: resourceA });
    await refused(token, 'unknown_key', /not-the-issuers.*not among the keys/);
  });

  it("refuses a token whose kid is the issuer's but whose signature is another key's", async () => {
    const other = await signingKey(stack.issuer.keys[0]!.kid!);
    const token = await accessToken(other, { iss: stack.issuer.issuer, aud: resourceA });
    await refused(token, 'bad_signature', /signature does not verify/);
  });

  it('refuses an unsigned token (alg none)', async () => {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const token = `${part({ alg: 'none', typ: 'at+jwt', kid: stack.issuer.keys[0]!.kid })}.${part({
      iss: stack.issuer.issuer,
      aud: resourceA,
      sub: 'x',
      exp: now + 600,
    })}.`;
    await refused(token, 'unsigned', /unsigned/);
  });

  it("refuses HS256 signed with the issuer's RSA public key as the secret", async () => {
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = stack.issuer.keys[0]!;
    const pem = await exportSPKI((await importJWK(publicJwk, 'RS256')) as Parameters<typeof exportSPKI>[0]);
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const now = Math.floor(Date.now() / 1000);
    const signed = `${part({ alg: 'HS256', typ: 'at+jwt', kid: stack.issuer.keys[0]!.kid })}.${part({
      iss: stack.issuer.issuer,
      aud: resourceA,
      sub: 'x',
      exp: now + 600,
    })}`;
    const token = `${signed}.${createHmac('sha256', pem).update(signed).digest('base64url')}`;
    await refused(token, 'wrong_algorithm', /algorithm is not one this server takes/);
  });

  it("answers a call past the token's scopes 403 insufficient_scope, naming the scope, on /_mcp and /query", async () => {
    const token = await accessToken(stack.issuer.keys[0]!, {
      iss: stack.issuer.issuer,
      aud: resourceA,
      scope: 'fenec:read',
    });
    const listed = await mcp(stack.router, '/t/a/_mcp', token, 'tools/list');
    expect(listed.json.result.tools.map((tool: { name: string }) => tool.name)).to.deep.equal([
      'query',
      'search',
      'schema',
    ]);
    const call = await mcp(stack.router, '/t/a/_mcp', token, 'tools/call', {
      name: 'remember',
      arguments: { text: 'x' },
    });
    expect(call.status, call.text).to.equal(403);
    expect(call.headers['www-authenticate']).to.equal(
      `Bearer resource_metadata="${stack.router.url}/.well-known/oauth-protected-resource/t/a/_mcp", error="insufficient_scope", scope="fenec:memory"`,
    );
    const write = await request(stack.router.url, {
      method: 'POST',
      path: '/t/a/query',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ statement: 'insert into memories {text: "x", owner: "agent-1"}' }),
    });
    expect(write.status).to.equal(403);
    expect(write.json.error.code).to.equal('insufficient_scope');
    expect(write.headers['www-authenticate']).to.contain('scope="fenec:write"');
  });

  it('revokes an OAuth subject with fenec token revoke --sub', async () => {
    const token = await accessToken(stack.issuer.keys[0]!, {
      iss: stack.issuer.issuer,
      aud: resourceA,
      sub: 'mallory',
    });
    expect((await mcp(stack.router, '/t/a/_mcp', token, 'tools/list')).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await admin(stack.router, 'POST', '/t/a/_revocations', JSON.stringify({ sub: 'mallory' }));
    const reply = await mcp(stack.router, '/t/a/_mcp', token, 'tools/list');
    expect(reply.status).to.equal(401);
    expect(reply.json.error.code).to.equal('revoked');
    expect(reply.headers['www-authenticate']).to.contain('error="invalid_token"');
  });

  it('keeps taking tokens whose key is cached when the IdP is down, and refuses a new kid quickly with why', async () => {
    const cached = await accessToken(stack.issuer.keys[0]!, { iss: stack.issuer.issuer, aud: resourceA, sub: 'bob' });
    await stack.issuer.close();
    expect((await mcp(stack.router, '/t/a/_mcp', cached, 'tools/list')).status).to.equal(200);
    const fresh = await accessToken(await signingKey('rotated-while-down'), {
      iss: stack.issuer.issuer,
      aud: resourceA,
    });
    const started = Date.now();
    const reply = await mcp(stack.router, '/t/a/_mcp', fresh, 'tools/list');
    expect(Date.now() - started).to.be.below(6_000);
    expect(reply.status).to.equal(401);
    expect(reply.json.error.message).to.contain('rotated-while-down');
  });
});
