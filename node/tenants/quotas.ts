/**
 * A tenant's quotas, and the token bucket that holds it to its request rate. Each tenant has its
 * own bucket, checked in constant time before its request is read: a tenant at its quota is refused
 * at once and never queues behind, or in front of, another tenant's work.
 */
import { FenecError } from '../../shared/errors.js';

export interface Quotas {
  /** Requests per second, /query and MCP calls alike; 0 pauses the tenant (every request 429). */
  readonly rate: number;
  /** Requests that may come at once above the rate. */
  readonly burst: number;
  /** Largest size of the tenant's file, in bytes; writes past it are refused (507). 0: no limit. */
  readonly maxBytes: number;
  /** Most collections; a create past it is refused (429). 0: no limit. */
  readonly maxCollections: number;
  /** Most rows over all collections; inserts past it are refused (429). 0: no limit. */
  readonly maxRows: number;
}

/** Which quota refused a request: the label of fenec_tenant_quota_refusals_total. */
export type QuotaKind = 'rate' | 'bytes' | 'collections' | 'rows';

export const QUOTA_DEFAULTS: Quotas = Object.freeze({ rate: 100, burst: 200, maxBytes: 1024 ** 3, maxCollections: 100, maxRows: 1_000_000 });

const KEYS: readonly (keyof Quotas)[] = ['rate', 'burst', 'maxBytes', 'maxCollections', 'maxRows'];

/**
 * Quotas from a `PUT /t/<tenant>` body (or a stored one): the fields given over the defaults.
 *
 * @throws FenecError `bad_request` naming the field: an unknown one, a value that is not a whole number ≥ 0.
 */
export function quotasOf(body: unknown, defaults: Quotas): Quotas {
  if (body === undefined || body === null) return defaults;
  if (typeof body !== 'object' || Array.isArray(body)) throw new FenecError('bad_request', 'a tenant\'s quotas are a JSON object, e.g. {"rate": 50, "burst": 100, "maxBytes": 1073741824}');
  const quotas: Record<string, number> = { ...defaults };
  for (const [key, value] of Object.entries(body)) {
    if (!KEYS.includes(key as keyof Quotas)) throw new FenecError('bad_request', `unknown quota ${JSON.stringify(key)}; the quotas are ${KEYS.join(', ')}`);
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw new FenecError('bad_request', `quota ${key} takes a whole number ≥ 0, not ${JSON.stringify(value)}`);
    quotas[key] = value as number;
  }
  if (quotas.burst! < 1 && quotas.rate! > 0) throw new FenecError('bad_request', 'quota burst must be at least 1 when rate is above 0');
  return Object.freeze(quotas) as unknown as Quotas;
}

export class TokenBucket {
  #tokens: number;
  #last: number;

  constructor(readonly rate: number, readonly burst: number, now = performance.now()) {
    this.#tokens = burst;
    this.#last = now;
  }

  /** Takes one request's token: 0 when taken, else the seconds until one is there (Retry-After). */
  take(now = performance.now()): number {
    if (this.rate === 0) return 1;
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) / 1000) * this.rate);
    this.#last = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.max(1, Math.ceil((1 - this.#tokens) / this.rate));
  }
}
