/**
 * The full-text index of a collection's `@text` fields: its SQL, and the fragments of a ranked read.
 *
 * A collection `notes` with `@text` fields `body` (text) and `tags` ([text]) has:
 *
 * - the view `t.notes.src`: `id` and one column per `@text` field, named `f.body`, `f.tags`. A text field
 *   is its column as stored; a [text] field is its elements joined by ", " (`["ops","x"]` is `ops, x`),
 *   so that JSON's quotes and escapes never reach the tokenizer or a snippet.
 * - the FTS5 table `t.notes.fts` over those columns, with the view as its external content
 *   (`content_rowid='id'`): the index holds no second copy of the text; snippets read the rows.
 * - the triggers `t.notes.insert`, `t.notes.update` and `t.notes.delete` on `c_notes`, which keep the
 *   index in step inside the writing statement's own transaction: insert, put (INSERT … ON CONFLICT DO
 *   UPDATE fires the update trigger), set, del and the expiry sweeper's deletes. A rolled-back write
 *   rolls its index changes back with it.
 *
 * Names hold a '.', which a FenecQL name cannot: they clash with no collection's `c_<name>` table, no
 * `u.`/`i.` index, and no FTS5 shadow table (`t.notes.fts_data`, …). A plain `t_<name>` would: the FTS5
 * table `t_notes` owns `t_notes_data`, the name a collection `notes_data` would need. The FTS5 column
 * names `f.<field>` cannot be `rank` or `rowid`, which FTS5 reserves, nor any field's own name.
 *
 * Tokenizer: the collection's (node/search/tokenizers.ts), named in the FTS5 table's `tokenize=` and
 * passed to fenec_snippet, which must tokenize the text as the index did.
 *
 * Keep in mind:
 * - The same `fields`, in the same order, go to textIndexSql, textSearchSql and matchExpression.
 * - A change to the set of `@text` fields is `drop`, the ALTER, then `create` over the new set: SQLite
 *   refuses to drop a column the view or the triggers name.
 * - Never write the table with INSERT OR REPLACE: its implicit delete fires no trigger (unless
 *   recursive_triggers is on), and the index is left corrupt. put's ON CONFLICT DO UPDATE is right.
 * - A deleted row's words stay in the index's segments, unreachable, until FTS5 merges them; `optimize`
 *   (for `compact`) clears them all.
 */
import assert from 'node:assert/strict';
import type { FieldType, TextTokenizer } from '../../shared/fenecql/ast.js';
import { ident } from '../storage/sqlite.js';
import { textColumn } from './text-query.js';
import { FTS5_TOKENIZE } from './tokenizers.js';

export { MAX_QUERY_WORDS, matchExpression, matchTerms, queryWords, textColumn, wordExpressions } from './text-query.js';

/** How many tokens a snippet holds at most (FTS5 allows 1 to 64). */
export const SNIPPET_TOKENS = 20;
/** Between the elements of a [text] field, as indexed and as a snippet shows them. */
export const LIST_SEPARATOR = ', ';

/** An `@text` field: catalog Fields and FieldDefs both fit. */
export interface TextField {
  readonly name: string;
  readonly type: FieldType;
}

export interface TextIndexSql {
  /**
   * Creates the view, the FTS5 table and the triggers, then fills the index from the rows the table
   * holds (`rebuild`, instant on an empty table). Run inside the schema change's transaction.
   */
  readonly create: readonly string[];
  /** Drops triggers, FTS5 table and view, each IF EXISTS (dropping `c_<name>` drops its triggers too). */
  readonly drop: readonly string[];
  /** Indexes again every row of the table (the last statement of `create`; also a repair). */
  readonly rebuild: string;
  /** Merges the index's segments into one (for `compact`). */
  readonly optimize: string;
  /** Fails with SQLITE_CORRUPT_VTAB unless the index holds exactly what the rows say. */
  readonly check: string;
}

function tableName(collection: string): string {
  return ident(`c_${collection}`);
}

/** The quoted name of a collection's FTS5 table; also its hidden column, the left side of MATCH. */
export function textIndexName(collection: string): string {
  return ident(`t.${collection}.fts`);
}

/** A string literal of SQL. */
function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** What a field puts into the index, read from a row (`c`, `new` or `old`). */
function indexedValue(row: string, field: TextField): string {
  const column = `${row}.${ident(field.name)}`;
  if (field.type.kind === 'scalar' && field.type.scalar === 'text') return column;
  assert(
    field.type.kind === 'array' && field.type.element === 'text',
    `@text on ${field.name}: the parser lets it on text and [text] only`,
  );
  // The elements in order, decoded. Not json_each: FTS5 reads its content with virtual tables barred
  // (SQLITE_PREPARE_NO_VTAB), so the view may not use one. Every name is qualified, so no field name
  // can capture it. An empty array or null indexes nothing (null).
  const length = `json_array_length(${column})`;
  return (
    `(WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT k.i + 1 FROM k WHERE k.i + 1 < ${length}) ` +
    `SELECT group_concat(json_extract(${column}, '$[' || k.i || ']'), ${sqlString(LIST_SEPARATOR)} ORDER BY k.i) FROM k WHERE k.i < ${length})`
  );
}

/** The statements that make, fill and drop a collection's text index over `fields` (in index order). */
export function textIndexSql(collection: string, fields: readonly TextField[], tokenizer: TextTokenizer): TextIndexSql {
  assert(fields.length > 0, 'a text index has at least one field');
  const table = tableName(collection);
  const fts = textIndexName(collection);
  const source = ident(`t.${collection}.src`);
  const trigger = (event: string) => ident(`t.${collection}.${event}`);
  const columns = fields.map((f) => ident(textColumn(f.name)));
  const values = (row: string) => fields.map((f) => indexedValue(row, f)).join(', ');
  const insertRow = `INSERT INTO ${fts} (rowid, ${columns.join(', ')}) VALUES (new."id", ${values('new')});`;
  // External content: FTS5 forgets a row by being told the values it indexed, which the old row holds.
  const deleteRow = `INSERT INTO ${fts} (${fts}, rowid, ${columns.join(', ')}) VALUES ('delete', old."id", ${values('old')});`;
  const watched = ['"id"', ...fields.map((f) => ident(f.name))];
  const changed = watched.map((c) => `old.${c} IS NOT new.${c}`).join(' OR ');
  const rebuild = `INSERT INTO ${fts} (${fts}) VALUES ('rebuild')`;
  const create = [
    `CREATE VIEW ${source} AS SELECT c."id" AS "id", ${fields.map((f, i) => `${indexedValue('c', f)} AS ${columns[i]}`).join(', ')} FROM ${table} AS c`,
    `CREATE VIRTUAL TABLE ${fts} USING fts5(${columns.join(', ')}, content=${sqlString(`t.${collection}.src`)}, content_rowid='id', tokenize=${sqlString(FTS5_TOKENIZE[tokenizer])})`,
    `CREATE TRIGGER ${trigger('insert')} AFTER INSERT ON ${table} BEGIN ${insertRow} END`,
    // Only when an indexed column changes: `set notes {year: 2026} where …` leaves the index alone.
    `CREATE TRIGGER ${trigger('update')} AFTER UPDATE OF ${watched.join(', ')} ON ${table} WHEN ${changed} BEGIN ${deleteRow} ${insertRow} END`,
    `CREATE TRIGGER ${trigger('delete')} AFTER DELETE ON ${table} BEGIN ${deleteRow} END`,
    rebuild,
  ];
  const drop = [
    ...['insert', 'update', 'delete'].map((event) => `DROP TRIGGER IF EXISTS ${trigger(event)}`),
    `DROP TABLE IF EXISTS ${fts}`,
    `DROP VIEW IF EXISTS ${source}`,
  ];
  return {
    create,
    drop,
    rebuild,
    optimize: `INSERT INTO ${fts} (${fts}) VALUES ('optimize')`,
    check: `INSERT INTO ${fts} (${fts}, rank) VALUES ('integrity-check', 1)`,
  };
}

export interface TextSearchSql {
  /**
   * The index joined to the rows; the rows' table is aliased `c`. With `where`, the rows are
   * `(SELECT * FROM c_<name> WHERE <where>)`, so that the where's bare column names resolve to the
   * table's columns alone (beside the FTS5 table, a field named `rank` would be ambiguous).
   */
  readonly from: string;
  /** `<fts> MATCH ?`: binds matchExpression(…); null from it means no rows, without a query. */
  readonly match: string;
  /**
   * `<fts>.rank MATCH ?`, after `match`: binds rankFunction(column, …), the scoring of FTS5's `rank`
   * column. Without it FTS5 ranks by its own bm25().
   */
  readonly rank: string;
  /** The FTS5 column the field is (its index among the `@text` fields), or -1 for `match *`. */
  readonly column: number;
}

/**
 * The fragments of a search, `match FIELD …` (field named) or `match * …`, that textTopSql ranks and
 * a count counts: the index joined to the rows (aliased `c`), the MATCH and the rank constraints.
 * Arguments bind in text order: the where's (inside `from`), the MATCH expression, the rank function.
 */
export function textSearchSql(
  collection: string,
  fields: readonly TextField[],
  field: string,
  where?: string,
): TextSearchSql {
  const fts = textIndexName(collection);
  const column = field === '*' ? -1 : fields.findIndex((f) => f.name === field);
  assert(column !== -1 || field === '*', `${field} is not an @text field of ${collection}`);
  const rows =
    where === undefined
      ? `${tableName(collection)} AS c`
      : `(SELECT * FROM ${tableName(collection)} WHERE ${where}) AS c`;
  return {
    from: `${fts} JOIN ${rows} ON c."id" = ${fts}.rowid`,
    match: `${fts} MATCH ?`,
    rank: `${fts}.rank MATCH ?`,
    column,
  };
}

/**
 * The best matches of `match FIELD` or `match *`, by SQLite's sorter:
 *
 *     SELECT <fts>.rowid AS r, fenec_bm25(<fts>, column) AS s FROM <fts> WHERE <match> ORDER BY s, r LIMIT …
 *
 * FTS5 hands the matches out in rowid order and SQLite's sorter keeps the best `LIMIT` of them (s is
 * lower-better, as FTS5 ranks; ties in id order). `ORDER BY rank` would have FTS5 sort every match
 * itself, through a statement it prepares each query: a quarter more for the ranking alone, and more
 * the more rows match (bench/HISTORY.md). With a `where` or an `order`, the rows are joined before
 * the limit. Arguments in text order: the where's, the MATCH expression, the rank function when
 * `scoped`, then those of `page` (`LIMIT … OFFSET …`).
 */
export function textTopSql(
  collection: string,
  fields: readonly TextField[],
  field: string,
  page: string,
  options: TopOptions = {},
): string {
  const search = textSearchSql(collection, fields, field, options.where);
  const fts = textIndexName(collection);
  const matches = options.where === undefined && options.order === undefined ? fts : search.from;
  // Called in the select list, the rank function takes its arguments as SQL; through `rank MATCH ?`,
  // FTS5 prepares a statement to read them, each query (about 5 µs).
  const rank =
    options.scoped === true
      ? { score: `${fts}.rank`, match: ` AND ${search.rank}` }
      : { score: rankFunction(search.column, undefined, fts), match: '' };
  return `SELECT ${fts}.rowid AS r, ${rank.score} AS s FROM ${matches} WHERE ${search.match}${rank.match} ORDER BY ${options.order ?? 's, r'}${page}`;
}

/** The rows among some ids (a JSON array, bound second) that a MATCH expression (bound first) matches. */
export function textMatchAmongSql(collection: string): string {
  const fts = textIndexName(collection);
  return `SELECT rowid FROM ${fts} WHERE ${fts} MATCH ? AND rowid IN (SELECT value FROM json_each(?))`;
}

/**
 * The snippet of `match FIELD` (that field) or `match *` (the best passage of every @text field) for
 * the row `row` (`c`, or the table's name), the words bound at its one `?` (matchTerms): fenec_snippet,
 * FTS5's snippet() made from the row's indexed text (a [text] field's elements joined, as the index
 * has them), for rows a ranking has chosen, with no cursor of the index on them
 * (native/fts5/src/snippet.c).
 */
export function snippetCall(
  fields: readonly TextField[],
  field: string,
  row: string,
  tokenizer: TextTokenizer,
): string {
  const snipped = field === '*' ? fields : fields.filter((f) => f.name === field);
  assert(snipped.length > 0, `${field} is not an @text field`);
  return `fenec_snippet(?, ${sqlString(FTS5_TOKENIZE[tokenizer])}, '**', '**', '…', ${SNIPPET_TOKENS}, ${snipped.map((f) => indexedValue(row, f)).join(', ')})`;
}

/**
 * A ranked read of `match FIELD` or `match *` that snips after its limit (textTopSql's rows, joined to
 * theirs and snipped by snippetCall):
 *
 *     SELECT <columns>, fenec_snippet(?, …, c."body") AS "_snippet", (- top.s) AS "_score"
 *     FROM (<textTopSql>) AS top JOIN c_<name> AS c ON c."id" = top.r ORDER BY top.s, top.r
 *
 * Arguments: the words (matchTerms), then textTopSql's.
 */
export function textTopSelect(
  collection: string,
  fields: readonly TextField[],
  field: string,
  columns: readonly string[],
  page: string,
  tokenizer: TextTokenizer,
  options: TopOptions = {},
): string {
  const top = textTopSql(collection, fields, field, page, options);
  const list = [
    ...columns,
    `${snippetCall(fields, field, 'c', tokenizer)} AS "_snippet"`,
    '(- top.s) AS "_score"',
  ].join(', ');
  return `SELECT ${list} FROM (${top}) AS top JOIN ${tableName(collection)} AS c ON c."id" = top.r ORDER BY ${options.order ?? 'top.s, top.r'}`;
}

export interface TopOptions {
  /** The rows' condition (over the table's columns), applied before the limit. */
  readonly where?: string;
  /**
   * `order`'s sort, over the rows as `c` (`c."year" DESC, c."id" ASC`), in place of the score's:
   * the rows are joined before the limit, and the chosen ones sorted again after theirs are read.
   */
  readonly order?: string;
  /** The rank function is bound (`rank MATCH ?`: rankFunction with statistics), not written in. */
  readonly scoped?: boolean;
}

/**
 * The statistics BM25 takes, counted over some of the rows rather than all: N, the rows' total
 * length in the searched column(s), and per word n, the rows holding it. See rankFunction.
 */
export interface TextStats {
  readonly rows: number;
  readonly tokens: number;
  /** One count per word of the query, in its order. */
  readonly hits: readonly number[];
}

/**
 * The rank function `rank MATCH ?` binds: `fenec_bm25(column)` over the whole collection's statistics,
 * or with `stats`, over theirs (native/fts5/src/fenec_fts5.c). Every argument is a whole number. With
 * `fts`, the call itself, for a select list: `fenec_bm25(<fts>, column)`.
 */
export function rankFunction(column: number, stats?: TextStats, fts?: string): string {
  const args = stats === undefined ? [column] : [column, stats.rows, stats.tokens, ...stats.hits];
  assert(args.every(Number.isSafeInteger), 'the rank function takes whole numbers');
  return `fenec_bm25(${[...(fts === undefined ? [] : [fts]), ...args].join(', ')})`;
}

export interface TextStatsSql {
  /** `count(*)` and total length (in `column`) of the rows `where` holds: N and the sum avglen divides. */
  readonly size: string;
  /** The rows `where` holds that a MATCH expression finds: n, bound once per word of the query. */
  readonly hits: string;
}

/**
 * The statements that count TextStats over the rows of `collection` that `where` (over its table's
 * columns) holds. Arguments: the where's; `hits` then the word's MATCH expression (wordExpressions).
 */
export function textStatsSql(collection: string, column: number, where: string): TextStatsSql {
  const fts = textIndexName(collection);
  const rows = `(SELECT "id" FROM ${tableName(collection)} WHERE ${where}) AS c`;
  return {
    size: `SELECT count(*), coalesce(sum(fenec_doclen(d."sz", ${column})), 0) FROM ${rows} JOIN ${ident(`t.${collection}.fts_docsize`)} AS d ON d."id" = c."id"`,
    hits: `SELECT count(*) FROM ${fts} JOIN ${rows} ON c."id" = ${fts}.rowid WHERE ${fts} MATCH ?`,
  };
}
