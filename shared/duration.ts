/**
 * Durations as fenecdb writes them everywhere — FenecQL literals (`30m`), the MCP memory's
 * `expires_in`, the command lines' `--statement-timeout 5s`: a whole number and a unit.
 */

/**
 * Duration units and their length in milliseconds, largest first (FenecQL prints a duration in the largest that divides
 * it).
 */
export const DURATION_UNITS: ReadonlyArray<readonly [unit: string, ms: number]> = [
  ['w', 604_800_000],
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
];

/** The units as a message lists them, shortest first. */
export const DURATION_UNIT_LIST = DURATION_UNITS.map(([unit]) => unit)
  .reverse()
  .join(', ');

/** A duration's text as a regular expression (a JSON Schema `pattern`: the MCP memory's `expires_in`). */
export const DURATION_PATTERN = `^[0-9]+(${DURATION_UNITS.map(([unit]) => unit)
  .reverse()
  .join('|')})$`;

/** The length of one `unit` in milliseconds, or undefined for a word that is not a unit. */
export function unitMs(unit: string): number | undefined {
  return DURATION_UNITS.find(([name]) => name === unit)?.[1];
}

/**
 * Milliseconds of `text`, a whole number immediately followed by a unit (`500ms`, `30m`, `7d`), or
 * undefined when it is not one or is past 2^53 ms. A pure function: each caller says what it refuses.
 */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)([a-z]+)$/.exec(text);
  const unit = match === null ? undefined : unitMs(match[2]!);
  if (unit === undefined) return undefined;
  const ms = Number(match![1]) * unit;
  return Number.isSafeInteger(ms) ? ms : undefined;
}
