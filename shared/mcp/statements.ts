/**
 * What the tools' statements are built from: they are trees, run as trees. A `filter` is parsed as
 * a condition alone and embedded as the tree it parsed to; every value a caller gives is bound as a
 * parameter (`$N`), never written into text. The tool's own values (words, a vector, a row's
 * fields) take the parameters after the caller's `params`.
 */
import type { Cond, Expr, GetStmt, Statement } from '../fenecql/ast.js';
import { MAX_PARAMS } from '../fenecql/bind.js';
import { parseCondition } from '../fenecql/parser.js';
import { highestParam } from '../fenecql/walk.js';
import { FenecError } from '../errors.js';
import type { PreparedRead, ToolContext } from './tool.js';
import type { Detail } from './tool-schemas.js';

/** A statement and the values bound to its parameters. */
export interface Bound<S extends Statement = Statement> {
  readonly statement: S;
  readonly params: readonly unknown[];
}

/** A call binding fewer values than this has a tree of parameters only, which serves every call of its shape. */
export const MAX_BOUND = MAX_PARAMS;

export const int = (value: number): Expr => ({ kind: 'Literal', type: 'int', value });
export const field = (name: string): Expr => ({ kind: 'Field', name });
export const and = (left: Cond | undefined, right: Cond): Cond =>
  left === undefined ? right : { kind: 'And', left, right };

/**
 * A `filter` argument as the condition it is, alone: no clause after it, no second statement, no
 * parenthesis closing on the statement around it; its parameters within the `params` given.
 *
 * @throws FenecError the parse error (prefixed `filter:`), or `missing_parameter`.
 */
export function parseFilter(tool: string, filter: string, params: number): Cond {
  let cond: Cond;
  try {
    cond = parseCondition(filter);
  } catch (err) {
    if (!(err instanceof FenecError)) throw err;
    throw new FenecError(
      err.code,
      `${tool}: filter ${JSON.stringify(filter)} is not a condition alone: ${err.message}`,
      {
        hint:
          err.hint ?? 'a filter is one FenecQL condition, e.g. year >= $1 and tags has $2, with its values in params',
        position: err.position,
      },
    );
  }
  const highest = highestParam(cond);
  if (highest > params) {
    throw new FenecError(
      'missing_parameter',
      `${tool}: filter uses $${highest} and params has ${params} value${params === 1 ? '' : 's'}`,
      {
        hint: `give params an array of ${highest} values, bound to $1…$${highest}`,
      },
    );
  }
  return cond;
}

/**
 * What `detail` selects: id alone (match and near add _score and snippet), `fields` (those the call's `fields` names,
 * when `chosen`), or every field.
 */
export function detailSelect(
  tool: string,
  given: Detail | undefined,
  chosen: boolean,
  fields: readonly string[] | null,
): GetStmt['select'] {
  const detail = given ?? 'fields';
  if (detail !== 'fields' && chosen) {
    throw new FenecError(
      'invalid_argument',
      `${tool}: fields chooses the fields of detail "fields"; detail "${detail}" answers ${detail === 'ids' ? 'ids' : 'every field'}`,
      {
        hint: `leave out fields, or detail`,
      },
    );
  }
  if (detail === 'ids') return ['id'];
  if (detail === 'full') return '*';
  return fields;
}

/**
 * The read a call of this shape runs, made once and kept, and this call's values for it. A call
 * with more values than parameters there are (their tree holds literals) is made each time.
 */
export function readOfShape(
  context: ToolContext,
  key: string,
  make: () => Bound<GetStmt>,
  values: () => unknown[],
): { read: PreparedRead; params: readonly unknown[] } {
  const kept = context.kept(key);
  if (kept !== undefined) return { read: kept, params: values() };
  const bound = make();
  return {
    read: context.prepare(bound.statement, bound.statement, bound.params.length < MAX_BOUND ? key : undefined),
    params: bound.params,
  };
}
