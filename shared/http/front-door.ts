/**
 * The front door of fenec-server and fenec-router alike: who may ask, checked before a body is
 * read, in the order docs/security.md gives — where it comes from (Origin) before what it carries (the token) —
 * and who the caller is once they pass: the server's token (everything), or a JSON Web Token (its
 * policy; on a tenant's route, the tenant its `tenant` claim names).
 *
 * A server with neither a token nor a JWT key answers without credentials, but only a Host naming
 * this machine (DNS rebinding reaches nothing); the router always has one or the other. A route of the
 * route table's `public` kind never comes here. Each refused credential
 * is an audit line (`"event":"auth"`), never the token itself. The router and a node refuse the same
 * request with the same answer: they share this module and shared/http/reply.ts.
 */
import { hash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import * as os from 'node:os';
import { Audit } from '../audit.js';
import type { JwtClaims, JwtVerifier } from '../auth/jwt.js';
import { FenecError } from '../errors.js';

/** Who a request is from, once it passed the front door. */
export type Caller = { readonly kind: 'server' } | { readonly kind: 'jwt'; readonly claims: JwtClaims };

/** The server's token, or any request to a server that asks for no credentials: everything. */
export const SERVER_CALLER: Caller = Object.freeze({ kind: 'server' });

/** What the front door is configured with: fenec-server's options, or fenec-router's (no --http-cors). */
export interface FrontDoorOptions {
  /** The server's token (`--http-token`): every route, every tenant. */
  readonly httpToken: string | undefined;
  /** The verifier of JSON Web Tokens, when they are taken. */
  readonly jwt: JwtVerifier | undefined;
  /** The one foreign origin whose pages may call (`--http-cors`). */
  readonly httpCors?: string | undefined;
  /** The address listened on: when it is a name, a Host naming it is this machine. */
  readonly host: string;
}

/** Which callers a route takes: any (a JWT under its policy), or the server's token only (admin routes). */
export type Access = 'any' | 'server';

const BEARER_HINT = 'send the header "Authorization: Bearer <token>"';

export class FrontDoor {
  readonly #tokenDigest: Buffer | undefined;
  readonly #jwt: JwtVerifier | undefined;
  readonly #cors: string | undefined;
  readonly #localNames: ReadonlySet<string>;
  readonly #audit: Audit;
  /** The last Host header accepted: clients send the same one on every request. */
  #lastHost = '';

  constructor(options: FrontDoorOptions, audit: Audit = Audit.off) {
    this.#tokenDigest = options.httpToken === undefined ? undefined : sha256(options.httpToken);
    this.#jwt = options.jwt;
    this.#cors = options.httpCors;
    this.#localNames = localNames(options.host);
    this.#audit = audit;
  }

  /**
   * Who is asking, or why the request is refused. `route` names the request in audit lines and
   * messages (a pattern, never a tenant); `access: 'server'` takes the server's token only, and does
   * not verify a JWT there: a route that never takes one tells nothing of whether it is valid.
   */
  caller(req: IncomingMessage, route: string, access: Access = 'any'): Caller | FenecError {
    const refusal = this.#originRefusal(req);
    if (refusal !== undefined) return refusal;
    if (this.#tokenDigest === undefined && this.#jwt === undefined)
      return this.#hostRefusal(req.headers.host) ?? SERVER_CALLER;
    // Started with JWTs alone, the server has no token that could open an operator's route: say so, whatever is sent.
    if (access === 'server' && this.#tokenDigest === undefined) {
      return this.#refuse(
        'not_server_token',
        req,
        route,
        new FenecError(
          'unauthorized',
          `${route} takes the server's token only, and this server was started without one (JWTs alone)`,
          { hint: 'start it with --http-token (or FENEC_TOKEN) and call it with that token' },
        ),
      );
    }
    const authorization = req.headers.authorization;
    if (authorization === undefined || authorization === '') {
      return this.#refuse(
        'missing',
        req,
        route,
        new FenecError('unauthorized', 'this server takes requests with a token only', { hint: BEARER_HINT }),
      );
    }
    const token = /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
    if (token === undefined) {
      return this.#refuse(
        'not_bearer',
        req,
        route,
        new FenecError('invalid_token', 'the Authorization header is not "Bearer <token>"', { hint: BEARER_HINT }),
      );
    }
    // Both sides hashed: equal lengths for timingSafeEqual, and no timing clue to the token's length.
    if (this.#tokenDigest !== undefined && timingSafeEqual(sha256(token), this.#tokenDigest)) return SERVER_CALLER;
    if (this.#jwt === undefined || access === 'server') {
      const message =
        this.#jwt === undefined
          ? 'the token given is not valid for this server'
          : `${route} takes the server's token only; the token given is not it`;
      return this.#refuse(
        'not_server_token',
        req,
        route,
        new FenecError('invalid_token', message, { hint: `${BEARER_HINT} with the server's token` }),
      );
    }
    const verification = this.#jwt.check(token);
    if (verification.ok) return { kind: 'jwt', claims: verification.claims };
    return this.#refuse(
      verification.why,
      req,
      route,
      new FenecError('invalid_token', verification.message, {
        hint: "mint a valid token (fenec token) with this server's key, issuer and audience",
      }),
    );
  }

  /**
   * Who is asking for tenant `tenant`'s route: as caller(), and a JWT must name the tenant in its
   * `tenant` claim — one without (401, it reaches no tenant) or naming another (403) is refused.
   */
  tenantCaller(req: IncomingMessage, tenant: string, route: string, access: Access = 'any'): Caller | FenecError {
    const caller = this.caller(req, route, access);
    if (caller instanceof FenecError || caller.kind === 'server') return caller;
    const claimed = caller.claims.tenant;
    if (typeof claimed !== 'string' || claimed === '') {
      return this.#refuse(
        'no_tenant',
        req,
        route,
        new FenecError('invalid_token', 'the token has no tenant claim; a hosted JWT names its tenant', {
          hint: 'mint it with fenec token --tenant NAME',
        }),
      );
    }
    if (claimed === tenant) return caller;
    return this.#refuse(
      'wrong_tenant',
      req,
      route,
      new FenecError('wrong_tenant', `the token reaches tenant ${claimed}, not ${tenant}`, {
        hint: `use a token minted with fenec token --tenant ${tenant}`,
      }),
    );
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

  #refuse(why: string, req: IncomingMessage, route: string, error: FenecError): FenecError {
    this.#audit.auth(why, req.socket.remoteAddress, route);
    return error;
  }

  #originRefusal(req: IncomingMessage): FenecError | undefined {
    const origin = req.headers.origin;
    if (origin === undefined || origin === this.#cors || isOwnOrigin(origin, req.headers.host)) return undefined;
    const other = this.#cors === undefined ? '' : ` or ${this.#cors}`;
    return new FenecError(
      'forbidden_origin',
      `Origin ${quote(origin)} is not this server's own; a page may call it only from its own origin${other}`,
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

/** One call, no Hash object: a token is hashed on every request (0.8 µs against 1.3 for createHash). */
function sha256(text: string): Buffer {
  return hash('sha256', text, 'buffer');
}

function quote(header: string): string {
  return JSON.stringify(header.length > 200 ? `${header.slice(0, 200)}…` : header);
}
