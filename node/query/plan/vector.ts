/**
 * `near` (nearest neighbours of a vector field) and `match … near … fuse` (reciprocal rank fusion of
 * the text and the vector rankings) into plans. Their rankings come from outside SQL (Faiss, or an
 * exact scan), so a plan holds the SQL around the ranking: the rows that pass the filter, the text
 * ranking's candidates, and the read of the rows chosen.
 */
import type { GetStmt, Metric } from '../../../shared/fenecql/ast.js';
import { FenecError } from '../../../shared/errors.js';
import { printExpr } from '../../../shared/fenecql/print.js';
import { snippetCall, textTopSql } from '../../search/text-index.js';
import { embedOf, fieldSql, type Collection, type Field } from '../../schema/catalog.js';
import type { Fragment } from '../compile/compiler.js';
import type { OutputColumn, VectorPlan } from './plan-types.js';
import type { MatchQuery } from './text-rank.js';
import { isValue } from '../compile/evaluate.js';
import type { Arg } from '../compile/args.js';

/** How a plain read would answer: the fields, their output columns, its order and its page. */
export interface ReadShape {
  readonly fields: readonly Field[];
  readonly columns: readonly OutputColumn[];
  /** ORDER BY of the `order` clause over the table's columns, when the statement has one. */
  readonly order: string | undefined;
  readonly limit: Arg | undefined;
  readonly offset: Arg | undefined;
}

function metricOf(field: Field): { metric: Metric; indexed: boolean } {
  const hnsw = field.def.annotations.find((a) => a.kind === 'hnsw');
  // Without @hnsw, near scans the rows exactly, by cosine similarity (what embeddings are compared by).
  return hnsw?.kind === 'hnsw' ? { metric: hnsw.metric, indexed: true } : { metric: 'cosine', indexed: false };
}

export function planVector(
  stmt: GetStmt,
  collection: Collection,
  field: Field,
  filter: Fragment | undefined,
  shape: ReadShape,
  textQuery: MatchQuery | undefined,
): VectorPlan {
  const near = stmt.near!;
  if (field.type.kind !== 'vector') {
    const vectors = collection.fields.filter((f) => f.isVector).map((f) => f.name);
    throw new FenecError('invalid_statement', `near ${near.field}: ${near.field} is not a vector field`, {
      position: near.pos,
      hint:
        vectors.length === 0
          ? `${collection.name} has no vector<N> field`
          : `the vector fields of ${collection.name}: ${vectors.join(', ')}`,
    });
  }
  if (!isValue(near.vector)) {
    throw new FenecError(
      'type_mismatch',
      `near takes a vector, as an array of numbers or a parameter; ${printExpr(near.vector)} is neither`,
      {
        position: near.vector.pos,
      },
    );
  }
  if (stmt.match !== undefined && !stmt.fuse) {
    throw new FenecError(
      'invalid_statement',
      'match and near together need fuse, which fuses their two rankings into one',
      {
        position: near.pos,
        hint: `get ${collection.name} match ${stmt.match.field} "…" near ${near.field} [...] fuse limit 10`,
      },
    );
  }
  const vector = near.vector;
  const { metric, indexed } = metricOf(field);
  const where = filter === undefined ? '' : ` WHERE ${filter.sql}`;
  const columns = ['"id"', ...shape.fields.map((f) => fieldSql(f, collection.table))];
  let text: VectorPlan['text'];
  if (stmt.match !== undefined && textQuery !== undefined) {
    const field = stmt.match.field;
    // The text's candidates by SQLite's sorter (`+?`, not `?`: a bare `?` LIMIT is read while planning,
    // and binding it expires the statement: read.ts, countSql); the read snips the rows kept.
    const top = textTopSql(collection.name, collection.textFields, field, ' LIMIT +?', {
      where: filter?.sql,
      scoped: textQuery.rank !== undefined,
    });
    text = {
      sql: `SELECT r FROM (${top})`,
      filterArgs: filter?.args ?? [],
      query: textQuery.expression,
      rank: textQuery.rank,
      words: textQuery.snippetWords,
    };
    columns.push(snippetCall(collection.textFields, field, collection.table, collection.textTokenizer));
  }
  const list = columns.join(', ');
  const embed = embedOf(field);
  return {
    kind: 'vector',
    ...(embed === undefined ? {} : { embed }),
    collection: collection.name,
    field: field.name,
    dims: field.type.dims,
    metric,
    indexed,
    vector,
    passing:
      filter === undefined ? undefined : { sql: `SELECT "id" FROM ${collection.table}${where}`, args: filter.args },
    scan: { sql: scanSql(collection, field, filter), args: filter?.args ?? [] },
    text,
    read: `SELECT ${list} FROM ${collection.table} WHERE "id" IN (SELECT value FROM json_each(?))${shape.order === undefined ? '' : ` ORDER BY ${shape.order}`}`,
    columns: shape.columns,
    ordered: shape.order !== undefined,
    limit: shape.limit,
    offset: shape.offset,
    count: stmt.count,
  };
}

/** Ids and vectors of the rows the filter passes: from the vector's own table, joined to the rows for the filter. */
function scanSql(collection: Collection, field: Field, filter: Fragment | undefined): string {
  const and = filter === undefined ? '' : ` AND ${filter.sql}`;
  if (field.apart === undefined)
    return `SELECT "id", ${field.column} FROM ${collection.table} WHERE ${field.column} IS NOT NULL${and}`;
  const v = `${field.apart}.${field.column}`;
  if (filter === undefined) return `SELECT "id", ${v} FROM ${field.apart} WHERE ${v} IS NOT NULL`;
  return `SELECT ${field.apart}."id", ${v} FROM ${field.apart} JOIN ${collection.table} ON ${collection.table}."id" = ${field.apart}."id" WHERE ${v} IS NOT NULL${and}`;
}
