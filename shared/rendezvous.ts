/**
 * Rendezvous (highest random weight) hashing: the candidate whose sha256(name, key) is highest. Everyone who
 * knows the same candidates picks the same one without talking to anyone else, and adding a candidate moves
 * only the keys it now wins. Routers place tenants on nodes with it, and replicated nodes pick among the live
 * ones the node that takes a tenant without an owner: both must agree, so both use this.
 */
import { createHash } from 'node:crypto';

/** The candidate rendezvous hashing picks for `key` (undefined when there is none); `nameOf` gives its name. */
export function rendezvous<T>(key: string, candidates: Iterable<T>, nameOf: (candidate: T) => string): T | undefined {
  let best: T | undefined;
  let bestWeight = -1n;
  for (const candidate of candidates) {
    const weight = createHash('sha256').update(nameOf(candidate)).update('\0').update(key).digest().readBigUInt64BE(0);
    if (weight > bestWeight) {
      best = candidate;
      bestWeight = weight;
    }
  }
  return best;
}
