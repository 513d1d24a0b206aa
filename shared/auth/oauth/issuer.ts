/**
 * One trusted authorization server (`--oauth-issuer`): its metadata discovered (RFC 8414's
 * `/.well-known/oauth-authorization-server`, else OpenID's `/.well-known/openid-configuration`), its
 * keys read from the metadata's `jwks_uri` and kept.
 *
 * The key set is fetched again when it is older than `keysMaxAgeMs` (in the background: the keys held
 * keep verifying meanwhile, and keep verifying when the fetch fails), and for a `kid` it does not hold,
 * at most once per `refetchMs` however many unknown `kid`s come: junk `kid`s cannot make the server
 * hammer the IdP. A failed discovery is tried again no sooner either. The issuer's URL comes from
 * configuration only, never from a token.
 */
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters } from 'jose';
import { fetchJson, FETCH_LIMITS, type FetchLimits } from './fetch-json.js';

export interface IssuerTimings {
  readonly fetch: FetchLimits;
  /** The shortest time between two fetches of the key set (or two discoveries) not made for age. */
  readonly refetchMs: number;
  /** How old the key set may get before it is fetched again. */
  readonly keysMaxAgeMs: number;
}

export const ISSUER_TIMINGS: IssuerTimings = Object.freeze({
  fetch: FETCH_LIMITS,
  refetchMs: 30_000,
  keysMaxAgeMs: 10 * 60_000,
});

/** A key could not be had: the token's `kid` is not the issuer's, or the issuer cannot be reached. */
export class KeyUnavailable extends Error {
  constructor(
    readonly why: 'unknown_key' | 'issuer_unreachable',
    message: string,
  ) {
    super(message);
  }
}

type LocalKeys = ReturnType<typeof createLocalJWKSet>;

export class TrustedIssuer {
  readonly issuer: string;
  readonly #timings: IssuerTimings;
  #jwksUri: string | undefined;
  #keys: LocalKeys | undefined;
  #keysAt = 0;
  /** When a fetch (discovery or keys) was last begun, for the bounded rate. */
  #lastAttempt = -Infinity;
  #lastError: string | undefined;
  #pending: Promise<void> | undefined;

  constructor(issuer: string, timings: IssuerTimings = ISSUER_TIMINGS) {
    this.issuer = issuer;
    this.#timings = timings;
  }

  /** Discovers the metadata and fetches the keys now (at start), so that the first token does not wait. */
  warm(): Promise<void> {
    return this.#refresh().catch(() => undefined);
  }

  /**
   * The key a token's header names, for jose's jwtVerify.
   *
   * @throws KeyUnavailable when it cannot be had; jose's errors for a header no key fits (its alg).
   */
  readonly key = async (header: JWSHeaderParameters, token: Parameters<LocalKeys>[1]) => {
    if (this.#keys === undefined) await this.#refreshIfAllowed().catch(() => undefined);
    else if (Date.now() - this.#keysAt > this.#timings.keysMaxAgeMs) void this.#refreshIfAllowed().catch(() => {});
    if (this.#keys === undefined) throw new KeyUnavailable('issuer_unreachable', this.#unreachable());
    try {
      return await this.#keys(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
    }
    const kid = typeof header.kid === 'string' ? JSON.stringify(header.kid.slice(0, 64)) : '(none)';
    if (!this.#mayFetch()) {
      throw new KeyUnavailable(
        'unknown_key',
        `the token's key ${kid} is not among the keys of ${this.issuer}` +
          (this.#lastError === undefined ? '' : `, and its key set could not be fetched again: ${this.#lastError}`),
      );
    }
    await this.#refreshIfAllowed().catch(() => undefined);
    try {
      return await this.#keys(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
      throw new KeyUnavailable(
        this.#lastError === undefined ? 'unknown_key' : 'issuer_unreachable',
        this.#lastError === undefined
          ? `the token's key ${kid} is not among the keys of ${this.issuer}`
          : `the token's key ${kid} is not among the keys held for ${this.issuer}, which cannot be reached: ${this.#lastError}`,
      );
    }
  };

  #mayFetch(): boolean {
    return this.#pending !== undefined || Date.now() - this.#lastAttempt >= this.#timings.refetchMs;
  }

  /** A fetch under way is joined; a new one begins only past the bounded rate. */
  async #refreshIfAllowed(): Promise<void> {
    if (this.#mayFetch()) await this.#refresh();
  }

  #refresh(): Promise<void> {
    this.#pending ??= this.#fetch().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  async #fetch(): Promise<void> {
    this.#lastAttempt = Date.now();
    try {
      this.#jwksUri ??= await this.#discover();
      const jwks = await fetchJson(this.#jwksUri, this.#timings.fetch);
      if (!isKeySet(jwks)) throw new Error(`${this.#jwksUri} answered no key set ({"keys": […]})`);
      this.#keys = createLocalJWKSet(jwks);
      this.#keysAt = Date.now();
      this.#lastError = undefined;
    } catch (err) {
      this.#lastError = (err as Error).message;
      throw err;
    }
  }

  /** The issuer's `jwks_uri`, from RFC 8414's metadata, else OpenID's; its `issuer` must be this one exactly. */
  async #discover(): Promise<string> {
    const url = new URL(this.issuer);
    const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
    const places = [
      `${url.origin}/.well-known/oauth-authorization-server${path}`,
      `${url.origin}${path}/.well-known/openid-configuration`,
    ];
    const failures: string[] = [];
    for (const place of places) {
      let metadata: unknown;
      try {
        metadata = await fetchJson(place, this.#timings.fetch);
      } catch (err) {
        failures.push((err as Error).message);
        continue;
      }
      const { issuer, jwks_uri: jwksUri } = (metadata ?? {}) as { issuer?: unknown; jwks_uri?: unknown };
      if (issuer !== this.issuer)
        throw new Error(`${place} names the issuer ${JSON.stringify(issuer)}, not ${JSON.stringify(this.issuer)}`);
      if (typeof jwksUri !== 'string' || !isSafeUrl(jwksUri))
        throw new Error(`${place} names no jwks_uri over https (or http on this machine)`);
      return jwksUri;
    }
    throw new Error(`no authorization server metadata: ${failures.join('; ')}`);
  }

  #unreachable(): string {
    return `the keys of ${this.issuer} cannot be had: ${this.#lastError ?? 'not fetched yet'}`;
  }
}

function isKeySet(value: unknown): value is JSONWebKeySet {
  const keys = (value as { keys?: unknown } | null)?.keys;
  return Array.isArray(keys) && keys.every((key) => key !== null && typeof key === 'object');
}

/** https, or http to this machine (a development IdP, the tests): nothing else is fetched. */
export function isSafeUrl(text: string): boolean {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return false;
  }
  if (url.protocol === 'https:') return true;
  return url.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
}
