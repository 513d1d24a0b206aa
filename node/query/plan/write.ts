/**
 * Writes (insert, put, set, del) into plans: the rows written checked against the collection's
 * fields and filled from its defaults and the token's pinned claims, and the rows a token wrote
 * checked against its policy.
 */
import type {
  Cond,
  DelStmt,
  Expr,
  InsertStmt,
  ObjectExpr,
  ParamExpr,
  PutStmt,
  SetStmt,
} from '../../../shared/fenecql/ast.js';
import { FenecError } from '../../../shared/errors.js';
import { printCondition, printExpr, printFieldType } from '../../../shared/fenecql/print.js';
import { fieldSql, ID_TYPE, type Collection, type Field } from '../../schema/catalog.js';
import { Compiler, type Fragment } from '../compile/compiler.js';
import { isValue } from '../compile/evaluate.js';
import type { Arg } from '../compile/args.js';
import { isScalar, typeName } from '../compile/expr-types.js';
import { fieldOf, rowFilter } from './read.js';
import type { Plan, PolicyCheck, RowWrite, SqlStep } from './plan-types.js';
import { insertSql, pinnedFields, upsertApartSql, upsertSql } from './write-sql.js';
import { planBulk } from './bulk.js';

/** `insert`: rows written out, each its own step, or bound as one parameter. */
export function planInsert(
  stmt: InsertStmt,
  collection: Collection,
  policy: Cond | undefined,
  check: PolicyCheck | undefined,
): Plan {
  if (!Array.isArray(stmt.rows)) return planBulk('insert', stmt.rows as ParamExpr, collection, policy, check);
  return {
    kind: 'insert',
    rows: (stmt.rows as readonly ObjectExpr[]).map((row) => planInsertRow(withPinned(row, policy), collection)),
    check,
  };
}

/** `put`: one row written out, or rows bound as one parameter. */
export function planPut(
  stmt: PutStmt,
  collection: Collection,
  policy: Cond | undefined,
  check: PolicyCheck | undefined,
): Plan {
  if (stmt.row.kind === 'Param') return planBulk('put', stmt.row, collection, policy, check);
  return planPutRow(withPinned(stmt.row, policy), collection, check);
}

/** A written row with the pinned fields it leaves out filled from the token: a memory without owner gets `sub`. */
function withPinned(row: ObjectExpr, policy: Cond | undefined): ObjectExpr {
  if (policy === undefined) return row;
  const given = new Set(row.entries.map((e) => e.key));
  const filled = [...pinnedFields(policy)]
    .filter(([field]) => !given.has(field))
    .map(([key, value]) => ({ key, value }));
  return filled.length === 0 ? row : { ...row, entries: [...row.entries, ...filled] };
}

/** The check of the rows a token wrote: none may be left outside its policy's condition. */
export function policyCheck(collection: Collection, policy: Cond): PolicyCheck {
  const condition = new Compiler(collection).cond(policy);
  return {
    step: {
      sql: `SELECT count(*) FROM ${collection.table} WHERE ${collection.table}."id" IN (SELECT value FROM json_each(?)) AND NOT coalesce(${condition.sql}, 0)`,
      args: condition.args,
    },
    condition: printCondition(policy),
  };
}

/** A written value: checked against the field's type now when it is a literal, at run time when it is a parameter. */
function valueFor(field: Field, expr: Expr, compiler: Compiler): Fragment {
  const label = `field ${field.name}`;
  if (isValue(expr)) {
    if (field.def.required && expr.kind === 'Literal' && expr.value === null) {
      throw new FenecError('missing_required', `field ${field.name} is required; null was given`, {
        position: expr.pos,
      });
    }
    const fragment = compiler.exprAs(expr, field.type, label);
    if (!field.def.required) return fragment;
    const [value] = fragment.args as [Arg];
    return { ...fragment, args: [{ kind: 'required', field: field.name, text: printExpr(expr), value }] };
  }
  const fragment = compiler.expr(expr);
  const assignable =
    fragment.type.kind === 'null' ||
    (field.type.kind === 'scalar' && isScalar(fragment.type, field.type.scalar)) ||
    (isScalar(field.type, 'float') && isScalar(fragment.type, 'int'));
  if (!assignable) {
    throw new FenecError(
      'type_mismatch',
      `${label} takes ${printFieldType(field.type)}; ${printExpr(expr)} is ${typeName(fragment.type)}`,
      {
        position: expr.pos,
      },
    );
  }
  return fragment;
}

/** A value written to a vector field's own table (catalog.ts). */
interface ApartValue {
  readonly field: Field;
  readonly value: Fragment;
}

/**
 * Every column of a new row: the value given, else the field's default, else null (left out). The
 * vectors kept apart are `apart`, written by statements of their own.
 */
function rowValues(
  row: ObjectExpr,
  collection: Collection,
  compiler: Compiler,
): { columns: string[]; values: Fragment[]; apart: ApartValue[] } {
  const given = new Map(row.entries.map((e) => [e.key, e]));
  for (const entry of row.entries) {
    if (entry.key !== 'id') fieldOf(collection, entry.key, entry.pos);
  }
  const columns: string[] = [];
  const values: Fragment[] = [];
  const apart: ApartValue[] = [];
  const defaults = new Compiler(null);
  for (const field of collection.fields) {
    const entry = given.get(field.name);
    let value: Fragment;
    if (entry !== undefined) {
      value = valueFor(field, entry.value, compiler);
    } else if (field.def.default !== undefined) {
      value = valueFor(field, field.def.default, defaults);
    } else if (field.def.required) {
      throw new FenecError('missing_required', `field ${field.name} is required`, {
        position: row.pos,
        hint: `give ${field.name} a value of type ${printFieldType(field.type)}`,
      });
    } else {
      continue;
    }
    if (field.apart === undefined) {
      columns.push(field.column);
      values.push(value);
    } else {
      apart.push({ field, value });
    }
  }
  return { columns, values, apart };
}

function planInsertRow(row: ObjectExpr, collection: Collection): RowWrite {
  const idEntry = row.entries.find((e) => e.key === 'id');
  if (idEntry !== undefined) {
    throw new FenecError('invalid_statement', 'insert assigns id itself; a row given one is written with put', {
      position: idEntry.pos,
      hint: `put ${collection.name} {id: ${printExpr(idEntry.value)}, …}`,
    });
  }
  // Insert values are values: `now()`, `$1`, `now() + 7d`, never another row's field.
  const { columns, values, apart } = rowValues(row, collection, new Compiler(null));
  return {
    step: { sql: insertSql(collection, columns, values), args: values.flatMap((v) => v.args) },
    // The row's id is the last one inserted: the row's own, then the same id in each vector's table.
    apart: apart.map(({ field, value }) => ({
      sql: `INSERT INTO ${field.apart!} ("id", ${field.column}) VALUES (last_insert_rowid(), ${value.sql})`,
      args: value.args,
    })),
  };
}

function planPutRow(row: ObjectExpr, collection: Collection, check: PolicyCheck | undefined): Plan {
  const idEntry = row.entries.find((e) => e.key === 'id');
  if (idEntry === undefined || !isValue(idEntry.value)) {
    throw new FenecError('invalid_statement', 'put replaces or creates the row its id names; the object has no id', {
      position: row.pos,
      hint: `put ${collection.name} {id: 7, …}, or insert into ${collection.name} {…} to have an id assigned`,
    });
  }
  const compiler = new Compiler(null);
  const idFragment = compiler.exprAs(idEntry.value, ID_TYPE, 'id');
  const [idValue] = idFragment.args as [Arg];
  const id: Arg = { kind: 'putId', text: printExpr(idEntry.value), value: idValue };
  const { columns, values, apart } = rowValues(row, collection, compiler);
  // "Replaces that row": a field the object leaves out takes its default or null, as in a new row.
  const vectors = collection.apartFields.map((field): SqlStep => {
    const given = apart.find((a) => a.field === field);
    if (given === undefined) return { sql: `DELETE FROM ${field.apart!} WHERE "id" = ?`, args: [id] };
    return { sql: upsertApartSql(field, `VALUES (?, ${given.value.sql})`), args: [id, ...given.value.args] };
  });
  return {
    kind: 'put',
    step: { sql: upsertSql(collection, columns, values), args: [id, ...values.flatMap((v) => v.args)] },
    apart: vectors,
    id,
    check,
  };
}

export function planSet(
  stmt: SetStmt,
  collection: Collection,
  policy: Cond | undefined,
  check: PolicyCheck | undefined,
): Plan {
  if (stmt.changes.entries.length === 0) {
    throw new FenecError('invalid_statement', 'set names no field to change', {
      position: stmt.changes.pos,
      hint: `set ${collection.name} {field: value} where …`,
    });
  }
  const compiler = new Compiler(collection);
  const assignments: string[] = [];
  const growths: string[] = [];
  const args: Arg[] = [];
  const growthArgs: Arg[] = [];
  const apart: ApartValue[] = [];
  for (const entry of stmt.changes.entries) {
    if (entry.key === 'id') {
      throw new FenecError('invalid_statement', 'id cannot be changed', {
        position: entry.pos,
        hint: 'put writes a row under the id you choose',
      });
    }
    const field = fieldOf(collection, entry.key, entry.pos);
    const value = valueFor(field, entry.value, compiler);
    growths.push(`fenec_size(${value.sql}) - fenec_size(${fieldSql(field, collection.table)})`);
    growthArgs.push(...value.args);
    if (field.apart !== undefined) {
      apart.push({ field, value });
      continue;
    }
    assignments.push(`${field.column} = ${value.sql}`);
    args.push(...value.args);
  }
  // Expired rows are out of every statement: set and del no more touch them than get reads them.
  const where = rowFilter(stmt.where, collection, compiler, policy)!;
  const growth: SqlStep = {
    sql: `SELECT coalesce(sum(${growths.join(' + ')}), 0) FROM ${collection.table} WHERE ${where.sql}`,
    args: [...growthArgs, ...where.args],
  };
  if (apart.length > 0) {
    // The rows are chosen once, before any is changed: a filter on a field the set changes must not
    // choose again between the row's table and a vector's. The row's fields first, whose new values
    // may read the vectors as they were; a vector takes a value, never an expression of the row.
    const ids = ' WHERE "id" IN (SELECT value FROM json_each(?))';
    const byIds: SqlStep[] =
      assignments.length === 0 ? [] : [{ sql: `UPDATE ${collection.table} SET ${assignments.join(', ')}${ids}`, args }];
    for (const { field, value } of apart)
      byIds.push({
        sql: upsertApartSql(field, `SELECT value, ${value.sql} FROM json_each(?) WHERE true`),
        args: value.args,
      });
    return {
      kind: 'change',
      step: { sql: `SELECT "id" FROM ${collection.table} WHERE ${where.sql}`, args: where.args },
      byIds,
      check,
      growth,
    };
  }
  // Under a policy the rows changed are checked afterwards, so the update names them.
  const returning = check === undefined ? '' : ' RETURNING "id"';
  return {
    kind: 'change',
    step: {
      sql: `UPDATE ${collection.table} SET ${assignments.join(', ')} WHERE ${where.sql}${returning}`,
      args: [...args, ...where.args],
    },
    check,
    growth,
  };
}

export function planDel(stmt: DelStmt, collection: Collection, policy: Cond | undefined): Plan {
  const where = rowFilter(stmt.where, collection, new Compiler(collection), policy)!;
  return { kind: 'change', step: { sql: `DELETE FROM ${collection.table} WHERE ${where.sql}`, args: where.args } };
}
