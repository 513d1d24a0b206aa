/**
 * What the OAuth tests share: the development authorization server (scripts/dev-oidc.ts, oidc-provider)
 * in this process, a browser's walk through its sign-in page over plain HTTP, the MCP SDK's
 * OAuthClientProvider kept in memory, and access tokens signed here with the issuer's own keys for
 * the refusals (the shapes an IdP would send, and those it must not).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { importJWK, SignJWT, type JWK } from 'jose';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';

/**
 * A browser signing in: follows the authorization URL's redirects with its cookies, submits the
 * sign-in page's form, and gives the `code` of the last redirect (nothing listens at the redirect URI).
 */
export async function signIn(authorization: URL, redirectUri: string): Promise<string> {
  const cookies = new Map<string, string>();
  let url = authorization.href;
  let method = 'GET';
  for (let step = 0; step < 12; step++) {
    const reply = await fetch(url, {
      method,
      redirect: 'manual',
      headers: {
        cookie: cookieHeader(cookies),
        ...(method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      ...(method === 'POST' ? { body: '' } : {}),
    });
    for (const line of reply.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    const location = reply.headers.get('location');
    if (location !== null) {
      const next = new URL(location, url);
      if (next.href.startsWith(redirectUri)) {
        const code = next.searchParams.get('code');
        if (code === null) throw new Error(`the sign-in ended without a code: ${next.href}`);
        return code;
      }
      url = next.href;
      method = 'GET';
      continue;
    }
    const page = await reply.text();
    if (reply.status !== 200) throw new Error(`the sign-in page answered ${reply.status}: ${page.slice(0, 300)}`);
    const action = /<form method="post" action="([^"]+)"/.exec(page)?.[1];
    if (action === undefined) throw new Error(`the sign-in page has no form: ${page.slice(0, 300)}`);
    url = new URL(action, url).href;
    method = 'POST';
  }
  throw new Error('the sign-in took more than 12 steps');
}

function cookieHeader(cookies: ReadonlyMap<string, string>): string {
  return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
}

/** The MCP SDK's client side of OAuth, kept in memory; the authorization URL it would open is kept for signIn. */
export class MemoryProvider implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:9/callback';
  authorization: URL | undefined;
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier = '';

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'fenecdb oauth test',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.#client;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.#client = info;
  }
  tokens(): OAuthTokens | undefined {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.#tokens = tokens;
  }
  redirectToAuthorization(url: URL): void {
    this.authorization = url;
  }
  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }
  codeVerifier(): string {
    return this.#verifier;
  }
}

/** An access token as the issuer would sign it (RS256, typ at+jwt, its kid), with `claims` over the defaults. */
export async function accessToken(
  key: JWK,
  claims: Record<string, unknown>,
  header: Record<string, unknown> = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const payload = { sub: 'agent-1', iat: now, exp: now + 600, scope: 'fenec:read fenec:memory fenec:write', ...claims };
  for (const [name, value] of Object.entries(payload))
    if (value === undefined) delete (payload as Record<string, unknown>)[name];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: key.kid!, ...header })
    .sign(await importJWK(key, 'RS256'));
}

/** A port free now, for a program whose public URL must be known before it starts. */
export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
