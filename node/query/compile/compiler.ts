/**
 * Expressions and conditions into SQL over one collection's table, type-checked against its fields.
 *
 * Every value from the statement or the request reaches SQLite as a bound argument (`?`), never as
 * SQL text: literals, `$N` and `$jwt.NAME` alike. Each argument is converted to the storage form of
 * the type it meets (a timestamp field compared with "2026-01-01" binds milliseconds).
 */
import type { CompareOp, Cond, Expr, FieldType } from '../../../shared/fenecql/ast.js';
import { FenecError, type Position } from '../../../shared/errors.js';
import { MAX_TERMS } from '../../../shared/fenecql/limits.js';
import { printExpr } from '../../../shared/fenecql/print.js';
import type { NumberKind } from '../../storage/codec.js';
import { fieldSql, ID_TYPE, type Collection } from '../../schema/catalog.js';
import { isValue } from './evaluate.js';
import { valueArg, type Arg } from './args.js';
import { isNumeric, isScalar, literalType, NULL_TYPE, scalar, typeName, UNKNOWN, type ExprType } from './expr-types.js';

export interface Fragment {
  readonly sql: string;
  readonly args: readonly Arg[];
  readonly type: ExprType;
}

/**
 * One operand of an operator, looked at once: a value waits to be bound until it knows the type it
 * meets, anything else is compiled here, once. Compiling a subtree to learn its type and then again
 * for its SQL would double the work at every level (2^n for a chain of n terms).
 */
interface Operand {
  readonly expr: Expr;
  readonly type: ExprType;
  readonly fragment: Fragment | undefined;
}

/** SQLite refuses longer LIKE patterns (its SQLITE_MAX_LIKE_PATTERN_LENGTH), in bytes of UTF-8. */
export const MAX_LIKE_PATTERN_BYTES = 50_000;

/** Where names resolve: a collection's fields, or nothing (insert values and defaults name no field). */
export type Scope = Collection | null;

function describeExpr(expr: Expr, type: ExprType): string {
  return type.kind === 'unknown' || type.kind === 'null' ? printExpr(expr) : `${printExpr(expr)} (${typeName(type)})`;
}

/**
 * Binds a value expression, converted to the storage form of `type` when it has one. `compared`: the
 * value meets an int (or [int]) in a comparison, where any number will do (`price > 9.5`); any other
 * value is refused as the int it is compared with, never as a float it was never asked to be.
 */
export function bindValue(expr: Expr, type: ExprType, label = printExpr(expr), compared = false): Arg {
  return valueArg(expr, { type, label, compared });
}

/** How a value is named in a message: after the field it meets (`field year takes int; …`), else by itself. */
function labelFor(other: Expr, value: Expr): string {
  return other.kind === 'Field' ? `field ${other.name}` : printExpr(value);
}

function comparable(a: ExprType, b: ExprType): boolean {
  if (a.kind === 'unknown' || b.kind === 'unknown' || a.kind === 'null' || b.kind === 'null') return true;
  if (isNumeric(a) && isNumeric(b)) return true;
  if (isScalar(a, 'timestamp') && isScalar(b, 'timestamp', 'int')) return true;
  if (isScalar(b, 'timestamp') && isScalar(a, 'int')) return true;
  return a.kind === 'scalar' && b.kind === 'scalar' && a.scalar === b.scalar && a.scalar !== 'json';
}

/**
 * An arithmetic operation whose result SQLite checks on each row as FenecQL takes numbers (codec.ts,
 * checkedNumber): an overflow is refused with invalid_number rather than stored as Infinity or as a float
 * in an int. SQLite evaluates an operation on values alone once per statement, not once per row.
 */
function checked(
  expr: Extract<Expr, { kind: 'Binary' }>,
  kind: NumberKind,
  sql: string,
  args: readonly Arg[],
): Fragment {
  const label =
    expr.pos === undefined
      ? `the ${expr.op}`
      : `the ${expr.op} of the expression at line ${expr.pos.line}, column ${expr.pos.column}`;
  return { sql: `fenec_${kind}(${sql}, ?)`, args: [...args, { kind: 'literal', value: label }], type: scalar(kind) };
}

export class Compiler {
  readonly #scope: Scope;
  /** Terms compiled so far into this compiler's one SQL statement (see MAX_TERMS). */
  #terms = 0;

  constructor(scope: Scope) {
    this.#scope = scope;
  }

  /** The SQL of an expression and its static type. */
  expr(expr: Expr): Fragment {
    this.#term(expr.pos);
    switch (expr.kind) {
      case 'Literal':
      case 'Param':
      case 'Jwt':
      case 'Array':
      case 'Object': {
        if (!isValue(expr)) {
          throw new FenecError(
            'invalid_statement',
            `${printExpr(expr)}: arrays and objects hold values, not fields or calls`,
            { position: expr.pos },
          );
        }
        const type = literalType(expr);
        return { sql: '?', args: [bindValue(expr, type)], type };
      }
      case 'Field':
        return this.#field(expr);
      case 'Call':
        return this.#call(expr);
      case 'Negate': {
        const operand = this.#numeric(this.#operand(expr.operand), 'negate');
        return { sql: `(- ${operand.sql})`, args: operand.args, type: operand.type };
      }
      case 'Binary':
        return this.#arithmetic(expr);
    }
  }

  /** An expression converted to a target type: a field's, when it is written or compared. */
  exprAs(expr: Expr, type: ExprType, label?: string): Fragment {
    return this.#as(this.#operand(expr), type, label);
  }

  #operand(expr: Expr): Operand {
    if (isValue(expr)) return { expr, type: literalType(expr), fragment: undefined };
    const fragment = this.expr(expr);
    return { expr, type: fragment.type, fragment };
  }

  /** An operand's SQL: a value bound as `type`, anything else as it compiled. */
  #as(operand: Operand, type: ExprType, label?: string, compared = false): Fragment {
    if (operand.fragment !== undefined) return operand.fragment;
    this.#term(operand.expr.pos);
    return { sql: '?', args: [bindValue(operand.expr, type, label, compared)], type };
  }

  #term(pos: Position | undefined): void {
    if (++this.#terms <= MAX_TERMS) return;
    throw new FenecError(
      'too_complex',
      `the statement holds more than ${MAX_TERMS} terms in one condition or row${pos === undefined ? '' : ` (the next at line ${pos.line}, column ${pos.column})`}`,
      {
        position: pos,
        hint: 'a long list of alternatives is one array: field in [v1, v2, …], or field in $1 with the values in params',
      },
    );
  }

  #field(expr: Extract<Expr, { kind: 'Field' }>): Fragment {
    if (this.#scope === null) {
      throw new FenecError('invalid_statement', `${expr.name}: a value is needed here, not a field name`, {
        position: expr.pos,
        hint: 'write text in quotes: "like this"',
      });
    }
    // Columns are qualified by their table: inside `json_each(…)` a bare "value" or "key" would name
    // json_each's own columns, not the row's field.
    if (expr.name === 'id') return { sql: `${this.#scope.table}."id"`, args: [], type: ID_TYPE };
    const field = this.#scope.byName.get(expr.name);
    if (field === undefined) {
      throw new FenecError('unknown_field', `${this.#scope.name} has no field ${expr.name}`, {
        position: expr.pos,
        hint: `its fields: id, ${this.#scope.fields.map((f) => f.name).join(', ')}`,
      });
    }
    return { sql: fieldSql(field, this.#scope.table), args: [], type: field.type };
  }

  #numeric(operand: Operand, what: string): Fragment {
    const fragment = this.#as(operand, operand.type.kind === 'unknown' ? scalar('float') : operand.type);
    if (!isNumeric(fragment.type) && fragment.type.kind !== 'null') {
      throw new FenecError(
        'type_mismatch',
        `cannot ${what} ${describeExpr(operand.expr, fragment.type)}: it takes a number`,
        { position: operand.expr.pos },
      );
    }
    return fragment;
  }

  #arithmetic(expr: Extract<Expr, { kind: 'Binary' }>): Fragment {
    const leftOperand = this.#operand(expr.left);
    const rightOperand = this.#operand(expr.right);
    const leftType = leftOperand.type;
    const rightType = rightOperand.type;
    const timestamp = isScalar(leftType, 'timestamp') || isScalar(rightType, 'timestamp');
    if (timestamp) {
      // timestamp ± milliseconds is a timestamp; timestamp - timestamp is milliseconds.
      const left = this.#as(leftOperand, isScalar(leftType, 'timestamp') ? leftType : scalar('int'));
      const right = this.#as(rightOperand, isScalar(rightType, 'timestamp') ? rightType : scalar('int'));
      const bothTimestamps = isScalar(left.type, 'timestamp') && isScalar(right.type, 'timestamp');
      const ok =
        (expr.op === '+' &&
          !bothTimestamps &&
          [left, right].every((f) => isScalar(f.type, 'timestamp', 'int') || f.type.kind === 'null')) ||
        (expr.op === '-' &&
          [left.type, right.type].every((t) => isScalar(t, 'timestamp', 'int') || t.kind === 'null') &&
          !(isScalar(left.type, 'int') && isScalar(right.type, 'timestamp')));
      if (!ok) {
        throw new FenecError(
          'type_mismatch',
          `cannot compute ${printExpr(expr)}: a timestamp takes + or - milliseconds (an int or a duration like 7d), and - another timestamp`,
          {
            position: expr.pos,
          },
        );
      }
      return checked(expr, bothTimestamps ? 'int' : 'timestamp', `(${left.sql} ${expr.op} ${right.sql})`, [
        ...left.args,
        ...right.args,
      ]);
    }
    const left = this.#numeric(
      leftOperand,
      expr.op === '+' ? 'add' : expr.op === '-' ? 'subtract' : expr.op === '*' ? 'multiply' : 'divide',
    );
    const right = this.#numeric(
      rightOperand,
      expr.op === '+' ? 'add' : expr.op === '-' ? 'subtract' : expr.op === '*' ? 'multiply' : 'divide by',
    );
    const args = [...left.args, ...right.args];
    if (expr.op === '/') {
      // Division is real division, as a JSON user reads 7 / 2; SQLite's integer division would answer 3.
      return checked(expr, 'float', `(CAST(${left.sql} AS REAL) / ${right.sql})`, args);
    }
    return checked(
      expr,
      isScalar(left.type, 'int') && isScalar(right.type, 'int') ? 'int' : 'float',
      `(${left.sql} ${expr.op} ${right.sql})`,
      args,
    );
  }

  #call(expr: Extract<Expr, { kind: 'Call' }>): Fragment {
    const [first, second] = expr.args;
    switch (expr.fn) {
      case 'now':
        return { sql: '?', args: [{ kind: 'now', minus: 0 }], type: scalar('timestamp') };
      case 'len': {
        const arg = this.exprAs(
          first!,
          isValue(first!) && literalType(first!).kind === 'unknown' ? scalar('text') : literalType(first!),
        );
        if (isScalar(arg.type, 'text')) return { sql: `length(${arg.sql})`, args: arg.args, type: scalar('int') };
        if (arg.type.kind === 'array')
          return { sql: `json_array_length(${arg.sql})`, args: arg.args, type: scalar('int') };
        if (arg.type.kind === 'vector') return { sql: `(length(${arg.sql}) / 4)`, args: arg.args, type: scalar('int') };
        if (arg.type.kind === 'null') return { sql: 'NULL', args: [], type: NULL_TYPE };
        throw new FenecError(
          'type_mismatch',
          `len takes text, an array or a vector; ${describeExpr(first!, arg.type)} is none`,
          { position: expr.pos },
        );
      }
      case 'lower':
      case 'upper': {
        const arg = this.exprAs(first!, scalar('text'));
        if (!isScalar(arg.type, 'text') && arg.type.kind !== 'null') {
          throw new FenecError('type_mismatch', `${expr.fn} takes text; ${describeExpr(first!, arg.type)} is not`, {
            position: expr.pos,
          });
        }
        return { sql: `fenec_${expr.fn}(${arg.sql})`, args: arg.args, type: scalar('text') };
      }
      case 'coalesce': {
        const [a, b] = this.#pair(first!, second!, 'coalesce');
        return {
          sql: `coalesce(${a.sql}, ${b.sql})`,
          args: [...a.args, ...b.args],
          type: a.type.kind === 'null' || a.type.kind === 'unknown' ? b.type : a.type,
        };
      }
    }
  }

  /** Two expressions that must agree in type; a value on one side takes the other side's type. */
  #pair(left: Expr, right: Expr, what: string): [Fragment, Fragment] {
    const leftOperand = this.#operand(left);
    const rightOperand = this.#operand(right);
    const leftType = leftOperand.type;
    const rightType = rightOperand.type;
    const leftIsValue = leftOperand.fragment === undefined;
    const rightIsValue = rightOperand.fragment === undefined;
    // A value takes the other side's type; numbers meet numbers whatever their kind (`price > 9.5` on an int field).
    const leftTarget = leftIsValue && rightType.kind !== 'unknown' && rightType.kind !== 'null' ? rightType : leftType;
    const rightTarget = rightIsValue && leftType.kind !== 'unknown' && leftType.kind !== 'null' ? leftType : rightType;
    if (!comparable(leftType, rightType) && !(leftIsValue && rightIsValue)) {
      const stringMeetsTimestamp =
        (isScalar(leftType, 'timestamp') && isScalar(rightType, 'text') && rightIsValue) ||
        (isScalar(rightType, 'timestamp') && isScalar(leftType, 'text') && leftIsValue);
      if (!stringMeetsTimestamp) {
        throw new FenecError(
          'type_mismatch',
          `cannot ${what} ${describeExpr(left, leftType)} with ${describeExpr(right, rightType)}`,
          { position: left.pos },
        );
      }
    }
    return [
      this.#as(leftOperand, leftTarget, labelFor(right, left), true),
      this.#as(rightOperand, rightTarget, labelFor(left, right), true),
    ];
  }

  /** The SQL of a condition. NULL never satisfies one: a comparison with null is false, as in SQL. */
  cond(cond: Cond): Fragment {
    this.#term(cond.pos);
    switch (cond.kind) {
      case 'And':
      case 'Or': {
        const left = this.cond(cond.left);
        const right = this.cond(cond.right);
        return {
          sql: `(${left.sql} ${cond.kind === 'And' ? 'AND' : 'OR'} ${right.sql})`,
          args: [...left.args, ...right.args],
          type: scalar('bool'),
        };
      }
      case 'Not': {
        // SQL's NOT of an unknown is unknown; FenecQL's comparisons with null are false, so `not` makes them true.
        const operand = this.cond(cond.operand);
        return { sql: `(NOT coalesce(${operand.sql}, 0))`, args: operand.args, type: scalar('bool') };
      }
      case 'Compare':
        return this.#compare(cond.op, cond.left, cond.right);
      case 'Has':
        return this.#has(cond);
      case 'In':
        return this.#in(cond);
      case 'IsNull': {
        const operand = this.expr(cond.operand);
        return {
          sql: `(${operand.sql} IS ${cond.negated ? 'NOT ' : ''}NULL)`,
          args: operand.args,
          type: scalar('bool'),
        };
      }
      case 'Like': {
        const operand = this.exprAs(cond.operand, scalar('text'));
        if (!isScalar(operand.type, 'text') && operand.type.kind !== 'null') {
          throw new FenecError('type_mismatch', `like takes text; ${describeExpr(cond.operand, operand.type)} is not`, {
            position: cond.pos,
          });
        }
        const pattern = cond.pattern;
        if (Buffer.byteLength(pattern) > MAX_LIKE_PATTERN_BYTES) {
          throw new FenecError(
            'too_complex',
            `the like pattern is ${Buffer.byteLength(pattern)} bytes long; at most ${MAX_LIKE_PATTERN_BYTES} are taken`,
            {
              position: cond.pos,
              hint: 'match words with match, or test a shorter piece of the text',
            },
          );
        }
        return {
          sql: `(${operand.sql} LIKE ?)`,
          args: [...operand.args, { kind: 'literal', value: pattern }],
          type: scalar('bool'),
        };
      }
      case 'Truth': {
        const value = this.exprAs(cond.expr, scalar('bool'));
        if (!isScalar(value.type, 'bool') && value.type.kind !== 'null') {
          throw new FenecError('type_mismatch', `${describeExpr(cond.expr, value.type)} is not a condition`, {
            position: cond.pos,
            hint: 'compare it: field = value, field > value, field is null …',
          });
        }
        return { sql: `(${value.sql})`, args: value.args, type: scalar('bool') };
      }
    }
  }

  #compare(op: CompareOp, left: Expr, right: Expr): Fragment {
    const [a, b] = this.#pair(left, right, 'compare');
    for (const [expr, f] of [
      [left, a],
      [right, b],
    ] as const) {
      if (f.type.kind === 'vector' || f.type.kind === 'array' || isScalar(f.type, 'json')) {
        throw new FenecError('type_mismatch', `cannot compare ${describeExpr(expr, f.type)}`, {
          position: expr.pos,
          hint:
            f.type.kind === 'array'
              ? 'has tests whether an array holds a value: tags has "ops"'
              : 'is null and is not null test it',
        });
      }
    }
    return {
      sql: `(${a.sql} ${op === '!=' ? '<>' : op} ${b.sql})`,
      args: [...a.args, ...b.args],
      type: scalar('bool'),
    };
  }

  #has(cond: Extract<Cond, { kind: 'Has' }>): Fragment {
    const array = this.expr(cond.left);
    if (array.type.kind !== 'array') {
      throw new FenecError(
        'type_mismatch',
        `has takes an array on its left; ${describeExpr(cond.left, array.type)} is not one`,
        {
          position: cond.pos,
          hint: 'tags has "ops"',
        },
      );
    }
    const elementType: FieldType = scalar(array.type.element);
    const item = this.exprAs(cond.right, elementType, `an element of ${printExpr(cond.left)}`);
    if (!comparable(elementType, item.type)) {
      throw new FenecError(
        'type_mismatch',
        `${printExpr(cond.left)} holds ${array.type.element}; ${describeExpr(cond.right, item.type)} cannot be in it`,
        {
          position: cond.right.pos,
        },
      );
    }
    return {
      sql: `EXISTS (SELECT 1 FROM json_each(${array.sql}) WHERE value = ${item.sql})`,
      args: [...array.args, ...item.args],
      type: scalar('bool'),
    };
  }

  #in(cond: Extract<Cond, { kind: 'In' }>): Fragment {
    const item = this.expr(cond.left);
    if (item.type.kind === 'vector' || item.type.kind === 'array' || isScalar(item.type, 'json')) {
      throw new FenecError('type_mismatch', `${describeExpr(cond.left, item.type)} cannot be looked for with in`, {
        position: cond.pos,
      });
    }
    let list: Fragment;
    if (isValue(cond.right)) {
      if (cond.right.kind !== 'Array' && cond.right.kind !== 'Param' && cond.right.kind !== 'Jwt') {
        throw new FenecError(
          'type_mismatch',
          `in takes an array on its right: ${printExpr(cond.left)} in [1, 2] or in $1`,
          { position: cond.right.pos },
        );
      }
      const element = item.type.kind === 'scalar' && item.type.scalar !== 'json' ? item.type.scalar : undefined;
      const arrayType: ExprType = element === undefined ? UNKNOWN : { kind: 'array', element };
      // An array of unknown element type (`$1 in $2`) is bound as the JSON it came as.
      const source: Arg =
        arrayType.kind === 'unknown'
          ? { kind: 'jsonList', expr: cond.right, label: printExpr(cond.right) }
          : bindValue(cond.right, arrayType, `the array after in`, true);
      list = { sql: '?', args: [source], type: arrayType };
    } else {
      list = this.expr(cond.right);
      if (list.type.kind !== 'array') {
        throw new FenecError(
          'type_mismatch',
          `in takes an array on its right; ${describeExpr(cond.right, list.type)} is not one`,
          { position: cond.right.pos },
        );
      }
    }
    return {
      sql: `(${item.sql} IN (SELECT value FROM json_each(${list.sql})))`,
      args: [...item.args, ...list.args],
      type: scalar('bool'),
    };
  }
}
