/**
 * FTS5's own ranked read of a search, the reference the product's read (node/search/text-index.ts,
 * textTopSelect) is held to: FTS5 sorting every match by its rank column, and its snippet() on the
 * cursor of the index.
 */
import { SNIPPET_TOKENS, textIndexName, type TextSearchSql } from '../../node/search/text-index.js';

/**
 * `SELECT <columns>, "_score", "_snippet" … ORDER BY rank LIMIT ? OFFSET ?` (or `order`, SQL over `c`).
 * Arguments: the search's (where's, MATCH expression, rank function), then limit and offset.
 */
export function fts5RankedRead(
  collection: string,
  search: TextSearchSql,
  columns: readonly string[],
  order?: string,
): string {
  const fts = textIndexName(collection);
  const snippet = `snippet(${fts}, ${search.column}, '**', '**', '…', ${SNIPPET_TOKENS})`;
  return `SELECT ${[...columns, `(- ${fts}.rank) AS "_score"`, `${snippet} AS "_snippet"`].join(', ')} FROM ${search.from} WHERE ${search.match} AND ${search.rank} ORDER BY ${order ?? `${fts}.rank`} LIMIT ? OFFSET ?`;
}
