/**
 * The router's one decision about a caller: the server's token reaches every tenant and the admin
 * routes; a JWT reaches only the tenant its `tenant` claim names. Decided before anything is
 * forwarded, so a node never sees a request the router refused. Each refused credential is an audit
 * line (`"event":"auth"`), as at a node: never the token itself.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { Audit } from '../shared/audit.js';
import type { JwtVerifier } from '../shared/auth/jwt.js';
import { FenecError } from '../shared/errors.js';

export type RouterCaller = { readonly kind: 'server' } | { readonly kind: 'jwt'; readonly tenant: string };

const BEARER_HINT = 'send the header "Authorization: Bearer <token>"';

export class TokenCheck {
  readonly #tokenDigest: Buffer | undefined;
  readonly #jwt: JwtVerifier | undefined;
  readonly #audit: Audit;

  constructor(httpToken: string | undefined, jwt: JwtVerifier | undefined, audit: Audit = Audit.off) {
    this.#tokenDigest = httpToken === undefined ? undefined : sha256(httpToken);
    this.#jwt = jwt;
    this.#audit = audit;
  }

  /**
   * Who sends this Authorization header, or why it is refused (401). `door` names the request in
   * the refusal's audit line: the peer's address and the route pattern (`/t/<tenant>/query`).
   */
  caller(authorization: string | undefined, door: Door): RouterCaller | FenecError {
    if (authorization === undefined || authorization === '') {
      return this.#refuse('missing', door, new FenecError('unauthorized', 'the router takes requests with a token only', { hint: BEARER_HINT }));
    }
    const token = /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
    if (token === undefined) return this.#refuse('not_bearer', door, new FenecError('invalid_token', 'the Authorization header is not "Bearer <token>"', { hint: BEARER_HINT }));
    // Both sides hashed: equal lengths for timingSafeEqual, and no timing clue to the token's length.
    if (this.#tokenDigest !== undefined && timingSafeEqual(sha256(token), this.#tokenDigest)) return { kind: 'server' };
    if (this.#jwt === undefined) return this.#refuse('not_server_token', door, new FenecError('invalid_token', 'the token given is not this router\'s server token'));
    const verification = this.#jwt.check(token);
    if (!verification.ok) {
      return this.#refuse(verification.why, door, new FenecError('invalid_token', verification.message, { hint: 'mint a valid token (fenec token) with the key, issuer and audience the router takes' }));
    }
    const tenant = verification.claims.tenant;
    if (typeof tenant !== 'string' || tenant === '') {
      return this.#refuse('no_tenant', door, new FenecError('invalid_token', 'the token has no tenant claim; a hosted JWT names its tenant', { hint: 'mint it with fenec token --tenant NAME' }));
    }
    return { kind: 'jwt', tenant };
  }

  /** The refusal (403) of a caller asking for `tenant`, or undefined when it may. */
  tenantRefusal(caller: RouterCaller, tenant: string, door: Door): FenecError | undefined {
    if (caller.kind === 'server' || caller.tenant === tenant) return undefined;
    return this.#refuse('wrong_tenant', door, new FenecError('wrong_tenant', `the token reaches tenant ${caller.tenant}, not ${tenant}`, {
      hint: `use a token minted with --tenant ${tenant}`,
    }));
  }

  /** The refusal (403) of a JWT on a route that takes the server's token only, or undefined for the server's. */
  serverOnlyRefusal(caller: RouterCaller, door: Door): FenecError | undefined {
    if (caller.kind === 'server') return undefined;
    return this.#refuse('not_server_token', door, new FenecError('forbidden', `${door.route} takes the server's token only`));
  }

  #refuse(why: string, door: Door, error: FenecError): FenecError {
    this.#audit.auth(why, door.ip, door.route);
    return error;
  }
}

/** Where a request came from and which route it asked, for audit lines. */
export interface Door {
  readonly ip: string | undefined;
  readonly route: string;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
