/**
 * What the plans of written rows share, whether the rows are written out in the statement
 * (`insert into c {…}`) or bound as one parameter (`insert into c $1`).
 */
import type { Cond, Expr } from '../../../shared/fenecql/ast.js';
import { SKIP, walk } from '../../../shared/fenecql/walk.js';
import type { Collection, Field } from '../../schema/catalog.js';

/** The fields a policy condition pins to a claim: the `field = $jwt.claim` among its top-level `and`s. */
export function pinnedFields(policy: Cond): Map<string, Expr> {
  const pins = new Map<string, Expr>();
  walk(policy, (cond) => {
    if (cond.kind === 'And') return undefined;
    if (cond.kind === 'Compare' && cond.op === '=') {
      if (cond.left.kind === 'Field' && cond.right.kind === 'Jwt') pins.set(cond.left.name, cond.right);
      if (cond.right.kind === 'Field' && cond.left.kind === 'Jwt') pins.set(cond.right.name, cond.left);
    }
    // Below an `or` or a `not` a comparison pins nothing.
    return SKIP;
  });
  return pins;
}

export function insertSql(
  collection: Collection,
  columns: readonly string[],
  values: readonly { readonly sql: string }[],
): string {
  return columns.length === 0
    ? `INSERT INTO ${collection.table} DEFAULT VALUES`
    : `INSERT INTO ${collection.table} (${columns.join(', ')}) VALUES (${values.map((v) => v.sql).join(', ')})`;
}

/**
 * A put's SQL: the insert, and on an existing id the row replaced whole — each of the fields in the
 * collection's table takes the new row's value when `columns` holds it, else null (the vectors kept
 * apart are written by statements of their own).
 */
export function upsertSql(
  collection: Collection,
  columns: readonly string[],
  values: readonly { readonly sql: string }[],
): string {
  return insertSql(collection, ['"id"', ...columns], [{ sql: '?' }, ...values]) + upsertConflict(collection, columns);
}

/** A put's ` ON CONFLICT ("id") …`: what an existing row becomes (upsertSql). */
export function upsertConflict(collection: Collection, columns: readonly string[]): string {
  const assignments = collection.rowFields.map((f) =>
    columns.includes(f.column) ? `${f.column} = excluded.${f.column}` : `${f.column} = NULL`,
  );
  return assignments.length === 0
    ? ' ON CONFLICT ("id") DO NOTHING'
    : ` ON CONFLICT ("id") DO UPDATE SET ${assignments.join(', ')}`;
}

/**
 * Writes a vector field's value into its own table (catalog.ts) for the rows `source` gives (`VALUES
 * (?, …)` or a `SELECT` of id and value, in that order): inserted, or replacing the one there.
 */
export function upsertApartSql(field: Field, source: string): string {
  return `INSERT INTO ${field.apart!} ("id", ${field.column}) ${source} ON CONFLICT ("id") DO UPDATE SET ${field.column} = excluded.${field.column}`;
}
