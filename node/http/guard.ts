/**
 * Who may ask: the checks every request but `GET /_health` passes before its body is read, in the
 * order SPEC gives — where it comes from (Origin) before what it carries (the token) — and who the
 * caller is once they pass: the server's token (everything), or a JSON Web Token (its policy).
 *
 * A server with neither a token nor a JWT key answers without credentials, but only a Host naming
 * this machine (DNS rebinding reaches nothing). Once either is configured, every request carries
 * one. Each refused credential is an audit line (`"event":"auth"`), never the token itself.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import * as os from 'node:os';
import { Audit } from '../../shared/audit.js';
import type { JwtClaims, JwtVerifier } from '../../shared/auth/jwt.js';
import { FenecError } from '../../shared/errors.js';
import type { ServerConfig } from '../config.js';

/** Who a request is from, once it passed the guard. */
export type Caller = { readonly kind: 'server' } | { readonly kind: 'jwt'; readonly claims: JwtClaims };

/** The server's token, or any request to a server that asks for no credentials: everything. */
export const SERVER_CALLER: Caller = Object.freeze({ kind: 'server' });

const BEARER_HINT = 'send the header "Authorization: Bearer <token>"';

export class RequestGuard {
  readonly #tokenDigest: Buffer | undefined;
  readonly #jwt: JwtVerifier | undefined;
  readonly #cors: string | undefined;
  readonly #localNames: ReadonlySet<string>;
  readonly #audit: Audit;
  /** The last Host header accepted: clients send the same one on every request. */
  #lastHost = '';

  constructor(config: Pick<ServerConfig, 'httpToken' | 'httpCors' | 'host' | 'jwt'>, audit: Audit = Audit.off) {
    this.#tokenDigest = config.httpToken === undefined ? undefined : sha256(config.httpToken);
    this.#jwt = config.jwt;
    this.#cors = config.httpCors;
    this.#localNames = localNames(config.host);
    this.#audit = audit;
  }

  /**
   * Who is asking, or why the request is refused. `route` names the request in audit lines;
   * `jwt: false` takes the server's token only (`/_metrics`).
   */
  caller(req: IncomingMessage, route: string, jwt = true): Caller | FenecError {
    const refusal = this.#originRefusal(req);
    if (refusal !== undefined) return refusal;
    if (this.#tokenDigest === undefined && this.#jwt === undefined) return this.#hostRefusal(req.headers.host) ?? SERVER_CALLER;
    const authorization = req.headers.authorization;
    if (authorization === undefined || authorization === '') {
      this.#audit.auth('missing', req.socket.remoteAddress, route);
      return new FenecError('unauthorized', 'this server takes requests with a token only', { hint: BEARER_HINT });
    }
    const token = /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
    if (token === undefined) {
      this.#audit.auth('not_bearer', req.socket.remoteAddress, route);
      return new FenecError('invalid_token', 'the Authorization header is not "Bearer <token>"', { hint: BEARER_HINT });
    }
    // Both sides hashed: equal lengths for timingSafeEqual, and no timing clue to the token's length.
    if (this.#tokenDigest !== undefined && timingSafeEqual(sha256(token), this.#tokenDigest)) return SERVER_CALLER;
    if (this.#jwt === undefined || !jwt) {
      this.#audit.auth('not_server_token', req.socket.remoteAddress, route);
      const only = this.#jwt === undefined ? 'this server' : `${route} takes the server's token only; it`;
      return new FenecError('invalid_token', `the token given is not valid for ${only}`, {
        hint: `${BEARER_HINT} with the server's token`,
      });
    }
    const verification = this.#jwt.check(token);
    if (verification.ok) return { kind: 'jwt', claims: verification.claims };
    this.#audit.auth(verification.why, req.socket.remoteAddress, route);
    return new FenecError('invalid_token', verification.message, {
      hint: 'mint a valid token (fenec token) with this server\'s key, issuer and audience',
    });
  }

  /**
   * Why a CORS preflight is refused, or undefined when it may be answered. Browsers send preflights
   * without credentials: only where it comes from is asked (and the Host, on a server without any).
   */
  preflightRefusal(req: IncomingMessage): FenecError | undefined {
    const refusal = this.#originRefusal(req);
    if (refusal !== undefined) return refusal;
    return this.#tokenDigest === undefined && this.#jwt === undefined ? this.#hostRefusal(req.headers.host) : undefined;
  }

  /** True when the request comes from the origin that --http-cors names: its answers carry CORS headers. */
  isCorsOrigin(req: IncomingMessage): boolean {
    return this.#cors !== undefined && req.headers.origin === this.#cors;
  }

  #originRefusal(req: IncomingMessage): FenecError | undefined {
    const origin = req.headers.origin;
    if (origin === undefined || origin === this.#cors || isOwnOrigin(origin, req.headers.host)) return undefined;
    return new FenecError(
      'forbidden_origin',
      `Origin ${quote(origin)} is not this server's own; a page may call it only from its own origin ` +
        'or the one --http-cors names',
    );
  }

  #hostRefusal(host: string | undefined): FenecError | undefined {
    if (host !== undefined && (host === this.#lastHost || this.#isLocal(host))) {
      this.#lastHost = host;
      return undefined;
    }
    return new FenecError(
      'forbidden_host',
      `Host ${host === undefined ? '(none)' : quote(host)} does not name this machine; a server without ` +
        '--http-token answers only localhost, 127.0.0.1, [::1] or an address of its own',
      { hint: 'give the server a token (--http-token or FENEC_TOKEN) to serve it under other names' },
    );
  }

  #isLocal(host: string): boolean {
    const name = hostname(host).toLowerCase();
    return this.#localNames.has(name) || name.endsWith('.localhost');
  }
}

/**
 * A page's own origin is the one it loaded from, named by the Host header it sends; https too, for a
 * server behind a TLS-terminating proxy.
 */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  const lower = origin.toLowerCase();
  const expected = host.toLowerCase();
  return lower === `http://${expected}` || lower === `https://${expected}`;
}

/** The name part of a Host header: `[::1]:8080` → `::1`, `localhost:8080` → `localhost`. */
function hostname(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(1, end);
  }
  const colon = host.indexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

/**
 * Names of this machine: the loopback names, its interface addresses (read at start), and the
 * address the server was told to listen on when it is a name rather than a wildcard.
 */
function localNames(listenHost: string): ReadonlySet<string> {
  const names = new Set(['localhost', '127.0.0.1', '::1']);
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) names.add(address.address.toLowerCase());
  }
  if (listenHost !== '0.0.0.0' && listenHost !== '::') names.add(listenHost.toLowerCase());
  return names;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function quote(header: string): string {
  return JSON.stringify(header.length > 200 ? `${header.slice(0, 200)}…` : header);
}
