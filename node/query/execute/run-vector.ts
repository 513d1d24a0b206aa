/**
 * Runs a vector plan: the ranking (the field's Faiss index, or an exact scan of the rows that pass),
 * fused with the text ranking when the statement says `fuse`, then one read of the rows chosen.
 */
import { FenecError } from '../../../shared/errors.js';
import { textMatchAmongSql } from '../../search/text-index.js';
import type { SqlValue } from '../../storage/codec.js';
import { exactSearch, queryVector, type ScoredRow, type VectorStore } from '../../vector/store.js';
import type { StatementCache } from './statement-cache.js';
import { withScopedRank } from './scoped-rank.js';
import type { OutputColumn, VectorPlan } from '../plan/plan-types.js';
import { evaluate, type BindContext } from '../compile/evaluate.js';
import { bindArg, bindArgs } from '../compile/args.js';

/** Rows a `near` answers when the statement gives no limit. */
export const DEFAULT_NEAR_LIMIT = 10;
/** Reciprocal rank fusion's constant: a row ranked r-th (from 1) by one ranking scores 1 / (RRF_K + r). */
export const RRF_K = 60;
/** Candidates each ranking brings to a fusion: this many times the rows asked for, and at least FUSE_MIN. */
export const FUSE_DEPTH = 3;
export const FUSE_MIN = 50;

export interface VectorRunner {
  readonly statements: StatementCache;
  readonly vectors: VectorStore | undefined;
}

/**
 * The query vector, checked before any row is read (length, float32 range, a zero vector under cosine):
 * a wrong one is refused alike whether the collection holds rows or none, and whatever the filter passes.
 */
function nearVector(plan: VectorPlan, ctx: BindContext): number[] {
  let value = evaluate(plan.vector, ctx);
  // Words, where the field embeds its texts: their embedding is the query (a vector the embedder made, checked alike).
  if (typeof value === 'string' && ctx.embedQuery !== undefined)
    value = Array.from(ctx.embedQuery(plan.field, plan.embed, value));
  if (!Array.isArray(value) || !value.every((x) => typeof x === 'number')) {
    throw new FenecError(
      'type_mismatch',
      `near ${plan.field} takes vector<${plan.dims}>, an array of ${plan.dims} numbers${plan.embed === undefined ? '' : ', or words to embed'}`,
    );
  }
  queryVector(value, plan.dims, plan.field, plan.metric);
  return value;
}

/**
 * Rows with the same score come in id order, as an exact scan gives them; the index may meet tied rows
 * in any order, so it is asked for a few more than k and its answer sorted.
 */
const TIE_MARGIN = 16;

function byScoreThenId(a: ScoredRow, b: ScoredRow): number {
  return b.score - a.score || a.rowId - b.rowId;
}

/** The k rows nearest the query among those that pass the filter, best first. */
function vectorRanking(
  plan: VectorPlan,
  query: number[],
  k: number,
  runner: VectorRunner,
  ctx: BindContext,
): ScoredRow[] {
  if (plan.indexed && runner.vectors !== undefined) {
    const allowed =
      plan.passing === undefined
        ? null
        : (runner.statements.get(plan.passing.sql).pluck(true).all(bindArgs(plan.passing.args, ctx)) as number[]);
    if (allowed !== null && allowed.length === 0) return [];
    return runner.vectors
      .search(plan.collection, plan.field, query, k + TIE_MARGIN, allowed)
      .sort(byScoreThenId)
      .slice(0, k);
  }
  const rows = runner.statements
    .get(plan.scan.sql)
    .raw(true)
    .iterate(bindArgs(plan.scan.args, ctx)) as IterableIterator<[number, Buffer]>;
  return exactSearch(
    (function* () {
      for (const [rowId, blob] of rows) yield { rowId, blob };
    })(),
    query,
    plan.metric,
    k,
    plan.field,
  );
}

/** Reciprocal rank fusion: each ranking adds 1 / (RRF_K + rank) to the rows it holds. */
function fuse(rankings: readonly (readonly number[])[]): ScoredRow[] {
  const scores = new Map<number, number>();
  for (const ranking of rankings) {
    ranking.forEach((rowId, index) => scores.set(rowId, (scores.get(rowId) ?? 0) + 1 / (RRF_K + index + 1)));
  }
  return [...scores].map(([rowId, score]) => ({ rowId, score })).sort(byScoreThenId);
}

/**
 * The chosen rows, read in one statement, in the ranking's order unless `order` gave another. With
 * `text`, the read makes the snippets (the column after the row's), kept for the rows the text found.
 */
function readRows(
  plan: VectorPlan,
  chosen: readonly ScoredRow[],
  found: ReadonlySet<number> | undefined,
  runner: VectorRunner,
  ctx: BindContext,
): Record<string, unknown>[] {
  const ids = JSON.stringify(chosen.map((r) => r.rowId));
  const raw = runner.statements
    .get(plan.read)
    .raw(true)
    .all(plan.text === undefined ? [ids] : [bindArg(plan.text.words, ctx), ids]) as unknown[][];
  const scores = new Map(chosen.map((r) => [r.rowId, r.score]));
  const rows = raw.map((values) => toRow(plan.columns, values, found, scores));
  if (plan.ordered) return rows;
  const rank = new Map(chosen.map((r, i) => [r.rowId, i]));
  return rows.sort((a, b) => rank.get(a.id as number)! - rank.get(b.id as number)!);
}

/**
 * Adds to `found` the chosen rows the text matches that its ranking did not bring: cut at its depth, it
 * leaves out a row far down by its words (a long text) that the vector brought, and that row holds the
 * words as well, so it has a snippet. One lookup of the index, for the rows answered alone.
 */
function matchedAmong(
  collection: string,
  match: SqlValue,
  chosen: readonly ScoredRow[],
  found: Set<number>,
  runner: VectorRunner,
): void {
  const rest = chosen.filter((r) => !found.has(r.rowId)).map((r) => r.rowId);
  if (rest.length === 0) return;
  const matched = runner.statements
    .get(textMatchAmongSql(collection))
    .pluck(true)
    .all([match, JSON.stringify(rest)]) as number[];
  for (const id of matched) found.add(id);
}

function toRow(
  columns: readonly OutputColumn[],
  values: unknown[],
  found: ReadonlySet<number> | undefined,
  scores: ReadonlyMap<number, number>,
): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  columns.forEach((column, c) => {
    row[column.key] = column.decode === null ? values[c] : column.decode(values[c]);
  });
  const id = values[0] as number;
  // Fused rows the text does not match (found by their vector alone) have no passage to show.
  if (found !== undefined) row.snippet = found.has(id) ? values[columns.length] : null;
  row._score = scores.get(id);
  return row;
}

export function runVector(plan: VectorPlan, ctx: BindContext, runner: VectorRunner): { [key: string]: unknown } {
  const query = nearVector(plan, ctx);
  const limit = plan.limit === undefined ? DEFAULT_NEAR_LIMIT : (bindArg(plan.limit, ctx) as number);
  const offset = plan.offset === undefined ? 0 : (bindArg(plan.offset, ctx) as number);
  const wanted = limit + offset;
  let chosen: ScoredRow[];
  let found: Set<number> | undefined;
  let match: SqlValue = null;
  if (plan.text === undefined) {
    chosen = vectorRanking(plan, query, wanted, runner, ctx);
  } else {
    const depth = Math.max(FUSE_MIN, FUSE_DEPTH * wanted);
    match = bindArg(plan.text.query, ctx);
    let textRows: number[] = [];
    if (match !== null) {
      const { rank: scoring } = plan.text;
      const rank =
        scoring === undefined ? [] : [bindArg(scoring.arg, withScopedRank(scoring.scoped, ctx, runner.statements))];
      textRows = runner.statements
        .get(plan.text.sql)
        .pluck(true)
        .all([...bindArgs(plan.text.filterArgs, ctx), match, ...rank, depth]) as number[];
    }
    found = new Set(textRows);
    const vectorRows = vectorRanking(plan, query, depth, runner, ctx);
    chosen = fuse([textRows, vectorRows.map((r) => r.rowId)]);
  }
  chosen = chosen.slice(offset, wanted);
  if (plan.count) return { count: chosen.length };
  if (chosen.length === 0) return { rows: [], count: 0 };
  if (found !== undefined && match !== null) matchedAmong(plan.collection, match, chosen, found, runner);
  const rows = readRows(plan, chosen, found, runner, ctx);
  return { rows, count: rows.length };
}
