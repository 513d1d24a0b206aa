/**
 * The whole sign-in, as an MCP client does it against a hosted tenant: the official MCP SDK client,
 * told only the URL, is refused 401 with where the metadata is, reads the router's RFC 9728
 * metadata, registers itself at the authorization server (oidc-provider), signs in with the code flow
 * and PKCE (the test answers the sign-in page over HTTP as a browser would), gets a JWT access token
 * for tenant a's resource, and lists and calls tools that reach the node.
 */
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { decodeJwt } from 'jose';
import { request, Sandbox } from '../processes.js';
import { MemoryProvider, signIn } from './sign-in.js';
import { admin, mcp, startStack, type Stack } from './stack.js';

describe('OAuth: an MCP client signs in through the router', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let stack: Stack;

  before(async () => {
    stack = await startStack(sandbox);
  });
  after(async () => {
    await sandbox.cleanUp();
    await stack?.issuer.close();
  });

  it('answers a request without a token 401 with WWW-Authenticate naming the tenant resource metadata', async () => {
    const reply = await request(stack.router.url, { method: 'POST', path: '/t/a/_mcp', body: '{}' });
    expect(reply.status).to.equal(401);
    expect(reply.headers['www-authenticate']).to.equal(
      `Bearer resource_metadata="${stack.router.url}/.well-known/oauth-protected-resource/t/a/_mcp"`,
    );
    const query = await request(stack.router.url, { method: 'POST', path: '/t/a/query', body: '{}' });
    expect(query.headers['www-authenticate']).to.contain('resource_metadata=');
  });

  it('serves RFC 9728 metadata for a tenant, and a 404 that names no tenant for one that does not exist', async () => {
    const reply = await request(stack.router.url, { path: '/.well-known/oauth-protected-resource/t/a/_mcp' });
    expect(reply.status).to.equal(200);
    expect(reply.json).to.deep.include({
      resource: `${stack.router.url}/t/a/_mcp`,
      authorization_servers: [stack.issuer.issuer],
      scopes_supported: ['fenec:read', 'fenec:memory', 'fenec:write'],
      bearer_methods_supported: ['header'],
    });
    const atNode = await request(stack.node.url, { path: '/.well-known/oauth-protected-resource/t/a/_mcp' });
    expect(atNode.json.resource).to.equal(`${stack.router.url}/t/a/_mcp`);
    const missing = await request(stack.router.url, { path: '/.well-known/oauth-protected-resource/t/nobody/_mcp' });
    expect(missing.status).to.equal(404);
    expect(missing.text).not.to.match(/\b(a|b)\b.*tenant|tenants? (a|b)\b/);
    expect(missing.json.error.message).to.equal('no such tenant on this server');
  });

  it('signs in with the MCP SDK (registration, code flow with PKCE, resource indicator) and calls tools on the node', async () => {
    const url = new URL(`${stack.router.url}/t/a/_mcp`);
    const provider = new MemoryProvider();
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    const client = new Client({ name: 'oauth-test', version: '1.0.0' });
    let refused: unknown;
    await client.connect(first).catch((err: unknown) => (refused = err));
    expect(refused).to.be.instanceOf(UnauthorizedError);
    expect(provider.authorization?.searchParams.get('resource')).to.equal(url.href);
    expect(provider.authorization?.searchParams.get('code_challenge_method')).to.equal('S256');
    const code = await signIn(provider.authorization!, provider.redirectUrl);
    await first.finishAuth(code);
    const token = provider.tokens()!.access_token;
    const claims = decodeJwt(token);
    expect(claims.aud).to.equal(url.href);
    expect(claims.iss).to.equal(stack.issuer.issuer);

    const signedIn = new Client({ name: 'oauth-test', version: '1.0.0' });
    await signedIn.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    const { tools } = await signedIn.listTools();
    expect(tools.map((tool) => tool.name)).to.include.members(['query', 'remember', 'recall', 'write']);
    const remembered = await signedIn.callTool({ name: 'remember', arguments: { text: 'the sky is green here' } });
    expect(remembered.isError).to.equal(false);
    const recalled = await signedIn.callTool({ name: 'recall', arguments: { text: 'sky' } });
    expect(JSON.stringify(recalled.structuredContent)).to.contain('the sky is green here');
    await signedIn.close();

    // The row policy holds the signed-in user to its own memories: $jwt.sub is the token's sub.
    const rows = await admin(stack.router, 'POST', '/t/a/query', JSON.stringify({ statement: 'get memories' }));
    expect(rows.json.rows.map((row: { owner: string }) => row.owner)).to.deep.equal([claims.sub]);
    // The same token is refused at tenant b, by the router and by the node.
    for (const server of [stack.router, stack.node]) {
      const other = await mcp(server, '/t/b/_mcp', token, 'tools/list');
      expect(other.status).to.equal(401);
      expect(other.headers['www-authenticate']).to.contain('error="invalid_token"');
      expect(other.json.error.message).to.contain('/t/a/_mcp", not');
    }
  });
});
