/**
 * OAuth on a one-file server: its resource is `<public-url>/_mcp`, its metadata at
 * `/.well-known/oauth-protected-resource/_mcp`; the flags' environment forms; and the flags refused with
 * one line and exit status 2.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startDevIssuer, type DevIssuer } from '../../../scripts/dev-oidc.js';
import { FENEC_SERVER, request, Sandbox, type ServerProcess } from '../processes.js';
import { accessToken, freePort } from './sign-in.js';
import { mcp } from './stack.js';

describe('OAuth on a one-file server', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let issuer: DevIssuer;
  let server: ServerProcess;
  let publicUrl: string;
  let dir: string;

  before(async () => {
    issuer = await startDevIssuer();
    dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), 'notes read where owner = $jwt.sub\n');
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    // The environment forms: FENEC_PUBLIC_URL and FENEC_OAUTH_ISSUER.
    server = await sandbox.startProgram(
      FENEC_SERVER,
      [
        '--port',
        String(port),
        '--file',
        path.join(dir, 'one.fenec'),
        '--mcp',
        '--policy',
        path.join(dir, 'policy.txt'),
      ],
      { FENEC_PUBLIC_URL: publicUrl, FENEC_OAUTH_ISSUER: issuer.issuer, FENEC_TOKEN: 'one-file-token' },
    );
  });
  after(async () => {
    await sandbox.cleanUp();
    await issuer?.close();
  });

  it('serves its metadata at /.well-known/oauth-protected-resource/_mcp and points its 401s there', async () => {
    const metadata = await request(server.url, { path: '/.well-known/oauth-protected-resource/_mcp' });
    expect(metadata.json).to.deep.include({ resource: `${publicUrl}/_mcp`, authorization_servers: [issuer.issuer] });
    const refused = await request(server.url, { method: 'POST', path: '/_mcp', body: '{}' });
    expect(refused.headers['www-authenticate']).to.equal(
      `Bearer resource_metadata="${publicUrl}/.well-known/oauth-protected-resource/_mcp"`,
    );
  });

  it("takes a token for its resource, and refuses one for a tenant's", async () => {
    const own = await accessToken(issuer.keys[0]!, { iss: issuer.issuer, aud: `${publicUrl}/_mcp` });
    expect((await mcp(server, '/_mcp', own, 'tools/list')).status).to.equal(200);
    const tenants = await accessToken(issuer.keys[0]!, { iss: issuer.issuer, aud: `${publicUrl}/t/a/_mcp` });
    const reply = await mcp(server, '/_mcp', tenants, 'tools/list');
    expect(reply.status).to.equal(401);
    expect(reply.json.error.message).to.contain(`not ${publicUrl}/_mcp`);
  });

  it('refuses --oauth-issuer without --public-url, and an issuer over plain http to another machine', async () => {
    const file = path.join(dir, 'other.fenec');
    const noUrl = await sandbox.run(FENEC_SERVER, ['--file', file, '--oauth-issuer', issuer.issuer]);
    expect(noUrl.code).to.equal(2);
    expect(noUrl.stderr).to.contain('--oauth-issuer needs --public-url');
    const plain = await sandbox.run(FENEC_SERVER, [
      '--file',
      file,
      '--public-url',
      'https://db.example.com',
      '--oauth-issuer',
      'http://idp.example.com',
    ]);
    expect(plain.code).to.equal(2);
    expect(plain.stderr).to.contain("takes an authorization server's https URL");
    const withPath = await sandbox.run(FENEC_SERVER, ['--file', file, '--public-url', 'https://db.example.com/x']);
    expect(withPath.code).to.equal(2);
    expect(withPath.stderr).to.contain('--public-url takes the origin');
  });
});
