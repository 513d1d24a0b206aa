/**
 * Values bound into a statement built as a tree (the MCP tools' statements, a cursor's keyset): each
 * a parameter `$N` after the caller's own, never text to parse.
 */
import type { Expr, ParamExpr } from './ast.js';

/** FenecQL's highest parameter, `$99`. */
export const MAX_PARAMS = 99;

export const param = (index: number): ParamExpr => ({ kind: 'Param', index });

/** Values bound to $1, $2, …: the caller's first, then the builder's own. */
export class Params {
  readonly values: unknown[];

  constructor(given: unknown) {
    this.values = given === undefined || given === null ? [] : [...(given as unknown[])];
  }

  /**
   * Binds a value and answers the parameter that names it. Past $99 (a bulk insert) the value goes
   * into the tree as the literal it is: still never text to parse, only a plan less to share.
   */
  add(value: unknown): Expr {
    if (this.values.length >= MAX_PARAMS) return literal(value);
    this.values.push(value);
    return param(this.values.length);
  }
}

/** A JSON value as a literal tree. */
export function literal(value: unknown): Expr {
  if (value === null || value === undefined) return { kind: 'Literal', type: 'null', value: null };
  if (typeof value === 'boolean') return { kind: 'Literal', type: 'bool', value };
  if (typeof value === 'number') return { kind: 'Literal', type: Number.isSafeInteger(value) ? 'int' : 'float', value };
  if (typeof value === 'string') return { kind: 'Literal', type: 'text', value };
  if (Array.isArray(value)) return { kind: 'Array', items: value.map(literal) };
  return {
    kind: 'Object',
    entries: Object.entries(value as Record<string, unknown>).map(([key, v]) => ({ key, value: literal(v) })),
  };
}
