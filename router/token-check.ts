/**
 * The router's one decision about a caller: the server's token reaches every tenant and the admin
 * routes; a JWT reaches only the tenant its `tenant` claim names. Decided before anything is
 * forwarded, so a node never sees a request the router refused.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { JwtVerifier } from '../shared/auth/jwt.js';
import { FenecError } from '../shared/errors.js';

export type RouterCaller = { readonly kind: 'server' } | { readonly kind: 'jwt'; readonly tenant: string };

const BEARER_HINT = 'send the header "Authorization: Bearer <token>"';

export class TokenCheck {
  readonly #tokenDigest: Buffer | undefined;
  readonly #jwt: JwtVerifier | undefined;

  constructor(httpToken: string | undefined, jwt: JwtVerifier | undefined) {
    this.#tokenDigest = httpToken === undefined ? undefined : sha256(httpToken);
    this.#jwt = jwt;
  }

  /** Who sends this Authorization header, or why it is refused (401). */
  caller(authorization: string | undefined): RouterCaller | FenecError {
    if (authorization === undefined || authorization === '') {
      return new FenecError('unauthorized', 'the router takes requests with a token only', { hint: BEARER_HINT });
    }
    const token = /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
    if (token === undefined) return new FenecError('invalid_token', 'the Authorization header is not "Bearer <token>"', { hint: BEARER_HINT });
    // Both sides hashed: equal lengths for timingSafeEqual, and no timing clue to the token's length.
    if (this.#tokenDigest !== undefined && timingSafeEqual(sha256(token), this.#tokenDigest)) return { kind: 'server' };
    if (this.#jwt === undefined) return new FenecError('invalid_token', 'the token given is not this router\'s server token');
    const verification = this.#jwt.check(token);
    if (!verification.ok) {
      return new FenecError('invalid_token', verification.message, { hint: 'mint a valid token (fenec token) with the key, issuer and audience the router takes' });
    }
    const tenant = verification.claims.tenant;
    if (typeof tenant !== 'string' || tenant === '') {
      return new FenecError('invalid_token', 'the token has no tenant claim; a hosted JWT names its tenant', { hint: 'mint it with fenec token --tenant NAME' });
    }
    return { kind: 'jwt', tenant };
  }

  /** The refusal (403) of a caller asking for `tenant`, or undefined when it may. */
  static tenantRefusal(caller: RouterCaller, tenant: string): FenecError | undefined {
    if (caller.kind === 'server' || caller.tenant === tenant) return undefined;
    return new FenecError('wrong_tenant', `the token reaches tenant ${caller.tenant}, not ${tenant}`, {
      hint: `use a token minted with --tenant ${tenant}`,
    });
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
