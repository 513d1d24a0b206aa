/**
 * A plan's SQL arguments as plain data — a literal, a parameter, a claim, the clock — and the one
 * binder that turns them into SQL values for an execution. A plan holds no closure: it can be
 * printed (`explain`), compared whole in a test, and read without running it.
 */
import type { Expr, FieldType, TextTokenizer } from '../../../shared/fenecql/ast.js';
import { FenecError } from '../../../shared/errors.js';
import { printExpr } from '../../../shared/fenecql/print.js';
import { matchTerms } from '../../search/text-index.js';
import { toSql, type SqlValue } from '../../storage/codec.js';
import { evaluate, type BindContext } from './evaluate.js';
import type { ExprType } from './expr-types.js';

/** How a value bound at run time becomes its argument: the storage form of `type`, named `label` in a refusal. */
export interface Conversion {
  /** A field type, or unknown / null: bound as SQLite takes it (a scalar). */
  readonly type: ExprType;
  readonly label: string;
  /** It meets an int in a comparison, where any number will do (compiler.ts, comparedToSql). */
  readonly compared: boolean;
}

export type Arg =
  /** A value known when planned, in its storage form. */
  | { readonly kind: 'literal'; readonly value: SqlValue }
  /** `$N`. */
  | { readonly kind: 'param'; readonly index: number; readonly as: Conversion }
  /** `$jwt.NAME`. */
  | { readonly kind: 'jwt'; readonly claim: string; readonly as: Conversion }
  /** An array or object holding parameters or claims (`[$1, $2]`). */
  | { readonly kind: 'value'; readonly expr: Expr; readonly as: Conversion }
  /** The execution's clock, less `minus` milliseconds (an `@ttl` field's horizon). */
  | { readonly kind: 'now'; readonly minus: number }
  /** A limit or offset given as `$N`: a whole number ≥ 0. */
  | { readonly kind: 'count'; readonly what: 'limit' | 'offset'; readonly index: number }
  /** A required field's value: `value`, refused when null (`text` is the expression as written). */
  | { readonly kind: 'required'; readonly field: string; readonly text: string; readonly value: Arg }
  /** A put's id: `value`, refused unless ≥ 1. */
  | { readonly kind: 'putId'; readonly text: string; readonly value: Arg }
  /** `x in $1` where x has no known type: the array bound as the JSON it came as. */
  | { readonly kind: 'jsonList'; readonly expr: Expr; readonly label: string }
  /**
   * A `match`'s words (`words`, text) as FTS5 takes them: the MATCH `expression` or the words a
   * snippet marks (`snippet`); null when they hold no word.
   */
  | {
      readonly kind: 'words';
      readonly part: 'expression' | 'snippet';
      readonly field: string;
      readonly fields: readonly string[];
      /** Which of the words are searched (node/search/tokenizers.ts). */
      readonly tokenizer: TextTokenizer;
      readonly words: Arg;
    }
  /** The rank function a scoped `match` counted before it runs (execute/scoped-rank.ts). */
  | { readonly kind: 'rank' };

/** A value of no known type (`$1 = $2`), bound as SQLite takes it. */
export function rawSql(value: unknown, label: string): SqlValue {
  switch (typeof value) {
    case 'string':
    case 'number':
      return value;
    case 'boolean':
      return value ? 1 : 0;
    default:
      throw new FenecError(
        'type_mismatch',
        `${label} is ${Array.isArray(value) ? 'an array' : 'an object'}; a scalar value is needed here`,
      );
  }
}

const FLOAT: FieldType = { kind: 'scalar', scalar: 'float' };
const FLOATS: FieldType = { kind: 'array', element: 'float' };

/** A value compared with an int field (or an in-list of ints: `type` [int]): numbers as floats, else refused as int. */
function comparedToSql(type: FieldType, value: unknown, label: string): SqlValue {
  if (type.kind === 'scalar')
    return toSql(typeof value === 'number' && type.scalar === 'int' ? FLOAT : type, value, label);
  if (type.kind !== 'array' || type.element !== 'int') return toSql(type, value, label);
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'number')) {
    // Refused: its numbers stand in as 0 so that the refusal names the first element that is not one.
    return toSql(
      type,
      Array.isArray(value) ? value.map((item) => (typeof item === 'number' ? 0 : item)) : value,
      label,
    );
  }
  return toSql(FLOATS, value, label);
}

/** A JSON value as the argument a conversion makes of it. */
export function convert(value: unknown, as: Conversion): SqlValue {
  if (value === null || value === undefined) return null;
  const { type } = as;
  if (type.kind === 'scalar' || type.kind === 'vector' || type.kind === 'array')
    return as.compared ? comparedToSql(type, value, as.label) : toSql(type, value, as.label);
  return rawSql(value, as.label);
}

/** The words last read, for the two arguments (expression, snippet) a match binds from the same words. */
let lastWords: {
  text: string;
  field: string;
  fields: readonly string[];
  tokenizer: TextTokenizer | undefined;
  terms: ReturnType<typeof matchTerms>;
} = { text: '', field: '', fields: [], tokenizer: undefined, terms: null };

function termsOf(
  text: string,
  field: string,
  fields: readonly string[],
  tokenizer: TextTokenizer,
): ReturnType<typeof matchTerms> {
  // Reading the words (a Unicode scan, NFC, case folding) once for the guard, the MATCH argument and the snippet's.
  if (
    lastWords.text !== text ||
    lastWords.fields !== fields ||
    lastWords.field !== field ||
    lastWords.tokenizer !== tokenizer
  ) {
    const terms = matchTerms(
      text,
      field,
      fields.map((name) => ({ name })),
      tokenizer,
    );
    lastWords = { text, field, fields, tokenizer, terms };
  }
  return lastWords.terms;
}

/** The SQL value of one argument in this execution. */
export function bindArg(arg: Arg, ctx: BindContext): SqlValue {
  switch (arg.kind) {
    case 'literal':
      return arg.value;
    case 'param': {
      if (arg.index > ctx.params.length) return convert(evaluate({ kind: 'Param', index: arg.index }, ctx), arg.as);
      return convert(ctx.params[arg.index - 1], arg.as);
    }
    case 'jwt':
      return convert(evaluate({ kind: 'Jwt', claim: arg.claim }, ctx), arg.as);
    case 'value':
      return convert(evaluate(arg.expr, ctx), arg.as);
    case 'now':
      return ctx.now - arg.minus;
    case 'count':
      return boundCount(arg.what, arg.index, ctx);
    case 'required': {
      const value = bindArg(arg.value, ctx);
      if (value === null)
        throw new FenecError('missing_required', `field ${arg.field} is required; ${arg.text} is null`);
      return value;
    }
    case 'putId': {
      const value = bindArg(arg.value, ctx);
      if (typeof value !== 'number' || value < 1)
        throw new FenecError('invalid_value', `put takes an id ≥ 1; ${arg.text} is ${value === null ? 'null' : value}`);
      return value;
    }
    case 'jsonList': {
      const value = evaluate(arg.expr, ctx);
      if (value !== null && !Array.isArray(value))
        throw new FenecError('type_mismatch', `in takes an array; ${arg.label} is not one`);
      return value === null ? null : JSON.stringify(value);
    }
    case 'words': {
      const text = bindArg(arg.words, ctx);
      if (text === null) return null;
      const terms = termsOf(String(text), arg.field, arg.fields, arg.tokenizer);
      return terms === null ? null : arg.part === 'expression' ? terms.expression : terms.snippetWords;
    }
    case 'rank':
      if (ctx.rank === undefined) throw new Error('a scoped match ran without its statistics counted first');
      return ctx.rank;
  }
}

/** The SQL values of a step's arguments in this execution. */
export function bindArgs(args: readonly Arg[], ctx: BindContext): SqlValue[] {
  const values = new Array<SqlValue>(args.length);
  for (let i = 0; i < args.length; i++) values[i] = bindArg(args[i]!, ctx);
  return values;
}

function boundCount(what: 'limit' | 'offset', index: number, ctx: BindContext): number {
  const value = index <= ctx.params.length ? ctx.params[index - 1] : undefined;
  if (value === undefined)
    throw new FenecError('missing_parameter', `${what} $${index}: params has ${ctx.params.length} values`);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new FenecError('invalid_value', `${what} $${index} is ${JSON.stringify(value)}; it takes a whole number ≥ 0`);
  }
  return value;
}

/** A value expression bound at run time, converted by `as`: a literal is converted now, once. */
export function valueArg(expr: Expr, as: Conversion): Arg {
  switch (expr.kind) {
    case 'Literal':
      // Converted once, so that a bad literal is refused when the statement is planned.
      return { kind: 'literal', value: convert(expr.value, as) };
    case 'Param':
      return { kind: 'param', index: expr.index, as };
    case 'Jwt':
      return { kind: 'jwt', claim: expr.claim, as };
    default:
      if (expr.kind === 'Array' && expr.items.every((item) => item.kind === 'Literal'))
        return { kind: 'literal', value: convert(evaluate(expr, { params: [], now: 0, jwt: undefined }), as) };
      return { kind: 'value', expr, as };
  }
}

/** An argument as `explain` shows it: `$1`, `$jwt.sub`, `now()`, or the literal's value. */
export function describeArg(arg: Arg): unknown {
  switch (arg.kind) {
    case 'literal':
      return arg.value;
    case 'param':
    case 'count':
      return `$${arg.index}`;
    case 'jwt':
      return `$jwt.${arg.claim}`;
    case 'value':
    case 'jsonList':
      return printExpr(arg.expr);
    case 'now':
      return arg.minus === 0 ? 'now()' : `now() - ${arg.minus}ms`;
    case 'required':
    case 'putId':
      return describeArg(arg.value);
    case 'words':
      return `${arg.part === 'expression' ? 'the MATCH expression' : 'the snippet words'} of ${String(describeArg(arg.words))}`;
    case 'rank':
      return 'the rank function over the rows the policy lets the token read';
  }
}
