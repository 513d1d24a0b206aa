/**
 * A bulk write's rows when it runs (plan/bulk.ts): the array its parameter holds, and each row's SQL
 * arguments, checked as a row written out as literals is — its keys against the fields, its values
 * by the same conversion to the field's type.
 */
import { FenecError } from '../../../shared/errors.js';
import { printFieldType } from '../../../shared/fenecql/print.js';
import { ID_TYPE } from '../../schema/catalog.js';
import { toSql, type SqlValue } from '../../storage/codec.js';
import { bindArg, bindArgs } from '../compile/args.js';
import type { BindContext } from '../compile/evaluate.js';
import type { BulkPlan } from '../plan/plan-types.js';

/**
 * The rows the parameter holds, and how one of them binds for this execution (for put, the id
 * first). @throws FenecError when the parameter is not rows; `bind` throws a row's refusal.
 */
export function bulkRows(
  plan: BulkPlan,
  ctx: BindContext,
): { readonly rows: readonly unknown[]; readonly bind: (row: unknown) => SqlValue[] } {
  const name = plan.param;
  if (plan.index > ctx.params.length) {
    throw new FenecError(
      'missing_parameter',
      `the statement uses ${name} and params has ${ctx.params.length} value${ctx.params.length === 1 ? '' : 's'}`,
      {
        hint: `pass the rows as "params": [[{…}, {…}]]`,
      },
    );
  }
  const value = ctx.params[plan.index - 1];
  const rows = Array.isArray(value) ? value : typeof value === 'object' && value !== null ? [value] : undefined;
  if (rows === undefined) {
    throw new FenecError(
      'type_mismatch',
      `${name} holds the rows to ${plan.verb}: an array of objects, or one object; it is ${value === null ? 'null' : `a ${typeof value}`}`,
      {
        hint: `"params": [[{…}, {…}]]`,
      },
    );
  }
  // What does not change from row to row is bound once per execution: defaults (one clock reading) and pinned
  // claims.
  const constants = plan.fields.map((f) => (f.defaultArgs === undefined ? undefined : bindArgs(f.defaultArgs, ctx)));
  const pinnedValues = plan.fields.map((f) => (f.pinned === undefined ? null : bindArg(f.pinned, ctx)));
  const known = new Set(plan.fields.map((f) => f.name));
  return { rows, bind: (row) => rowArgs(plan, known, row, constants, pinnedValues) };
}

function rowArgs(
  plan: BulkPlan,
  known: ReadonlySet<string>,
  row: unknown,
  constants: readonly (readonly SqlValue[] | undefined)[],
  pinnedValues: readonly SqlValue[],
): SqlValue[] {
  const { verb, param: name, collection, fields } = plan;
  if (typeof row !== 'object' || row === null || Array.isArray(row)) {
    throw new FenecError(
      'type_mismatch',
      `a row is an object {field: value}; this one is ${row === null ? 'null' : Array.isArray(row) ? 'an array' : `a ${typeof row}`}`,
    );
  }
  const given = row as Record<string, unknown>;
  const args: SqlValue[] = [];
  for (const key in given) {
    if (key === 'id') {
      if (verb === 'insert') {
        throw new FenecError('invalid_statement', 'insert assigns id itself; a row given one is written with put', {
          hint: `put ${collection} ${name}`,
        });
      }
    } else if (!known.has(key)) {
      throw new FenecError('unknown_field', `${collection} has no field ${key}`, {
        hint: `its fields: id, ${fields.map((f) => f.name).join(', ')}`,
      });
    }
  }
  if (verb === 'put') {
    const id = Object.hasOwn(given, 'id') ? toSql(ID_TYPE, given.id, 'id') : null;
    if (id === null) {
      throw new FenecError('invalid_statement', 'put replaces or creates the row its id names; this row has no id', {
        hint: `give each row its id, or insert into ${collection} ${name} to have ids assigned`,
      });
    }
    if ((id as number) < 1) throw new FenecError('invalid_value', `put takes an id ≥ 1; this row's is ${id}`);
    args.push(id);
  }
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    const present = Object.hasOwn(given, field.name);
    let value: SqlValue;
    if (present) {
      value = toSql(field.type, given[field.name], `field ${field.name}`);
      if (value === null && field.required)
        throw new FenecError('missing_required', `field ${field.name} is required; null was given`);
    } else if (field.pinned !== undefined) {
      value = pinnedValues[i]!;
    } else if (field.defaultArgs === undefined) {
      if (field.required) {
        throw new FenecError('missing_required', `field ${field.name} is required`, {
          hint: `give ${field.name} a value of type ${printFieldType(field.type)}`,
        });
      }
      value = null;
    } else {
      // Left out: the default, evaluated as in a row written out.
      args.push(1, ...constants[i]!, null);
      continue;
    }
    if (field.defaultArgs === undefined) args.push(value);
    else args.push(0, ...constants[i]!, value);
  }
  return args;
}
