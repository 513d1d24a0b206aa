/**
 * Values at run time: what one execution of a plan binds (the request's params, one clock reading,
 * the caller's claims), and the value of an expression known without reading a row (literals, `$N`,
 * `$jwt.NAME`, and arrays or objects of them).
 */
import type { Expr } from '../../../shared/fenecql/ast.js';
import { FenecError } from '../../../shared/errors.js';
import { printExpr } from '../../../shared/fenecql/print.js';
import { walk, type NodeKind } from '../../../shared/fenecql/walk.js';
import type { EmbedSpec } from '../../schema/catalog.js';

/** What one execution of a plan binds: the request's params, one clock reading, the caller's claims. */
export interface BindContext {
  readonly params: readonly unknown[];
  readonly now: number;
  readonly jwt: Readonly<Record<string, unknown>> | undefined;
  /**
   * A `match` under a policy: its rank function, over statistics counted at run time (node/query/plan/text-rank.ts).
   */
  readonly rank?: string;
  /**
   * The vector of a `near`'s words, for a field made with `@embed` (`spec`: what it embeds, with what model); absent
   * where nothing embeds (a plan run outside a database).
   */
  readonly embedQuery?: (field: string, spec: EmbedSpec | undefined, text: string) => Float32Array;
}

/**
 * True for expressions whose value is known without reading a row: literals, parameters, claims, and arrays or objects
 * of them.
 */
export function isValue(expr: Expr): boolean {
  return walk(expr, (node) => (VALUE_KINDS.has(node.kind) ? undefined : false)) === undefined;
}

/** The kinds a value is made of: arrays and objects hold values, never fields or calls. */
const VALUE_KINDS: ReadonlySet<NodeKind> = new Set(['Literal', 'Param', 'Jwt', 'Array', 'Object']);

/** The JSON value of a value expression (see isValue) in one execution. */
export function evaluate(expr: Expr, ctx: BindContext): unknown {
  switch (expr.kind) {
    case 'Literal':
      return expr.value;
    case 'Param': {
      if (expr.index > ctx.params.length) {
        throw new FenecError(
          'missing_parameter',
          `the statement uses $${expr.index} and params has ${ctx.params.length} value${ctx.params.length === 1 ? '' : 's'}`,
          {
            hint: `pass "params": [...] with at least ${expr.index} values`,
          },
        );
      }
      return ctx.params[expr.index - 1];
    }
    case 'Jwt': {
      if (ctx.jwt === undefined) {
        throw new FenecError('missing_parameter', `$jwt.${expr.claim}: the request carries no JSON Web Token`, {
          hint: "$jwt names a claim of the caller's token; with the server token, pass the value as a parameter",
        });
      }
      const value = ctx.jwt[expr.claim];
      // A token without the claim its policy (or statement) names cannot be held to it: refused, not guessed.
      if (value === undefined)
        throw new FenecError('forbidden', `$jwt.${expr.claim}: the token has no claim ${expr.claim}`);
      return value;
    }
    case 'Array':
      return expr.items.map((item) => evaluate(item, ctx));
    case 'Object':
      return Object.fromEntries(expr.entries.map((e) => [e.key, evaluate(e.value, ctx)]));
    default:
      throw new FenecError('invalid_statement', `${printExpr(expr)} is not a value`);
  }
}
