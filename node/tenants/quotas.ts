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
  /**
   * Worker time per second, in ms: each request is charged what it took, and a tenant in debt is
   * refused (429 + Retry-After) until the debt is paid back. Up to one time limit's worth is banked. 0: no limit.
   */
  readonly costMs: number;
  /** How long one statement may run, in ms, before it is stopped (504 statement_timeout). */
  readonly statementTimeoutMs: number;
  /** Largest `/query` answer in bytes (413 answer_too_large past it). */
  readonly maxAnswerBytes: number;
  /**
   * Texts the server's embedder may be given for the tenant a second (rows' fields and query words alike), with as
   * many banked; past it a statement is refused (429 + Retry-After) before any call. 0: no limit.
   */
  readonly embedRate: number;
}

/** Which quota refused a request (workers/protocol.ts: a worker's reply names those of its statements). */
export type { QuotaKind } from '../workers/protocol.js';

export const QUOTA_DEFAULTS: Quotas = Object.freeze({
  rate: 100,
  burst: 200,
  maxBytes: 1024 ** 3,
  maxCollections: 100,
  maxRows: 1_000_000,
  costMs: 500,
  statementTimeoutMs: 5_000,
  maxAnswerBytes: 32 * 1024 ** 2,
  embedRate: 200,
});

const KEYS: readonly (keyof Quotas)[] = [
  'rate',
  'burst',
  'maxBytes',
  'maxCollections',
  'maxRows',
  'costMs',
  'statementTimeoutMs',
  'maxAnswerBytes',
  'embedRate',
];
/** Quotas that cannot be 0: a statement needs some time to run, an answer some bytes. */
const POSITIVE: readonly (keyof Quotas)[] = ['statementTimeoutMs', 'maxAnswerBytes'];

/**
 * Quotas from a `PUT /t/<tenant>` body (or a stored one): the fields given over the defaults.
 *
 * @throws FenecError `bad_request` naming the field: an unknown one, a value that is not a whole number ≥ 0.
 */
export function quotasOf(body: unknown, defaults: Quotas): Quotas {
  if (body === undefined || body === null) return defaults;
  if (typeof body !== 'object' || Array.isArray(body))
    throw new FenecError(
      'bad_request',
      'a tenant\'s quotas are a JSON object, e.g. {"rate": 50, "burst": 100, "maxBytes": 1073741824}',
    );
  const quotas: Record<string, number> = { ...defaults };
  for (const [key, value] of Object.entries(body)) {
    if (!KEYS.includes(key as keyof Quotas))
      throw new FenecError('bad_request', `unknown quota ${JSON.stringify(key)}; the quotas are ${KEYS.join(', ')}`);
    if (!Number.isSafeInteger(value) || (value as number) < 0)
      throw new FenecError('bad_request', `quota ${key} takes a whole number ≥ 0, not ${JSON.stringify(value)}`);
    quotas[key] = value as number;
  }
  for (const key of POSITIVE)
    if (quotas[key] === 0) throw new FenecError('bad_request', `quota ${key} takes a whole number ≥ 1, not 0`);
  if (quotas.burst! < 1 && quotas.rate! > 0)
    throw new FenecError('bad_request', 'quota burst must be at least 1 when rate is above 0');
  return Object.freeze(quotas) as unknown as Quotas;
}

/**
 * What flows in at `rate` units per second, up to `capacity`, starting full: a tenant's request
 * tokens, its milliseconds of worker time. Spending may take it below zero, a debt paid back as it flows.
 */
class Bucket {
  #level: number;
  #last: number;

  constructor(
    readonly rate: number,
    readonly capacity: number,
    now = performance.now(),
  ) {
    this.#level = capacity;
    this.#last = now;
  }

  /** The level at `now`: what flowed in since the last reading is added. */
  protected refill(now: number): number {
    this.#level = Math.min(this.capacity, this.#level + ((now - this.#last) / 1000) * this.rate);
    this.#last = now;
    return this.#level;
  }

  protected spend(amount: number): void {
    this.#level -= amount;
  }

  /** The seconds until the level is 1 again, at least 1: Retry-After counts whole seconds. */
  protected wait(): number {
    return Math.max(1, Math.ceil((1 - this.#level) / this.rate));
  }
}

/** A tenant's requests: `rate` tokens per second, up to `capacity` (its burst) banked; each request takes one. */
export class TokenBucket extends Bucket {
  /** Takes one request's token: 0 when taken, else the seconds until one is there (Retry-After). */
  take(now = performance.now()): number {
    if (this.rate === 0) return 1;
    if (this.refill(now) < 1) return this.wait();
    this.spend(1);
    return 0;
  }
}

/**
 * A tenant's worker time: `rate` ms per second flow in, up to `capacity` banked. A request is
 * charged after it ran (its cost is known only then), so one costly statement leaves a debt, and the
 * tenant is refused until the debt is paid back — held by its own spending, not its neighbours'.
 */
export class CostBucket extends Bucket {
  /** 0 when the tenant may run a request now, else the seconds until it may (Retry-After). */
  check(now = performance.now()): number {
    if (this.rate === 0) return 0;
    return this.refill(now) > 0 ? 0 : this.wait();
  }

  /** Charges a request's worker time. */
  charge(ms: number, now = performance.now()): void {
    if (this.rate === 0) return;
    this.refill(now);
    this.spend(ms);
  }
}
