/**
 * OAuth access tokens (RFC 9068 JWTs) from the trusted issuers, verified with jose: the key the
 * issuer's key set names by `kid`, in that key's own algorithm among RS256, PS256, ES256 and EdDSA
 * (never `none`, never an HS* algorithm against a key set's key), `typ` at+jwt, `iss` equal to the
 * configured issuer, `exp` and `nbf` within CLOCK_TOLERANCE_SECONDS; then the audience of the request.
 *
 * Verification is network I/O (the key set, fetched at most at a bounded rate) and an asynchronous
 * signature check (WebCrypto): it never holds the serving thread. A token that verified is remembered
 * by its SHA-256, bounded (RESULT_CACHE_SIZE, the least recently used forgotten), until its `exp`: an
 * agent's next request with it costs a hash and a map lookup, on the serving thread.
 */
import { hash } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import type { FenecError } from '../../errors.js';
import { checkJsonValue } from '../../fenecql/limits.js';
import { CLOCK_TOLERANCE_SECONDS, MAX_TOKEN_LENGTH, type JwtClaims } from '../jwt.js';
import { ISSUER_TIMINGS, KeyUnavailable, TrustedIssuer, type IssuerTimings } from './issuer.js';
import { ProtectedResource } from './resource.js';
import { scopesOf, type FenecScope } from './scopes.js';

/** Why an OAuth token is refused: short, stable words for the audit, the metrics and the tests. */
export type OAuthWhy =
  | 'malformed'
  | 'unsigned'
  | 'wrong_algorithm'
  | 'wrong_type'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'wrong_issuer'
  | 'unknown_key'
  | 'issuer_unreachable'
  | 'bad_claims'
  | 'no_audience'
  | 'wrong_audience'
  | 'no_tenant'
  | 'wrong_tenant';

export interface OAuthAccepted {
  readonly ok: true;
  readonly claims: JwtClaims;
  /** fenecdb's scopes among the token's. */
  readonly scopes: readonly FenecScope[];
  readonly audiences: readonly string[];
  /** When it expires, in seconds since the epoch; and its nbf, if it has one. */
  readonly exp: number;
  readonly nbf: number | undefined;
}

export interface OAuthRefused {
  readonly ok: false;
  readonly why: OAuthWhy;
  readonly message: string;
  /** The tenant the token claimed (its audience's or its claim's), for the audit. */
  readonly claimedTenant?: string;
}

export type OAuthCheck = OAuthAccepted | OAuthRefused;

export interface OAuthOptions {
  /** The origin clients reach this server at (`--public-url`), no trailing slash. */
  readonly publicUrl: string;
  /** The trusted authorization servers (`--oauth-issuer`), exactly as their tokens' `iss`. */
  readonly issuers: readonly string[];
  /**
   * `--oauth-audience`: the one `aud` taken for every resource, for IdPs that cannot set a resource
   * as the audience; the tenant is then the `tenantClaim` claim. Default: the resource is the audience.
   */
  readonly audience?: string | undefined;
  /** `--oauth-tenant-claim`: the claim naming the tenant when `audience` is set. Default `tenant`. */
  readonly tenantClaim?: string;
  readonly timings?: IssuerTimings;
  readonly cacheSize?: number;
}

/** The algorithms a key set's key may sign with: asymmetric only. */
export const OAUTH_ALGORITHMS = Object.freeze(['RS256', 'PS256', 'ES256', 'EdDSA']);
/** How many verified tokens are remembered. */
export const RESULT_CACHE_SIZE = 10_000;

export class OAuthVerifier {
  readonly resource: ProtectedResource;
  readonly audience: string | undefined;
  readonly tenantClaim: string;
  readonly #issuers: ReadonlyMap<string, TrustedIssuer>;
  readonly #verified: LRUCache<string, OAuthAccepted>;
  /**
   * Tokens (by their key) whose `iss` is none of the trusted issuers: a `fenec token` JWT on a server that takes both
   * is asked here first on every request, and decoding it again (2.2 µs) would tell the same each time.
   */
  readonly #foreign: LRUCache<string, true>;

  constructor(options: OAuthOptions) {
    this.resource = new ProtectedResource(options.publicUrl, options.issuers);
    this.audience = options.audience;
    this.tenantClaim = options.tenantClaim ?? 'tenant';
    const timings = options.timings ?? ISSUER_TIMINGS;
    this.#issuers = new Map(options.issuers.map((issuer) => [issuer, new TrustedIssuer(issuer, timings)]));
    this.#verified = new LRUCache({ max: options.cacheSize ?? RESULT_CACHE_SIZE });
    this.#foreign = new LRUCache({ max: options.cacheSize ?? RESULT_CACHE_SIZE });
  }

  get issuers(): readonly string[] {
    return [...this.#issuers.keys()];
  }

  /** Discovers every issuer and fetches its keys, in the background: a start never waits on an IdP. */
  warm(): Promise<void> {
    return Promise.all([...this.#issuers.values()].map((issuer) => issuer.warm())).then(() => undefined);
  }

  /**
   * The token's verification, or undefined when its `iss` is none of the trusted issuers (it may be a
   * `fenec token` JWT). A token verified before answers at once; else a promise. Never throws or rejects.
   */
  check(token: string): OAuthCheck | Promise<OAuthCheck> | undefined {
    const key = hash('sha256', token, 'base64');
    const known = this.#verified.get(key);
    if (known !== undefined) {
      const now = Date.now() / 1000;
      if (
        now < known.exp + CLOCK_TOLERANCE_SECONDS &&
        (known.nbf === undefined || known.nbf <= now + CLOCK_TOLERANCE_SECONDS)
      )
        return known;
      this.#verified.delete(key);
    }
    if (token.length > MAX_TOKEN_LENGTH || this.#foreign.has(key)) return undefined;
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return undefined;
    }
    const issuer = typeof iss === 'string' ? this.#issuers.get(iss) : undefined;
    if (issuer === undefined) {
      this.#foreign.set(key, true);
      return undefined;
    }
    return this.#verify(token, issuer).then((check) => {
      if (check.ok) {
        const ttl = Math.max(1, Math.ceil((check.exp + CLOCK_TOLERANCE_SECONDS) * 1000 - Date.now()));
        this.#verified.set(key, check, { ttl });
      }
      return check;
    });
  }

  /** A refusal for a token issued by none of the trusted issuers (this server takes no other JWT). */
  foreignIssuer(): OAuthRefused {
    return refused(
      'wrong_issuer',
      `the token is not from a trusted issuer (${this.issuers.join(', ')}) and this server takes no other JSON Web Token`,
    );
  }

  /**
   * Why a verified token does not reach `tenant`'s resource ('' or undefined: a one-file server's), or undefined when
   * it does: its `aud` names the resource (or, with --oauth-audience, that audience and its tenant claim the tenant).
   */
  audienceRefusal(token: OAuthAccepted, tenant: string | undefined): OAuthRefused | undefined {
    const resource = this.resource.resource(tenant);
    if (token.audiences.length === 0)
      return refused('no_audience', `the token names no audience (aud); it must name ${resource}`);
    if (this.audience === undefined) {
      if (token.audiences.includes(resource)) return undefined;
      const claimed = token.audiences.map((aud) => this.#tenantOf(aud)).find((name) => name !== undefined);
      return {
        ...refused(
          'wrong_audience',
          `the token is for ${token.audiences.map((aud) => JSON.stringify(aud.slice(0, 200))).join(', ')}, not ${resource}`,
        ),
        ...(claimed === undefined ? {} : { claimedTenant: claimed }),
      };
    }
    if (!token.audiences.includes(this.audience))
      return refused('wrong_audience', `the token's aud does not name ${JSON.stringify(this.audience)}`);
    if (tenant === undefined || tenant === '') return undefined;
    const claimed = token.claims[this.tenantClaim];
    if (typeof claimed !== 'string' || claimed === '')
      return refused('no_tenant', `the token has no ${this.tenantClaim} claim naming its tenant`);
    if (claimed === tenant) return undefined;
    return {
      ...refused('wrong_tenant', `the token reaches tenant ${claimed.slice(0, 64)}, not ${tenant}`),
      claimedTenant: claimed,
    };
  }

  /** The tenant a resource of this server names, if it is one. */
  #tenantOf(aud: string): string | undefined {
    const prefix = `${this.resource.publicUrl}/t/`;
    if (!aud.startsWith(prefix) || !aud.endsWith('/_mcp')) return undefined;
    return aud.slice(prefix.length, -'/_mcp'.length);
  }

  async #verify(token: string, issuer: TrustedIssuer): Promise<OAuthCheck> {
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(token, issuer.key, {
        issuer: issuer.issuer,
        algorithms: [...OAUTH_ALGORITHMS],
        typ: 'at+jwt',
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      return refusalOf(err, issuer.issuer, token);
    }
    const { exp, nbf, aud } = payload as { exp: number; nbf?: unknown; aud?: unknown };
    try {
      checkJsonValue(payload, "the token's claims");
    } catch (err) {
      return refused('bad_claims', (err as FenecError).message);
    }
    const claims = Object.freeze(Object.assign(Object.create(null) as Record<string, unknown>, payload));
    const audiences =
      typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud.filter((a) => typeof a === 'string') : [];
    return Object.freeze({
      ok: true as const,
      claims,
      scopes: scopesOf(claims),
      audiences,
      exp,
      nbf: typeof nbf === 'number' ? nbf : undefined,
    });
  }
}

function refusalOf(err: unknown, issuer: string, token: string): OAuthRefused {
  if (err instanceof KeyUnavailable) return refused(err.why, err.message);
  if (err instanceof errors.JWTExpired) return refused('expired', 'the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    switch (err.claim) {
      case 'nbf':
        return refused('not_yet_valid', 'the token is not valid yet (nbf)');
      case 'iss':
        return refused('wrong_issuer', `the token's iss is not ${issuer}`);
      case 'typ':
        return refused('wrong_type', 'the token is not an OAuth access token (its typ header is not at+jwt, RFC 9068)');
      case 'exp':
        return refused('bad_claims', 'the token has no valid exp claim; this server takes only tokens that expire');
      default:
        return refused('bad_claims', `the token's ${err.claim} claim is missing or not valid`);
    }
  }
  if (err instanceof errors.JOSEAlgNotAllowed) {
    if (headerAlg(token) === 'none') return refused('unsigned', 'the token is unsigned (alg none)');
    return refused(
      'wrong_algorithm',
      `the token's algorithm is not one this server takes (${OAUTH_ALGORITHMS.join(', ')})`,
    );
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return refused('bad_signature', `the token's signature does not verify with the key of ${issuer} it names`);
  if (err instanceof errors.JWKSMultipleMatchingKeys || err instanceof errors.JWKSNoMatchingKey)
    return refused('unknown_key', `no key of ${issuer} fits the token's header`);
  if (headerAlg(token) === 'none') return refused('unsigned', 'the token is unsigned (alg none)');
  return refused('malformed', 'the token is not a signed JSON Web Token (header.payload.signature, base64url)');
}

function headerAlg(token: string): unknown {
  try {
    return decodeProtectedHeader(token).alg;
  } catch {
    return undefined;
  }
}

function refused(why: OAuthWhy, message: string): OAuthRefused {
  return { ok: false, why, message };
}
