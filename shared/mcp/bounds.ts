/**
 * The bounds of a tool's answer: 100 rows and 64 KB, about 16 000 tokens of JSON. Past either the
 * answer is refused whole — a model told nothing of a cut takes half an answer for the whole — with
 * the figures, and a narrower call worked out from the rows themselves that would fit: the same call
 * with a `limit`, and fewer `fields` when the rows are wide.
 */
import { FenecError } from '../errors.js';
import type { Answer } from '../answer.js';

/** What a tool's answer may be past: beyond these it is refused whole, with a narrower call to make. */
export const BOUNDS = Object.freeze({ rows: 100, bytes: 64 * 1024 });

/** A narrower call is sized to this share of the byte bound, leaving room for rows that differ a little. */
const HEADROOM = 0.9;
/** Keys a read's rows carry that are not fields to choose: the id, and what match and near add. */
const KEPT_KEYS = new Set(['id', '_score', 'snippet']);

/** How the tool asks for fewer rows or fields: the call to suggest, or undefined when it cannot. */
export interface Narrowing {
  /** The same call with this limit and, when given, only these fields. */
  call(
    limit: number,
    fields: readonly string[] | undefined,
  ): { readonly name: string; readonly arguments: Readonly<Record<string, unknown>> } | undefined;
  /** The tool lets a call choose its fields (search's fields, query's select). */
  readonly choosesFields: boolean;
}

/** A tool that cannot narrow its call (a schema listing, a write's ids): a refusal names no call. */
export const NO_NARROWING: Narrowing = Object.freeze({ choosesFields: false, call: () => undefined });

export type Bounded =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly error: FenecError; readonly details: Readonly<Record<string, unknown>> };

/**
 * Checks an answer against the bounds. `found` is how many rows the statement would answer without
 * the bound (it is run with a limit of 101: the 101st row says "more"), when it could be counted.
 * `pages`: the read pages, so the narrower call's answer carries next_cursor to read the rest.
 */
export function checkBounds(
  tool: string,
  answer: Answer,
  narrowing: Narrowing,
  found: () => number | undefined,
  pages = false,
): Bounded {
  const rows = Array.isArray(answer.rows) ? (answer.rows as Record<string, unknown>[]) : undefined;
  if (rows !== undefined && rows.length > BOUNDS.rows) {
    // The rows past the bound are not read, so their bytes are no figure to give.
    const total = found();
    const counted = total === undefined ? `more than ${BOUNDS.rows} rows` : `${figure(total)} rows`;
    return refuse(
      tool,
      `the answer would be ${counted}`,
      rows,
      narrowing,
      pages,
      total === undefined ? {} : { rows: total },
    );
  }
  const text = JSON.stringify(answer);
  // Each character is at least a byte: the exact count is needed only near the bound.
  const bytes = text.length * 3 <= BOUNDS.bytes ? text.length : Buffer.byteLength(text);
  if (bytes <= BOUNDS.bytes) return { ok: true, text };
  const where = rows === undefined ? '' : ` in ${figure(rows.length)} row${rows.length === 1 ? '' : 's'}`;
  return refuse(
    tool,
    `the answer would be ${figure(bytes)} bytes${where}`,
    rows ?? [],
    narrowing,
    pages,
    rows === undefined ? { bytes } : { rows: rows.length, bytes },
  );
}

/** What a refusal says of the answer refused: only the figures known (the rows found, the bytes made). */
interface Figures {
  readonly rows?: number;
  readonly bytes?: number;
}

function refuse(
  tool: string,
  what: string,
  rows: readonly Record<string, unknown>[],
  narrowing: Narrowing,
  pages: boolean,
  figures: Figures,
): Bounded {
  const options = narrowerCalls(rows, narrowing);
  const bound = `${BOUNDS.rows} rows and ${figure(BOUNDS.bytes)} bytes (64 KB)`;
  const message = `${tool}: ${what}, past the bound of ${bound}; it is refused whole, never cut`;
  const tries = options.map((o) => JSON.stringify(o.arguments));
  const fits = pages
    ? 'it fits, and its answer carries next_cursor when more rows follow: call again with it as cursor to read on'
    : 'it fits';
  const hint =
    options.length === 0
      ? 'narrow the call: a filter or where that matches fewer rows, or fewer fields'
      : `call ${tool} with ${tries.join(', or with ')} — ${fits} — or with a filter that matches fewer rows`;
  const details = {
    ...figures,
    bound: { rows: BOUNDS.rows, bytes: BOUNDS.bytes },
    ...(options.length === 0 ? {} : { try: options[0] }),
  };
  return { ok: false, error: new FenecError('answer_too_large', message, { hint }), details };
}

/**
 * Narrower calls that fit, best first: the fewest fields dropped that let the most rows through,
 * then every field with fewer rows.
 */
function narrowerCalls(
  rows: readonly Record<string, unknown>[],
  narrowing: Narrowing,
): { name: string; arguments: Readonly<Record<string, unknown>> }[] {
  const budget = Math.floor(BOUNDS.bytes * HEADROOM);
  const most = Math.min(rows.length, BOUNDS.rows);
  const calls: { name: string; arguments: Readonly<Record<string, unknown>> }[] = [];
  const whole = rowsThatFit(rows, undefined, budget, most);

  if (narrowing.choosesFields && rows.length > 0) {
    const sizes = fieldSizes(rows.slice(0, most));
    const chosen = [...sizes.keys()];
    // Drop the widest field while doing so lets more rows through, until every row fits.
    const byWidth = [...sizes.entries()].sort((a, b) => b[1] - a[1]).map(([name]) => name);
    let fitting = whole;
    let fields: string[] | undefined;
    for (const widest of byWidth) {
      if (fitting >= most) break;
      chosen.splice(chosen.indexOf(widest), 1);
      const n = rowsThatFit(rows, chosen, budget, most);
      if (n > fitting) {
        fitting = n;
        fields = [...chosen];
      }
    }
    if (fields !== undefined && fitting > 0) {
      const call = narrowing.call(fitting, fields);
      if (call !== undefined) calls.push(call);
    }
  }
  if (whole > 0) {
    const call = narrowing.call(whole, undefined);
    if (call !== undefined) calls.push(call);
  }
  return calls;
}

/** Bytes each choosable field takes over the rows, in the order the first row has them. */
function fieldSizes(rows: readonly Record<string, unknown>[]): Map<string, number> {
  const sizes = new Map<string, number>();
  for (const row of rows) {
    for (const [key, value] of Object.entries(row)) {
      if (KEPT_KEYS.has(key)) continue;
      sizes.set(
        key,
        (sizes.get(key) ?? 0) + key.length + 4 + (value === undefined ? 0 : Buffer.byteLength(JSON.stringify(value))),
      );
    }
  }
  return sizes;
}

/** The most leading rows (up to `most`) whose answer, with only `fields` kept, is within `budget` bytes. */
function rowsThatFit(
  rows: readonly Record<string, unknown>[],
  fields: readonly string[] | undefined,
  budget: number,
  most: number,
): number {
  let bytes = '{"rows":[],"count":100}'.length;
  for (let i = 0; i < most; i++) {
    const row = rows[i]!;
    const kept =
      fields === undefined
        ? row
        : Object.fromEntries(Object.entries(row).filter(([key]) => KEPT_KEYS.has(key) || fields.includes(key)));
    bytes += Buffer.byteLength(JSON.stringify(kept)) + (i === 0 ? 0 : 1);
    if (bytes > budget) return i;
  }
  return most;
}

/** 65536 → "65 536": figures a model reads at a glance. */
function figure(n: number): string {
  return n.toLocaleString('en-US').replace(/,/g, ' ');
}
