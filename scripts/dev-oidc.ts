/**
 * A development authorization server, FOR TRYING fenecdb's OAuth ONLY: oidc-provider (OpenID
 * Certified) on this machine, with dynamic client registration, PKCE, resource indicators (RFC 8707)
 * and JWT access tokens (RFC 9068) whose `aud` is the resource asked for. Every sign-in is the one
 * fixed local user, `local-user`, after a click: there are no passwords. Production points
 * `--oauth-issuer` at the operator's identity provider, never at this.
 *
 * `node dist/scripts/dev-oidc.js --port 9000` (make run OAUTH=1 starts it); the tests start it in-process.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider, { errors } from 'oidc-provider';

export const DEV_SCOPES = Object.freeze(['fenec:read', 'fenec:memory', 'fenec:write']);
/** The one user every sign-in is. */
export const LOCAL_USER = 'local-user';

export interface DevIssuerOptions {
  readonly host?: string;
  /** 0: a free port. */
  readonly port?: number;
  /** The signing keys (private JWKs with kid and alg); default one RSA key made now. */
  readonly keys?: readonly JWK[];
  /** Seconds an access token lives. Default 3600. */
  readonly accessTokenTtl?: number;
}

export interface DevIssuer {
  /** The issuer, as tokens' `iss` name it: `http://host:port`. */
  readonly issuer: string;
  readonly port: number;
  readonly keys: readonly JWK[];
  close(): Promise<void>;
}

/** A signing key for the issuer: an RSA private JWK with its kid. */
export async function signingKey(kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

export async function startDevIssuer(options: DevIssuerOptions = {}): Promise<DevIssuer> {
  const host = options.host ?? '127.0.0.1';
  const keys = options.keys ?? [await signingKey('dev-1')];
  let handler: http.RequestListener = (_req, res) => res.writeHead(503).end();
  const server = http.createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://${host}:${port}`;
  const provider = new Provider(issuer, {
    jwks: { keys: keys as JWK[] },
    scopes: ['openid', 'offline_access', ...DEV_SCOPES],
    claims: { openid: ['sub'] },
    pkce: { required: () => true },
    cookies: { keys: ['dev-oidc: for trying only'] },
    clientBasedCORS: () => true,
    ttl: {
      Interaction: 600,
      Session: 86_400,
      Grant: 86_400,
      AccessToken: options.accessTokenTtl ?? 3600,
      RefreshToken: 86_400,
      AuthorizationCode: 60,
    },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf ?? undefined!,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resource) => {
          if (!/^https?:\/\/[^/]+(\/t\/[a-z0-9][a-z0-9-]{0,62})?\/_mcp$/.test(resource))
            throw new errors.InvalidTarget('a fenecdb resource is <url>/t/<tenant>/_mcp or <url>/_mcp');
          return {
            scope: DEV_SCOPES.join(' '),
            audience: resource,
            accessTokenTTL: options.accessTokenTtl ?? 3600,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
  });
  const callback = provider.callback();
  handler = (req, res) => {
    const match = /^\/interaction\/([\w-]+)$/.exec(req.url ?? '');
    if (match === null) return callback(req, res);
    interaction(provider, req, res).catch((err: Error) => {
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
      res.end(`sign-in failed: ${err.message}\n`);
    });
  };
  return {
    issuer,
    port,
    keys,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The one page of a sign-in: GET shows who signs in (the fixed local user) and what the client asks
 * for; POST signs in and grants it at once.
 */
async function interaction(provider: Provider, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, uid } = details;
  if (req.method === 'GET') {
    const client = String(params.client_id);
    const resource = String(params.resource ?? '');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<!doctype html><title>fenecdb development sign-in</title>` +
        `<p><b>For trying only.</b> Sign in as <b>${LOCAL_USER}</b> and let client ${escape(client)} ` +
        `use ${escape(String(params.scope ?? ''))} on ${escape(resource)}?</p>` +
        `<form method="post" action="/interaction/${uid}"><button type="submit">Sign in and allow</button></form>`,
    );
    return;
  }
  if (req.method !== 'POST') throw new Error('the sign-in page takes GET and POST');
  // The form carries nothing: what is granted is what the client asked for.
  for await (const chunk of req) void chunk;
  const grant =
    details.grantId === undefined
      ? new provider.Grant({ accountId: LOCAL_USER, clientId: String(params.client_id) })
      : (await provider.Grant.find(details.grantId))!;
  const missing = prompt.details as {
    missingOIDCScope?: string[];
    missingResourceScopes?: Record<string, string[]>;
  };
  if (missing.missingOIDCScope !== undefined) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
    grant.addResourceScope(resource, scopes.join(' '));
  // A client that asks for no scope of a resource is given fenecdb's all.
  if (typeof params.resource === 'string' && missing.missingResourceScopes === undefined)
    grant.addResourceScope(params.resource, DEV_SCOPES.join(' '));
  const grantId = await grant.save();
  await provider.interactionFinished(
    req,
    res,
    { login: { accountId: LOCAL_USER }, consent: { grantId } },
    { mergeWithLastSubmission: false },
  );
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const at = process.argv.indexOf('--port');
  const port = at === -1 ? 9000 : Number(process.argv[at + 1]);
  const dev = await startDevIssuer({ port });
  process.stderr.write(
    `dev-oidc: a development authorization server FOR TRYING ONLY at ${dev.issuer} (every sign-in is ${LOCAL_USER})\n`,
  );
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => void dev.close().then(() => process.exit(0)));
}
