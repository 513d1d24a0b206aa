/**
 * The front door of fenec-server and fenec-router alike: who may ask, checked before a body is
 * read, in the order docs/security.md gives — where it comes from (Origin) before what it carries (the token) —
 * and who the caller is once they pass: the server's token (everything), a JSON Web Token (its
 * policy; on a tenant's route, the tenant its `tenant` claim names), or an OAuth access token from a
 * trusted issuer (its policy and its scopes; the resource its `aud` names).
 *
 * An OAuth token not seen before is verified asynchronously (its issuer's keys may have to be
 * fetched): the caller is then a promise. Every other answer is at once.
 *
 * A server with neither a token nor a JWT key answers without credentials, but only a Host naming
 * this machine (DNS rebinding reaches nothing); the router always has one or the other. A route of the
 * route table's `public` kind never comes here. Each refused credential
 * is an audit line (`"event":"auth"`), never the token itself. The router and a node refuse the same
 * request with the same answer: they share this module and shared/http/reply.ts.
 */
import { hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import * as os from 'node:os';
import { Audit, subjectOf, type AuthWho } from '../audit.js';
import type { JwtClaims, JwtVerifier } from '../auth/jwt.js';
import type { ChallengeError } from '../auth/oauth/challenge.js';
import type { FenecScope } from '../auth/oauth/scopes.js';
import type { OAuthCheck, OAuthVerifier } from '../auth/oauth/verifier.js';
import { FenecError } from '../errors.js';

/**
 * Who a request is from, once it passed the front door. An OAuth token's caller carries its fenecdb
 * scopes, which narrow what its policy gives; a `fenec token` JWT has none and is held to its policy alone.
 */
export type Caller =
  | { readonly kind: 'server' }
  | { readonly kind: 'jwt'; readonly claims: JwtClaims; readonly scopes?: readonly FenecScope[] };

/** The front door's answer: the caller, or the refusal to write. */
export type Checked = Caller | FenecError;

/** The server's token, or any request to a server that asks for no credentials: everything. */
export const SERVER_CALLER: Caller = Object.freeze({ kind: 'server' });

/** What the front door is configured with: fenec-server's options, or fenec-router's (no --http-cors). */
export interface FrontDoorOptions {
  /** The server's token (`--http-token`): every route, every tenant. */
  readonly httpToken: string | undefined;
  /** The verifier of JSON Web Tokens, when they are taken. */
  readonly jwt: JwtVerifier | undefined;
  /** The verifier of OAuth access tokens (`--oauth-issuer`), when they are taken. */
  readonly oauth?: OAuthVerifier | undefined;
  /** The one foreign origin whose pages may call (`--http-cors`). */
  readonly httpCors?: string | undefined;
  /** The address listened on: when it is a name, a Host naming it is this machine. */
  readonly host: string;
}

/** Which callers a route takes: any (a JWT under its policy), or the server's token only (admin routes). */
export type Access = 'any' | 'server';

const BEARER_HINT = 'send the header "Authorization: Bearer <token>"';

/** Where a refusal happens: the request, its route's pattern, its tenant (undefined off a tenant's route). */
interface RefusalPlace {
  readonly req: IncomingMessage;
  readonly route: string;
  readonly tenant: string | undefined;
  /** Its 401 carries WWW-Authenticate with the resource's metadata. */
  readonly challenged: boolean;
}

export class FrontDoor {
  readonly #tokenDigest: string | undefined;
  readonly #jwt: JwtVerifier | undefined;
  readonly #oauth: OAuthVerifier | undefined;
  readonly #refused: (why: string) => void;
  readonly #cors: string | undefined;
  readonly #localNames: ReadonlySet<string>;
  readonly #audit: Audit;
  /** The last Host header accepted: clients send the same one on every request. */
  #lastHost = '';

  /** `refused` counts each refusal by its reason (fenec_auth_refusals_total). */
  constructor(options: FrontDoorOptions, audit: Audit = Audit.off, refused: (why: string) => void = () => {}) {
    this.#tokenDigest = options.httpToken === undefined ? undefined : sha256(options.httpToken);
    this.#jwt = options.jwt;
    this.#oauth = options.oauth;
    this.#refused = refused;
    this.#cors = options.httpCors;
    this.#localNames = localNames(options.host);
    this.#audit = audit;
  }

  /**
   * Who is asking, or why the request is refused. `route` names the request in audit lines and
   * messages (a pattern, never a tenant); `access: 'server'` takes the server's token only, and does
   * not verify a JWT there: a route that never takes one tells nothing of whether it is valid. On a
   * one-file server, an OAuth token must be for its resource (`<public-url>/_mcp`).
   */
  caller(req: IncomingMessage, route: string, access: 'server'): Checked;
  caller(req: IncomingMessage, route: string, access?: Access): Checked | Promise<Checked>;
  caller(req: IncomingMessage, route: string, access: Access = 'any'): Checked | Promise<Checked> {
    return this.#check(req, route, access, undefined);
  }

  /**
   * Who is asking for tenant `tenant`'s route: as caller(), and a JWT must name the tenant in its
   * `tenant` claim — one without (401, it reaches no tenant) or naming another (403) is refused; an
   * OAuth token must be for the tenant's resource (its `aud`, or --oauth-audience and its tenant claim).
   */
  tenantCaller(req: IncomingMessage, tenant: string, route: string, access: 'server'): Checked;
  tenantCaller(req: IncomingMessage, tenant: string, route: string, access?: Access): Checked | Promise<Checked>;
  tenantCaller(
    req: IncomingMessage,
    tenant: string,
    route: string,
    access: Access = 'any',
  ): Checked | Promise<Checked> {
    return this.#check(req, route, access, tenant);
  }

  /** The protected resource metadata (RFC 9728) of a tenant's resource ('' a one-file server's), when OAuth is on. */
  metadata(tenant: string): string | undefined {
    return this.#oauth?.resource.document(tenant);
  }

  /** The WWW-Authenticate header of a refusal on a tenant's (or a one-file server's: '') MCP or /query route. */
  challenge(tenant: string, error?: ChallengeError, scope?: string): string | undefined {
    return this.#oauth?.resource.challenge(tenant, error, scope);
  }

  #check(req: IncomingMessage, route: string, access: Access, tenant: string | undefined): Checked | Promise<Checked> {
    const refusal = this.#originRefusal(req);
    if (refusal !== undefined) return refusal;
    if (this.#tokenDigest === undefined && this.#jwt === undefined && this.#oauth === undefined)
      return this.#hostRefusal(req.headers.host) ?? SERVER_CALLER;
    // The routes an OAuth token may call answer their 401s with where to sign in.
    const challenged = access === 'any' && this.#oauth !== undefined;
    const where: RefusalPlace = { req, route, tenant, challenged };
    // Started with JWTs alone, the server has no token that could open an operator's route: say so, whatever is sent.
    if (access === 'server' && this.#tokenDigest === undefined) {
      return this.#refuse(
        'not_server_token',
        where,
        new FenecError(
          'unauthorized',
          `${route} takes the server's token only, and this server was started without one (JWTs or OAuth alone)`,
          { hint: 'start it with --http-token (or FENEC_TOKEN) and call it with that token' },
        ),
      );
    }
    const authorization = req.headers.authorization;
    if (authorization === undefined || authorization === '') {
      return this.#refuse(
        'missing',
        where,
        new FenecError('unauthorized', 'this server takes requests with a token only', {
          hint: challenged
            ? `${BEARER_HINT}; an MCP client signs in by itself from the WWW-Authenticate header`
            : BEARER_HINT,
        }),
        {},
        false,
      );
    }
    const token = /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
    if (token === undefined) {
      return this.#refuse(
        'not_bearer',
        where,
        new FenecError('invalid_token', 'the Authorization header is not "Bearer <token>"', { hint: BEARER_HINT }),
      );
    }
    // Both sides hashed: equal lengths for the constant-time compare, and no timing clue to the token's length.
    if (this.#tokenDigest !== undefined && sameDigest(sha256(token), this.#tokenDigest)) return SERVER_CALLER;
    if ((this.#jwt === undefined && this.#oauth === undefined) || access === 'server') {
      const message =
        this.#jwt === undefined && this.#oauth === undefined
          ? 'the token given is not valid for this server'
          : `${route} takes the server's token only; the token given is not it`;
      return this.#refuse(
        'not_server_token',
        where,
        new FenecError('invalid_token', message, { hint: `${BEARER_HINT} with the server's token` }),
      );
    }
    const oauth = this.#oauth?.check(token);
    if (oauth !== undefined) {
      return oauth instanceof Promise
        ? oauth.then((check) => this.#oauthCaller(check, where))
        : this.#oauthCaller(oauth, where);
    }
    if (this.#jwt === undefined) {
      const foreign = this.#oauth!.foreignIssuer();
      return this.#refuse(
        foreign.why,
        where,
        new FenecError('invalid_token', this.#neither(token) ?? foreign.message, {
          hint: `sign in with ${this.#oauth!.issuers.join(' or ')} for this server's resource`,
        }),
      );
    }
    const verification = this.#jwt.check(token);
    if (!verification.ok) {
      const neither = verification.why === 'malformed' ? this.#neither(token) : undefined;
      return this.#refuse(
        verification.why,
        where,
        new FenecError('invalid_token', neither ?? verification.message, {
          hint:
            neither === undefined
              ? "mint a valid token (fenec token) with this server's key, issuer and audience"
              : "send the server's token, or a token minted with fenec token",
        }),
      );
    }
    const caller: Caller = { kind: 'jwt', claims: verification.claims };
    if (tenant === undefined) return caller;
    const claimed = caller.claims.tenant;
    const who = { tokenTenant: typeof claimed === 'string' ? claimed : null, sub: subjectOf(caller.claims) };
    if (typeof claimed !== 'string' || claimed === '') {
      return this.#refuse(
        'no_tenant',
        where,
        new FenecError('invalid_token', 'the token has no tenant claim; a hosted JWT names its tenant', {
          hint: 'mint it with fenec token --tenant NAME',
        }),
        who,
      );
    }
    if (claimed === tenant) return caller;
    return this.#refuse(
      'wrong_tenant',
      where,
      new FenecError('wrong_tenant', `the token reaches tenant ${claimed}, not ${tenant}`, {
        hint: `use a token minted with fenec token --tenant ${tenant}`,
      }),
      who,
    );
  }

  /** An OAuth token's caller, once verified and found to be for the request's resource. */
  #oauthCaller(check: OAuthCheck, where: RefusalPlace): Checked {
    const oauth = this.#oauth!;
    const hint = `sign in again with ${oauth.issuers.join(' or ')} for ${oauth.resource.resource(where.tenant)}`;
    if (!check.ok) return this.#refuse(check.why, where, new FenecError('invalid_token', check.message, { hint }));
    const refused = oauth.audienceRefusal(check, where.tenant);
    if (refused === undefined) return { kind: 'jwt', claims: check.claims, scopes: check.scopes };
    return this.#refuse(refused.why, where, new FenecError('invalid_token', refused.message, { hint }), {
      tokenTenant: refused.claimedTenant ?? null,
      sub: subjectOf(check.claims),
    });
  }

  /** "Neither the server token nor a JWT" for a token that is no JSON Web Token, on a server that also has a token. */
  #neither(token: string): string | undefined {
    if (this.#tokenDigest === undefined || token.split('.').length === 3) return undefined;
    return 'the token matches neither the server token nor a JSON Web Token this server takes';
  }

  /**
   * Why a CORS preflight is refused, or undefined when it may be answered. Browsers send preflights
   * without credentials: only where it comes from is asked (and the Host, on a server without any).
   */
  preflightRefusal(req: IncomingMessage): FenecError | undefined {
    const refusal = this.#originRefusal(req);
    if (refusal !== undefined) return refusal;
    return this.#tokenDigest === undefined && this.#jwt === undefined && this.#oauth === undefined
      ? this.#hostRefusal(req.headers.host)
      : undefined;
  }

  /** True when the request comes from the origin that --http-cors names: its answers carry CORS headers. */
  isCorsOrigin(req: IncomingMessage): boolean {
    return this.#cors !== undefined && req.headers.origin === this.#cors;
  }

  /**
   * A refusal audited and counted, its answer carrying where to sign in on a route an OAuth token may call
   * (`error="invalid_token"` when a token was sent: `sent`).
   */
  #refuse(why: string, where: RefusalPlace, error: FenecError, who: AuthWho = {}, sent = true): FenecError {
    this.#audit.auth(why, where.req.socket.remoteAddress, where.route, {
      ...(where.tenant === undefined ? {} : { tenant: where.tenant }),
      ...who,
    });
    this.#refused(why);
    if (!where.challenged || error.status !== 401) return error;
    const challenge = this.#oauth!.resource.challenge(where.tenant, sent ? 'invalid_token' : undefined);
    return new FenecError(error.code, error.message, {
      ...(error.hint === undefined ? {} : { hint: error.hint }),
      challenge,
    });
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

/**
 * One call, no Hash object, and text rather than a Buffer: a token is hashed on every request, and making the Buffer
 * cost more than the hash (0.6–0.8 µs as base64, 1.0–1.7 as a Buffer compared with timingSafeEqual; 2.2 createHash).
 */
function sha256(text: string): string {
  return hash('sha256', text, 'base64');
}

/** Two digests (always 44 characters) compared in constant time: every character looked at, no early exit. */
function sameDigest(a: string, b: string): boolean {
  let differ = a.length ^ b.length;
  for (let i = 0; i < b.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}

function quote(header: string): string {
  return JSON.stringify(header.length > 200 ? `${header.slice(0, 200)}…` : header);
}
