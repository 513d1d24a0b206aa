/**
 * The name a mistyped one most likely meant: `note` → `notes`, `Notes` → `notes`, `memmories` →
 * `memories`. Callers pass only the names the asker may know of (a token's policy hides the rest),
 * so that a suggestion never reveals a name it could not have read.
 */

/** A longer name is not compared: no name of ours is longer, and the cost is its length squared. */
const MAX_LENGTH = 64;

/**
 * The one of `names` nearest to `name`, or undefined when none is near: the same name in other
 * letter case first, then the fewest edits (insertions, deletions, substitutions) — one for a name
 * of up to four characters, two for a longer one. Ties go to the name that sorts first.
 */
export function nearestName(names: Iterable<string>, name: string): string | undefined {
  if (name.length > MAX_LENGTH) return undefined;
  const lower = name.toLowerCase();
  const limit = lower.length <= 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of [...names].sort()) {
    if (candidate === name) continue;
    const other = candidate.toLowerCase();
    if (other === lower) return candidate;
    if (Math.abs(other.length - lower.length) >= bestDistance || other.length > MAX_LENGTH) continue;
    const distance = editDistance(lower, other);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Levenshtein distance, one row at a time. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min(substitution, previous[j]! + 1, row[j - 1]! + 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}

/** The hint of an unknown name: "did you mean X?" when one is near, else `otherwise`. */
export function didYouMean(names: Iterable<string>, name: string, otherwise: string): string {
  const near = nearestName(names, name);
  if (near === undefined) return otherwise;
  if (near.toLowerCase() === name.toLowerCase()) return `names are case-sensitive: did you mean ${near}?`;
  return `did you mean ${near}? ${otherwise}`;
}
