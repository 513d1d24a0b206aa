/**
 * Bulk writes: `insert into c $1` and `put c $1`, the rows an array of JSON objects bound as one
 * parameter. The data is never FenecQL text: it arrives parsed (JSON), and each row is checked as a
 * row written out as literals is — its keys against the fields, its values by the same conversion
 * to the field's type (execute/bulk-rows.ts) — then written by one prepared statement, all rows in
 * one transaction.
 *
 * Every row binds every field, so one SQL text serves every row whatever keys it gives: a field
 * with a default is written `CASE WHEN ? THEN <default> ELSE ? END`, the flag set when the row
 * leaves the field out.
 *
 * The rows reach the collection in one statement (StagedSql): first each into a temporary table, then
 * all of them by one INSERT … SELECT. The collection's text index is kept by triggers; SQLite opens a
 * statement savepoint for every INSERT whose trigger writes the FTS5 table, and FTS5 writes its
 * pending terms to a new segment at each savepoint. A statement a row left a segment a row, which FTS5
 * then spends its merges on and every `match` reads until they are merged (3 000 rows in three bulk
 * inserts: 19 segments, against 3 for raw FTS5 written directly, and a query 2.2× slower:
 * bench/HISTORY.md, "The index's segments"). One statement leaves one segment for all the rows.
 */
import type { Cond, ParamExpr } from '../../../shared/fenecql/ast.js';
import type { Collection, Field } from '../../schema/catalog.js';
import { bindValue, Compiler } from '../compile/compiler.js';
import type { BulkField, BulkPlan, PolicyCheck, StagedSql } from './plan-types.js';
import { ident } from '../../storage/sqlite.js';
import { insertSql, pinnedFields, upsertApartSql, upsertConflict, upsertSql } from './write-sql.js';

export function planBulk(
  verb: 'insert' | 'put',
  param: ParamExpr,
  collection: Collection,
  policy: Cond | undefined,
  check: PolicyCheck | undefined,
): BulkPlan {
  const pins = policy === undefined ? new Map() : pinnedFields(policy);
  const defaults = new Compiler(null);
  const fields: BulkField[] = [];
  const values: { sql: string }[] = [];
  for (const field of collection.fields) {
    const label = `field ${field.name}`;
    const pin = pins.get(field.name);
    const pinned = pin === undefined ? undefined : bindValue(pin, field.type, label);
    const row = { name: field.name, type: field.type, required: field.def.required, pinned };
    if (field.def.default === undefined) {
      fields.push({ ...row, defaultArgs: undefined });
      values.push({ sql: '?' });
    } else {
      const fragment = defaults.exprAs(field.def.default, field.type, label);
      fields.push({ ...row, defaultArgs: fragment.args });
      values.push({ sql: `CASE WHEN ? THEN ${fragment.sql} ELSE ? END` });
    }
  }
  const columns = collection.fields.map((f) => f.column);
  // One row, one statement: possible while every field is a column of the collection's table.
  const sql =
    collection.apartFields.length > 0
      ? undefined
      : verb === 'insert'
        ? insertSql(collection, columns, values)
        : upsertSql(collection, columns, values);
  return {
    kind: 'bulk',
    verb,
    param: `$${param.index}`,
    sql,
    staged: columns.length === 0 ? undefined : stagedSql(verb, collection, values),
    check,
    collection: collection.name,
    index: param.index,
    fields,
  };
}

/**
 * The staged form of a bulk write (see the top of this file). The temporary table is named by its
 * number of columns and has neither types nor constraints: it holds each row's values as the row
 * statement would have written them — a put's id first, then one column per field — and the
 * collection's own INSERT then checks them as it checks any row. It lives as long as the connection,
 * empty between writes.
 */
function stagedSql(
  verb: 'insert' | 'put',
  collection: Collection,
  values: readonly { readonly sql: string }[],
): StagedSql {
  const rowValues = verb === 'put' ? [{ sql: '?' }, ...values] : values;
  const stage = `temp.${ident(`fenec.stage.${rowValues.length}`)}`;
  const staged = rowValues.map((_, i) => `c${i}`);
  const first = verb === 'put' ? 1 : 0;
  const stagedOf = (field: Field): string => `c${first + collection.fields.indexOf(field)}`;
  const rowColumns = collection.rowFields.map((f) => f.column);
  const written = verb === 'put' ? ['"id"', ...rowColumns] : rowColumns;
  const select = `SELECT ${[...(verb === 'put' ? ['c0'] : []), ...collection.rowFields.map(stagedOf)].join(', ')} FROM ${stage} WHERE true ORDER BY rowid`;
  const write =
    written.length === 0
      ? `INSERT INTO ${collection.table} ("id") SELECT NULL FROM ${stage} ORDER BY rowid RETURNING "id"`
      : `INSERT INTO ${collection.table} (${written.join(', ')}) ${select}${verb === 'put' ? upsertConflict(collection, rowColumns) : ' RETURNING "id"'}`;
  return {
    create: `CREATE TEMP TABLE IF NOT EXISTS ${stage} (${staged.join(', ')})`,
    stage: `INSERT INTO ${stage} (${staged.join(', ')}) VALUES (${rowValues.map((v) => v.sql).join(', ')})`,
    // The ids an insert gives in the order of the rows: AUTOINCREMENT hands them out increasing, so sorted.
    write,
    apart: collection.apartFields.map((field) => {
      if (verb === 'put')
        return upsertApartSql(field, `SELECT c0, ${stagedOf(field)} FROM ${stage} WHERE true ORDER BY rowid`);
      // The k-th row staged took the k-th smallest id the insert answered, given sorted as a JSON array
      // (json_each's key is k). The stage is filled empty, one row after another: its rowids run on
      // from the first without a gap. (Pairing by row_number() windows cost ten times as much.)
      const start = `(SELECT min(rowid) FROM ${stage})`;
      return `INSERT INTO ${field.apart!} ("id", ${field.column}) SELECT i.value, s.${stagedOf(field)} FROM json_each(?) AS i JOIN ${stage} AS s ON s.rowid = i.key + ${start} WHERE s.${stagedOf(field)} IS NOT NULL`;
    }),
    clear: `DELETE FROM ${stage}`,
  };
}
