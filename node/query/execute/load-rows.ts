/**
 * The rows of a load: an `insert into C $N` whose parameter holds a list of rows, written a chunk at a time while the
 * embedder makes the vectors of the next chunk (node/embedder/load.ts, database.ts).
 */
import type { InsertStmt, PutStmt } from '../../../shared/fenecql/ast.js';
import type { Answer } from '../../../shared/answer.js';
import { FenecError } from '../../../shared/errors.js';
import { EmbedderError } from '../../embedder/errors.js';
import { EmbeddingsWanted, type EmbeddingRound } from '../../embedder/round.js';
import type { Collection, EmbedSpec, Field } from '../../schema/catalog.js';
import { embeddedFields, embeddedText } from './embed-rows.js';

/**
 * One pass of a load (node/embedder/load.ts): the rows from the first not written yet up to the first whose vectors
 * are not in are written by `write` (the statement over their part of the parameters), in a transaction of their own;
 * the pass then stops for the next chunk, until the last row is written and the statement answers every row's id. A
 * chunk refused is refused whole, saying what was committed before it.
 */
export function loadPass(
  round: EmbeddingRound,
  list: { readonly index: number; readonly rows: readonly unknown[]; readonly params: readonly unknown[] },
  collection: Collection,
  write: (params: readonly unknown[]) => Answer,
): Answer {
  const load = round.load!;
  const from = load.committed;
  const ready = from + readyRows(list.rows, from, embeddedFields(collection), (text) => round.has(text));
  // The chunk runs as any insert, which stops when its round wants more: it wants nothing until the chunk is in.
  round.more = ready === from;
  if (round.more) throw new EmbeddingsWanted();
  const part = [...list.params];
  part[list.index - 1] = list.rows.slice(from, ready);
  let answer: Answer;
  load.writing = true;
  try {
    answer = write(part);
  } catch (err) {
    throw committedBefore(err, from);
  } finally {
    load.writing = false;
  }
  round.more = ready < list.rows.length;
  load.committed = ready;
  load.ids.push(...(answer as { ids: number[] }).ids);
  if (round.more) throw new EmbeddingsWanted();
  return { count: list.rows.length, ids: load.ids };
}

/** The parameter's list of rows an insert writes (its place among the parameters), or undefined for any other write. */
export function bulkRows(
  statement: InsertStmt | PutStmt,
  params: readonly unknown[],
): { readonly index: number; readonly rows: readonly unknown[]; readonly params: readonly unknown[] } | undefined {
  if (statement.kind !== 'Insert') return undefined;
  const written = statement.rows;
  if (!('kind' in written) || written.kind !== 'Param') return undefined;
  const index = written.index;
  const rows = params[index - 1];
  return Array.isArray(rows) ? { index, rows, params } : undefined;
}

/**
 * How many rows from `from` on have every vector they need (`has` tells whether a text's vector is in): the chunk a
 * load pass writes.
 */
export function readyRows(
  rows: readonly unknown[],
  from: number,
  fields: readonly { field: Field; spec: EmbedSpec }[],
  has: (text: string) => boolean,
): number {
  let at = from;
  for (; at < rows.length; at++) {
    const row = rows[at];
    // A row that is no object is the insert's to refuse, with its place.
    if (typeof row !== 'object' || row === null || Array.isArray(row)) continue;
    const record = row as Record<string, unknown>;
    const missing = fields.some(({ field, spec }) => {
      if (field.name in record) return false;
      const text = embeddedText(spec, (name) => record[name]);
      return text !== undefined && !has(text);
    });
    if (missing) break;
  }
  return at - from;
}

/**
 * The refusal of a load's chunk (or of its embedding), saying how many rows were committed before it and naming the
 * refused row by its place in the whole list.
 */
export function committedBefore(err: unknown, committed: number, offset = committed): unknown {
  if (!(err instanceof FenecError)) return err;
  const message =
    committed === 0
      ? err.message
      : `${err.message.replace(/; nothing was written$/, '')}; the ${committed} rows before it were committed, none after`;
  const options = {
    hint: err.hint,
    position: err.position,
    row: err.row === undefined ? undefined : err.row + offset,
    committed,
    cause: err.cause,
  };
  if (err instanceof EmbedderError)
    return new EmbedderError(err.code as 'embedder_failed', message, {
      ...options,
      retryAfterSeconds: err.retryAfterSeconds,
    });
  return new FenecError(err.code, message, options);
}
