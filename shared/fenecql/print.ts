/**
 * FenecQL text from trees: canonical text that parses back to the same tree (positions aside).
 *
 * Schema answers show types, annotations and defaults with it, and hints show a corrected statement
 * with it, so what a user reads is always something they can paste back.
 */
import type { Annotation, Cond, Expr, FieldDef, FieldType, GetStmt, LiteralExpr, Statement } from './ast.js';
import { DURATION_UNITS } from '../duration.js';
import { isName } from './lexer.js';

const printed = new WeakMap<Statement, string>();

/** printStatement's text, kept for each tree: a tree is never changed (ast.ts), and the pager runs the same ones. */
export function printedOnce(stmt: Statement): string {
  let text = printed.get(stmt);
  if (text === undefined) printed.set(stmt, (text = printStatement(stmt)));
  return text;
}

export function printStatement(stmt: Statement): string {
  switch (stmt.kind) {
    case 'CreateCollection':
      return `create collection ${stmt.ifNotExists ? 'if not exists ' : ''}${stmt.name} (${stmt.fields.map(printField).join(', ')})`;
    case 'DropCollection':
      return `drop collection ${stmt.ifExists ? 'if exists ' : ''}${stmt.name}`;
    case 'AlterAdd':
      return `alter collection ${stmt.collection} add ${printField(stmt.field)}`;
    case 'AlterDrop':
      return `alter collection ${stmt.collection} drop ${stmt.field}`;
    case 'AlterEmbed':
      return `alter collection ${stmt.collection} embed ${stmt.field}`;
    case 'Insert': {
      if (!Array.isArray(stmt.rows)) return `insert into ${stmt.collection} ${printExpr(stmt.rows as Expr)}`;
      const rows = (stmt.rows as readonly Expr[]).map(printExpr).join(', ');
      return `insert into ${stmt.collection} ${stmt.many ? `[${rows}]` : rows}`;
    }
    case 'Put':
      return `put ${stmt.collection} ${printExpr(stmt.row)}`;
    case 'Set':
      return `set ${stmt.collection} ${printExpr(stmt.changes)} where ${printCondition(stmt.where)}`;
    case 'Del':
      return `del ${stmt.collection} where ${printCondition(stmt.where)}`;
    case 'Get':
      return printGet(stmt);
    case 'Schema':
      return stmt.collection === undefined ? 'schema' : `schema ${stmt.collection}`;
    case 'Compact':
      return stmt.collection === undefined ? 'compact' : `compact ${stmt.collection}`;
    case 'Explain':
      return `explain ${printStatement(stmt.statement)}`;
  }
}

function printGet(stmt: GetStmt): string {
  const parts = [`get ${stmt.collection}`];
  if (stmt.select !== null) parts.push(`select ${stmt.select === '*' ? '*' : stmt.select.join(', ')}`);
  if (stmt.match !== undefined) parts.push(`match ${stmt.match.field} ${printExpr(stmt.match.query)}`);
  if (stmt.near !== undefined) parts.push(`near ${stmt.near.field} ${printExpr(stmt.near.vector)}`);
  if (stmt.fuse) parts.push('fuse');
  if (stmt.where !== undefined) parts.push(`where ${printCondition(stmt.where)}`);
  if (stmt.order.length > 0) {
    // asc is the default, so only desc is written.
    parts.push(`order ${stmt.order.map((o) => (o.direction === 'desc' ? `${o.field} desc` : o.field)).join(', ')}`);
  }
  if (stmt.limit !== undefined) parts.push(`limit ${printExpr(stmt.limit)}`);
  if (stmt.offset !== undefined) parts.push(`offset ${printExpr(stmt.offset)}`);
  if (stmt.count) parts.push('count');
  return parts.join(' ');
}

function printField(field: FieldDef): string {
  let text = `${field.name} ${printFieldType(field.type)}`;
  if (field.required) text += ' required';
  if (field.unique) text += ' unique';
  if (field.default !== undefined) text += ` default ${printExpr(field.default)}`;
  for (const annotation of field.annotations) text += ` ${printAnnotation(annotation)}`;
  return text;
}

export function printFieldType(type: FieldType): string {
  switch (type.kind) {
    case 'scalar':
      return type.scalar;
    case 'vector':
      return `vector<${type.dims}>`;
    case 'array':
      return `[${type.element}]`;
  }
}

export function printAnnotation(annotation: Annotation): string {
  switch (annotation.kind) {
    case 'hash':
    case 'sorted':
      return `@${annotation.kind}`;
    case 'text':
      return annotation.tokenizer === undefined ? '@text' : `@text(${annotation.tokenizer})`;
    case 'ttl':
      return `@ttl(${printDuration(annotation.ms)})`;
    case 'hnsw': {
      const m = annotation.m === undefined ? '' : `, m = ${annotation.m}`;
      const ef = annotation.ef === undefined ? '' : `, ef = ${annotation.ef}`;
      const efConstruction =
        annotation.efConstruction === undefined ? '' : `, ef_construction = ${annotation.efConstruction}`;
      return `@hnsw(${annotation.metric}${m}${ef}${efConstruction})`;
    }
    case 'embed': {
      const model = annotation.model === undefined ? '' : `, model = ${JSON.stringify(annotation.model)}`;
      return `@embed(${annotation.fields.join(', ')}${model})`;
    }
  }
}

/** The largest unit that states `ms` exactly: 10000 is 10s, 90000 is 90s, 1 is 1ms. */
function printDuration(ms: number): string {
  const [unit, size] = DURATION_UNITS.find(([, length]) => ms !== 0 && ms % length === 0) ?? ['ms', 1];
  return `${ms / size}${unit}`;
}

// Binding strength, loosest first; a child looser than its place requires is parenthesised.
const OR = 1;
const AND = 2;
const NOT = 3;
const PREDICATE = 4;
const ADDITIVE = 1;
const MULTIPLICATIVE = 2;
const UNARY = 3;
const PRIMARY = 4;

export function printCondition(cond: Cond): string {
  return condAt(cond, OR);
}

function condAt(cond: Cond, required: number): string {
  const text = condText(cond);
  return condStrength(cond) < required ? `(${text})` : text;
}

function condStrength(cond: Cond): number {
  if (cond.kind === 'Not') return negatedPredicate(cond.operand) === undefined ? NOT : PREDICATE;
  return cond.kind === 'Or' ? OR : cond.kind === 'And' ? AND : PREDICATE;
}

/** `a not in b`, `a not like "x"`, `a not has b`: how SQL writes these negations, and how people read them. */
function negatedPredicate(cond: Cond): string | undefined {
  switch (cond.kind) {
    case 'In':
    case 'Has':
      return `${printExpr(cond.left)} not ${cond.kind === 'In' ? 'in' : 'has'} ${printExpr(cond.right)}`;
    case 'Like':
      return `${printExpr(cond.operand)} not like ${JSON.stringify(cond.pattern)}`;
    default:
      return undefined;
  }
}

function condText(cond: Cond): string {
  switch (cond.kind) {
    // Both operators associate to the left, so a right operand of the same strength keeps its parentheses.
    case 'Or':
      return `${condAt(cond.left, OR)} or ${condAt(cond.right, AND)}`;
    case 'And':
      return `${condAt(cond.left, AND)} and ${condAt(cond.right, NOT)}`;
    case 'Not':
      return negatedPredicate(cond.operand) ?? `not ${condAt(cond.operand, NOT)}`;
    case 'Compare':
      return `${printExpr(cond.left)} ${cond.op} ${printExpr(cond.right)}`;
    case 'Has':
      return `${printExpr(cond.left)} has ${printExpr(cond.right)}`;
    case 'In':
      return `${printExpr(cond.left)} in ${printExpr(cond.right)}`;
    case 'IsNull':
      return `${printExpr(cond.operand)} is ${cond.negated ? 'not ' : ''}null`;
    case 'Like':
      return `${printExpr(cond.operand)} like ${JSON.stringify(cond.pattern)}`;
    case 'Truth':
      return printExpr(cond.expr);
  }
}

export function printExpr(expr: Expr): string {
  return exprAt(expr, ADDITIVE);
}

function exprAt(expr: Expr, required: number): string {
  const text = exprText(expr);
  return exprStrength(expr) < required ? `(${text})` : text;
}

function exprStrength(expr: Expr): number {
  if (expr.kind === 'Binary') return expr.op === '+' || expr.op === '-' ? ADDITIVE : MULTIPLICATIVE;
  if (expr.kind === 'Negate' || isNegativeNumber(expr)) return UNARY;
  return PRIMARY;
}

function isNegativeNumber(expr: Expr): boolean {
  return expr.kind === 'Literal' && typeof expr.value === 'number' && (expr.value < 0 || Object.is(expr.value, -0));
}

function exprText(expr: Expr): string {
  switch (expr.kind) {
    case 'Literal':
      return printLiteral(expr);
    case 'Array':
      return `[${expr.items.map(printExpr).join(', ')}]`;
    case 'Object':
      return `{${expr.entries.map((e) => `${isName(e.key) ? e.key : JSON.stringify(e.key)}: ${printExpr(e.value)}`).join(', ')}}`;
    case 'Param':
      return `$${expr.index}`;
    case 'Jwt':
      return `$jwt.${expr.claim}`;
    case 'Field':
      return expr.name;
    case 'Call':
      return `${expr.fn}(${expr.args.map(printExpr).join(', ')})`;
    case 'Binary': {
      const strength = exprStrength(expr);
      return `${exprAt(expr.left, strength)} ${expr.op} ${exprAt(expr.right, strength + 1)}`;
    }
    case 'Negate': {
      // "-5" would read back as a literal, and "--" opens a comment: both need the parentheses.
      const operand = expr.operand;
      const bare = operand.kind !== 'Negate' && !(operand.kind === 'Literal' && typeof operand.value === 'number');
      return bare ? `-${exprAt(operand, UNARY)}` : `-(${printExpr(operand)})`;
    }
  }
}

function printLiteral(literal: LiteralExpr): string {
  const value = literal.value;
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value !== 'number' || literal.type !== 'float') return String(value);
  if (Object.is(value, -0)) return '-0.0';
  // A float keeps a fraction or an exponent, or it would read back as an int.
  const text = String(value);
  return /[.e]/.test(text) ? text : `${text}.0`;
}
