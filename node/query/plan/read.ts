/**
 * `get` into a plan: a plain read, a count, or a full-text search (`match`), each over the rows that
 * are live (not past an `@ttl`) and pass `where`.
 */
import type { Cond, Expr, GetStmt, Position } from '../../../shared/fenecql/ast.js';
import { FenecError } from '../../../shared/errors.js';
import { withIdTies } from '../../../shared/fenecql/order.js';
import { printExpr } from '../../../shared/fenecql/print.js';
import { textSearchSql, textTopSelect } from '../../search/text-index.js';
import { fieldSql, ID_TYPE, type Collection, type Field } from '../../schema/catalog.js';
import { ident } from '../../storage/sqlite.js';
import { bindValue, Compiler, type Fragment } from '../compile/compiler.js';
import type { OutputColumn, Plan } from './plan-types.js';
import { planVector, type ReadShape } from './vector.js';
import { textRank, type MatchQuery } from './text-rank.js';
import { isValue } from '../compile/evaluate.js';
import type { Arg } from '../compile/args.js';
import { scalar, typeName, type ExprType } from '../compile/expr-types.js';

export function fieldOf(collection: Collection, name: string, pos?: Position): Field {
  const field = collection.byName.get(name);
  if (field === undefined) {
    throw new FenecError('unknown_field', `${collection.name} has no field ${name}`, {
      position: pos,
      hint: `its fields: id, ${collection.fields.map((f) => f.name).join(', ')}`,
    });
  }
  return field;
}

/** A limit or offset: an int literal or a parameter, never negative. */
function bindCount(expr: Expr, what: 'limit' | 'offset'): Arg {
  if (expr.kind === 'Literal' && expr.type === 'int' && (expr.value as number) >= 0)
    return { kind: 'literal', value: expr.value as number };
  if (expr.kind !== 'Param') {
    throw new FenecError(
      'invalid_value',
      `${what} takes a whole number ≥ 0 or a parameter; ${printExpr(expr)} is neither`,
      { position: expr.pos },
    );
  }
  return { kind: 'count', what, index: expr.index };
}

function selectedFields(stmt: GetStmt, collection: Collection): Field[] {
  if (stmt.select === null) return collection.fields.filter((f) => !f.isVector);
  if (stmt.select === '*') return [...collection.fields];
  return stmt.select.filter((name) => name !== 'id').map((name) => fieldOf(collection, name));
}

/** Fields whose stored form is their JSON form need no decoding: most reads skip the call. */
function outputColumns(fields: readonly Field[]): OutputColumn[] {
  return [
    { key: 'id', decode: null },
    ...fields.map((f) => ({
      key: f.name,
      decode:
        f.type.kind === 'scalar' && (f.type.scalar === 'text' || f.type.scalar === 'int' || f.type.scalar === 'float')
          ? null
          : f.decode,
    })),
  ];
}

/** `ORDER BY` for the `order` clause (qualified by `prefix`), ties in id order (withIdTies); undefined without one. */
function orderSql(stmt: GetStmt, collection: Collection, prefix: string): string | undefined {
  if (stmt.order.length === 0) return undefined;
  const order = withIdTies(stmt.order).map((item) => {
    const type: ExprType = item.field === 'id' ? ID_TYPE : fieldOf(collection, item.field, item.pos).type;
    if (type.kind !== 'scalar' || type.scalar === 'json') {
      throw new FenecError('invalid_statement', `cannot order by ${item.field}: it is ${typeName(type)}`, {
        position: item.pos,
        hint: 'order takes text, int, float, bool or timestamp fields',
      });
    }
    return `${prefix}${ident(item.field)} ${item.direction === 'desc' ? 'DESC' : 'ASC'}`;
  });
  return order.join(', ');
}

/**
 * A limit or offset as SQL: a literal is written in (`10`), a parameter binds as `+?`. Never a bare
 * `?`: SQLite reads the value bound to a bare `?` LIMIT while planning, so that binding it again (every
 * execution binds every argument) expires the prepared statement, which is then parsed and planned
 * again at its next run (sqlite3ExprIsInteger marks the parameter; sqlite3_bind then expires the
 * statement). `+?` is an expression the planner leaves alone: the statement is prepared once. That
 * re-preparing cost a `match … limit 10` about a tenth of its time (bench/HISTORY.md).
 */
function countSql(expr: Expr, what: 'limit' | 'offset'): { sql: string; args: Arg[] } {
  const bound = bindCount(expr, what); // refuses anything but a whole number ≥ 0 or a parameter
  return expr.kind === 'Literal' ? { sql: String(expr.value), args: [] } : { sql: '+?', args: [bound] };
}

/** `LIMIT … OFFSET …` and their arguments, or nothing when the statement has neither. */
function pageSql(stmt: GetStmt): { sql: string; args: Arg[] } {
  if (stmt.limit === undefined && stmt.offset === undefined) return { sql: '', args: [] };
  const limit = stmt.limit === undefined ? { sql: '-1', args: [] as Arg[] } : countSql(stmt.limit, 'limit');
  if (stmt.offset === undefined) return { sql: ` LIMIT ${limit.sql}`, args: limit.args };
  const offset = countSql(stmt.offset, 'offset');
  return { sql: ` LIMIT ${limit.sql} OFFSET ${offset.sql}`, args: [...limit.args, ...offset.args] };
}

/**
 * The condition a statement's rows must meet: its `where`, the token's policy condition when a JSON Web Token runs it,
 * and for each `@ttl(D)` field that the row has not expired (`field + D` still ahead, or the field null). Reads filter
 * by time; the sweeper only reclaims the space.
 */
export function rowFilter(
  where: GetStmt['where'],
  collection: Collection,
  compiler: Compiler,
  policy?: Cond,
): Fragment | undefined {
  const parts: Fragment[] = [];
  if (where !== undefined) parts.push(compiler.cond(where));
  if (policy !== undefined) parts.push(compiler.cond(policy));
  for (const field of collection.fields) {
    for (const annotation of field.def.annotations) {
      if (annotation.kind !== 'ttl') continue;
      const ms = annotation.ms;
      // Between two sweeps nearly every row is live, so no index may serve this filter (the unary `+`):
      // through the field's index SQLite read every live row's entry and sorted them all, even for a
      // `limit 1` that a scan in id order answers at its first row (mcp-bench's recall: 1.3 ms → µs).
      // The index is the sweeper's, and serves the conditions a statement writes on the field.
      const value = `+${collection.table}.${field.column}`;
      parts.push({
        sql: `(${value} IS NULL OR ${value} > ?)`,
        args: [{ kind: 'now', minus: ms }],
        type: scalar('bool'),
      });
    }
  }
  if (parts.length === 0) return undefined;
  if (parts.length === 1) return parts[0];
  return { sql: parts.map((p) => p.sql).join(' AND '), args: parts.flatMap((p) => p.args), type: scalar('bool') };
}

export function planGet(stmt: GetStmt, collection: Collection, policy?: Cond): Plan {
  const compiler = new Compiler(collection);
  const filter = rowFilter(stmt.where, collection, compiler, policy);
  if (stmt.near !== undefined) {
    const fields = selectedFields(stmt, collection);
    const shape: ReadShape = {
      fields,
      columns: outputColumns(fields),
      order: orderSql(stmt, collection, ''),
      limit: stmt.limit === undefined ? undefined : bindCount(stmt.limit, 'limit'),
      offset: stmt.offset === undefined ? undefined : bindCount(stmt.offset, 'offset'),
    };
    const text = stmt.match === undefined ? undefined : matchQuery(stmt.match, collection, compiler, policy);
    return planVector(stmt, collection, fieldOf(collection, stmt.near.field, stmt.near.pos), filter, shape, text);
  }
  if (stmt.match !== undefined)
    return planMatch(stmt, matchQuery(stmt.match, collection, compiler, policy), collection, filter);

  const page = pageSql(stmt);
  // Without `order` SQLite picks the cheapest path, an index when the filter has one, and rows come in
  // that path's order (id order for a scan). A forced `ORDER BY id` would make SQLite scan the whole
  // table to spare itself a sort, even for a filter on an indexed field.
  const order = orderSql(stmt, collection, '');
  const from = ` FROM ${collection.table}${filter === undefined ? '' : ` WHERE ${filter.sql}`}${order === undefined ? '' : ` ORDER BY ${order}`}${page.sql}`;
  const args = [...(filter?.args ?? []), ...page.args];
  if (stmt.count) return { kind: 'count', step: { sql: `SELECT count(*) FROM (SELECT 1${from})`, args } };
  const fields = selectedFields(stmt, collection);
  const list = ['"id"', ...fields.map((f) => fieldSql(f, collection.table))].join(', ');
  const step = { sql: `SELECT ${list}${from}`, args };
  const columns = outputColumns(fields);
  return oneRowAtMost(stmt) ? { kind: 'read', step, columns, one: true } : { kind: 'read', step, columns };
}

/**
 * Whether a plain `get` finds one row at most: `limit 1`, or a `where` that names one id (`id = value`, alone or
 * and-ed with other conditions). Such a read is answered from one fetch of its row (run-plan.ts).
 */
function oneRowAtMost(stmt: GetStmt): boolean {
  if (stmt.limit?.kind === 'Literal' && stmt.limit.value === 1) return true;
  // A list, not recursion: `a and b and …` nests as deep as it is long.
  const pending: Cond[] = stmt.where === undefined ? [] : [stmt.where];
  for (let cond = pending.pop(); cond !== undefined; cond = pending.pop()) {
    if (cond.kind === 'And') pending.push(cond.left, cond.right);
    else if (
      cond.kind === 'Compare' &&
      cond.op === '=' &&
      (namesId(cond.left, cond.right) || namesId(cond.right, cond.left))
    )
      return true;
  }
  return false;
}

/** `id` on one side, a value that reads no field (a literal, a parameter, a claim) on the other. */
function namesId(field: Expr, value: Expr): boolean {
  return (
    field.kind === 'Field' &&
    field.name === 'id' &&
    (value.kind === 'Literal' || value.kind === 'Param' || value.kind === 'Jwt')
  );
}

/** `match FIELD "words"` (or `*`), checked, under the token's policy condition when it has one. */
function matchQuery(
  match: NonNullable<GetStmt['match']>,
  collection: Collection,
  compiler: Compiler,
  policy: Cond | undefined,
): MatchQuery {
  const textFields = collection.textFields;
  if (textFields.length === 0 || (match.field !== '*' && !textFields.some((f) => f.name === match.field))) {
    if (match.field !== '*') fieldOf(collection, match.field, match.pos);
    throw new FenecError(
      'invalid_statement',
      match.field === '*'
        ? `${collection.name} has no @text field to match`
        : `match ${match.field}: ${match.field} is not an @text field`,
      {
        position: match.pos,
        hint:
          textFields.length === 0
            ? `match searches fields declared with @text: alter collection ${collection.name} add FIELD text @text`
            : `the @text fields of ${collection.name}: ${textFields.map((f) => f.name).join(', ')}; match * searches them all`,
      },
    );
  }
  if (!isValue(match.query)) {
    throw new FenecError(
      'type_mismatch',
      `match takes the words to search for, as text or a parameter; ${printExpr(match.query)} is neither`,
      {
        position: match.query.pos,
      },
    );
  }
  const words = bindValue(match.query, scalar('text'), 'the words after match');
  const column = match.field === '*' ? -1 : textFields.findIndex((f) => f.name === match.field);
  const fields = textFields.map((f) => f.name);
  const { textTokenizer: tokenizer } = collection;
  const terms = (part: 'expression' | 'snippet'): Arg => ({
    kind: 'words',
    part,
    field: match.field,
    fields,
    tokenizer,
    words,
  });
  return {
    field: match.field,
    expression: terms('expression'),
    snippetWords: terms('snippet'),
    rank: textRank(collection, match.field, column, words, compiler, policy),
  };
}

/**
 * `match FIELD "words"` or `match * "words"`: the rows best first by BM25 (unless `order` says
 * otherwise), each with `snippet` and `_score`. The filter applies before the limit.
 */
function planMatch(stmt: GetStmt, query: MatchQuery, collection: Collection, filter: Fragment | undefined): Plan {
  const search = textSearchSql(collection.name, collection.textFields, query.field, filter?.sql);
  const page = pageSql(stmt);
  const order = orderSql(stmt, collection, 'c.');
  const filterArgs = filter?.args ?? [];
  const guard = query.expression;
  if (stmt.count) {
    // A count ranks nothing: no rank function, and no statistics to count.
    const sql = `SELECT count(*) FROM (SELECT 1 FROM ${search.from} WHERE ${search.match}${page.sql})`;
    return { kind: 'count', step: { sql, args: [...filterArgs, query.expression, ...page.args] }, guard };
  }
  const fields = selectedFields(stmt, collection);
  const selected = ['c."id"', ...fields.map((f) => fieldSql(f, 'c'))];
  const columns: OutputColumn[] = [
    ...outputColumns(fields),
    { key: 'snippet', decode: null },
    { key: '_score', decode: null },
  ];
  // The top rows by SQLite's sorter, snipped after the limit (textTopSelect).
  const { rank } = query;
  const sql = textTopSelect(
    collection.name,
    collection.textFields,
    query.field,
    selected,
    page.sql,
    collection.textTokenizer,
    {
      where: filter?.sql,
      scoped: rank !== undefined,
      order,
    },
  );
  const args = [
    query.snippetWords,
    ...filterArgs,
    query.expression,
    ...(rank === undefined ? [] : [rank.arg]),
    ...page.args,
  ];
  return { kind: 'read', step: { sql, args }, columns, guard, scoped: rank?.scoped };
}
