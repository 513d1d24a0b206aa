/**
 * The static types of expressions, as the compiler checks them against fields and operators. What
 * their values are at run time is evaluate.ts's.
 */
import type { Expr, FieldType, ScalarType } from '../../../shared/fenecql/ast.js';
import { printFieldType } from '../../../shared/fenecql/print.js';

/** A static type: a field type, the type of `null`, or unknown until bound (`$1`, `$jwt.sub`). */
export type ExprType = FieldType | { readonly kind: 'null' } | { readonly kind: 'unknown' };

export const UNKNOWN: ExprType = { kind: 'unknown' };
export const NULL_TYPE: ExprType = { kind: 'null' };

export function scalar(s: ScalarType): FieldType {
  return { kind: 'scalar', scalar: s };
}

export function isScalar(type: ExprType, ...names: ScalarType[]): boolean {
  return type.kind === 'scalar' && names.includes(type.scalar);
}

export function isNumeric(type: ExprType): boolean {
  return isScalar(type, 'int', 'float');
}

export function typeName(type: ExprType): string {
  return type.kind === 'null' ? 'null' : type.kind === 'unknown' ? 'a parameter' : printFieldType(type);
}

/** The static type of a value expression's literal form; parameters and claims are unknown. */
export function literalType(expr: Expr): ExprType {
  switch (expr.kind) {
    case 'Literal':
      return expr.type === 'null' ? NULL_TYPE : scalar(expr.type);
    case 'Array': {
      const element = expr.items.map(literalType).find((t) => t.kind === 'scalar');
      return element?.kind === 'scalar' && element.scalar !== 'json'
        ? { kind: 'array', element: element.scalar }
        : { kind: 'array', element: 'text' };
    }
    case 'Object':
      return scalar('json');
    default:
      return UNKNOWN;
  }
}
