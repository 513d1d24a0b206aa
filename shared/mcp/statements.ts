/**
 * The statements the tools run, built as trees. A `filter` is parsed as a condition alone and
 * embedded as the tree it parsed to; every value a caller gives is bound as a parameter (`$N`),
 * never written into text. The tool's own values (words, a vector, a row's fields) take the
 * parameters after the caller's `params`.
 */
import type { Cond, Expr, GetStmt, ObjectEntry, ObjectExpr, ParamExpr, Statement } from '../fenecql/ast.js';
import { MAX_PARAMS, Params, param } from '../fenecql/bind.js';
import { DURATION_UNITS } from '../fenecql/lexer.js';
import { parseCondition, parseStatement } from '../fenecql/parser.js';
import { FenecError } from '../errors.js';
import { checkName, type Arguments } from './arguments.js';
import { VECTOR_FIELD } from './memory.js';
import { DEFAULT_RECALL_LIMIT, DEFAULT_SEARCH_LIMIT, type Detail } from './tools.js';

/** A statement and the values bound to its parameters. */
export interface Bound<S extends Statement = Statement> {
  readonly statement: S;
  readonly params: readonly unknown[];
}

/** A call binding fewer values than this has a tree of parameters only, which serves every call of its shape. */
export const MAX_BOUND = MAX_PARAMS;

const int = (value: number): Expr => ({ kind: 'Literal', type: 'int', value });
const field = (name: string): Expr => ({ kind: 'Field', name });
const and = (left: Cond | undefined, right: Cond): Cond => (left === undefined ? right : { kind: 'And', left, right });

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
    throw new FenecError(err.code, `${tool}: filter ${JSON.stringify(filter)} is not a condition alone: ${err.message}`, {
      hint: err.hint ?? 'a filter is one FenecQL condition, e.g. year >= $1 and tags has $2, with its values in params',
      position: err.position,
    });
  }
  const highest = highestParam(cond);
  if (highest > params) {
    throw new FenecError('missing_parameter', `${tool}: filter uses $${highest} and params has ${params} value${params === 1 ? '' : 's'}`, {
      hint: `give params an array of ${highest} values, bound to $1…$${highest}`,
    });
  }
  return cond;
}

function highestParam(node: Cond | Expr): number {
  switch (node.kind) {
    case 'And':
    case 'Or':
    case 'Compare':
    case 'Has':
    case 'In':
    case 'Binary':
      return Math.max(highestParam(node.left), highestParam(node.right));
    case 'Not':
    case 'Negate':
    case 'IsNull':
    case 'Like':
      return highestParam(node.operand);
    case 'Truth':
      return highestParam(node.expr);
    case 'Param':
      return node.index;
    case 'Array':
      return Math.max(0, ...node.items.map(highestParam));
    case 'Object':
      return Math.max(0, ...node.entries.map((e) => highestParam(e.value)));
    case 'Call':
      return Math.max(0, ...node.args.map(highestParam));
    case 'Literal':
    case 'Jwt':
    case 'Field':
      return 0;
  }
}

/**
 * What makes two search calls run the same tree: everything but the values bound. The values of a
 * call are its params, then its text, then its vector — the order searchStatement binds them in.
 */
export function searchShape(args: Arguments, vectorField: string | undefined): string {
  const given = args.params == null ? 0 : (args.params as unknown[]).length;
  return JSON.stringify(['search', args.collection, args.filter ?? null, args.fields ?? null, args.detail ?? null, args.limit ?? null, given, args.text != null, vectorField ?? null]);
}

/** What `detail` selects: id alone (match and near add _score and snippet), `fields`, or every field. */
function detailSelect(tool: string, args: Arguments, fields: readonly string[] | null): GetStmt['select'] {
  const detail = (args.detail as Detail | undefined) ?? 'fields';
  if (detail !== 'fields' && args.fields != null) {
    throw new FenecError('invalid_argument', `${tool}: fields chooses the fields of detail "fields"; detail "${detail}" answers ${detail === 'ids' ? 'ids' : 'every field'}`, {
      hint: `leave out fields, or detail`,
    });
  }
  if (detail === 'ids') return ['id'];
  if (detail === 'full') return '*';
  return fields;
}

export function searchParams(args: Arguments): unknown[] {
  const values = args.params == null ? [] : [...(args.params as unknown[])];
  if (args.text != null) values.push(args.text);
  if (args.vector != null) values.push(args.vector);
  return values;
}

/** `search`: match over every @text field, near over the collection's vector field, fused when both. */
export function searchStatement(args: Arguments, vectorField: string | undefined): Bound<GetStmt> {
  const collection = checkName('search', 'collection', args.collection as string);
  const params = new Params(args.params);
  const where = args.filter == null ? undefined : parseFilter('search', args.filter as string, params.values.length);
  const fields = detailSelect('search', args, args.fields == null ? null : (args.fields as string[]).map((name, i) => checkName('search', `fields[${i}]`, name)));
  const text = args.text == null ? undefined : params.add(args.text);
  const vector = args.vector == null ? undefined : params.add(args.vector);
  const statement: GetStmt = {
    kind: 'Get',
    collection,
    select: fields,
    ...(text === undefined ? {} : { match: { field: '*', query: text } }),
    ...(vector === undefined ? {} : { near: { field: vectorField!, vector } }),
    fuse: text !== undefined && vector !== undefined,
    ...(where === undefined ? {} : { where }),
    order: [],
    limit: int((args.limit as number | undefined) ?? DEFAULT_SEARCH_LIMIT),
    count: false,
  };
  return { statement, params: params.values };
}

/**
 * `query`: one read statement, as text. A write is refused: writes go through `write`, which never
 * changes a schema.
 *
 * @throws FenecError the parse error, or `forbidden` for a statement that is not a read.
 */
export function queryStatement(args: Arguments): Bound<GetStmt | Extract<Statement, { kind: 'Schema' }>> {
  const statement = parseStatement(args.statement as string);
  if (statement.kind !== 'Get' && statement.kind !== 'Schema') {
    throw new FenecError('forbidden', `query runs reads (get, schema); this statement is a${statement.kind === 'Insert' ? 'n' : ''} ${statement.kind.toLowerCase()}`, {
      hint: 'rows are written with the write tool, where the server offers it (--mcp-write); schemas and compact are never changed over MCP',
    });
  }
  return { statement, params: args.params == null ? [] : (args.params as unknown[]) };
}

/** `schema [collection]`. */
export function schemaStatement(args: Arguments): Bound {
  const collection = args.collection == null ? undefined : checkName('schema', 'collection', args.collection as string);
  return { statement: collection === undefined ? { kind: 'Schema' } : { kind: 'Schema', collection }, params: [] };
}

const WRITE_VERBS = ['insert', 'put', 'set', 'del'] as const;

/**
 * `write`: one insert, put, set or del, built here — never a schema change or compact, whatever the
 * token. Each field value of a row is a parameter.
 */
export function writeStatement(args: Arguments): Bound {
  const collection = checkName('write', 'collection', args.collection as string);
  const verbs = WRITE_VERBS.filter((verb) => args[verb] != null);
  if (verbs.length !== 1) {
    throw new FenecError('invalid_argument', `write takes exactly one of insert, put, set and del, not ${verbs.length === 0 ? 'none' : verbs.join(' and ')}`, {
      hint: 'e.g. {"collection": "notes", "insert": {"title": "…"}} or {"collection": "notes", "del": true, "filter": "id = $1", "params": [7]}',
    });
  }
  const verb = verbs[0]!;
  const params = new Params(args.params);
  const needsFilter = verb === 'set' || verb === 'del';
  if (!needsFilter && args.filter != null) {
    throw new FenecError('invalid_argument', `write: filter is for set and del; ${verb} names its rows itself`);
  }
  if (needsFilter && args.filter == null) {
    throw new FenecError('invalid_argument', `write: ${verb} needs a filter naming its rows`, { hint: 'e.g. "filter": "id = $1" with "params": [7]; "true" for every row' });
  }
  const where = needsFilter ? parseFilter('write', args.filter as string, params.values.length) : undefined;
  switch (verb) {
    case 'insert':
    case 'put':
      // A bulk write: the rows are one parameter, checked by the database as rows written out are.
      return { statement: verb === 'insert' ? { kind: 'Insert', collection, rows: param(1), many: true } : { kind: 'Put', collection, row: param(1) }, params: [checkedRows(verb, args[verb])] };
    case 'set':
      return { statement: { kind: 'Set', collection, changes: rowExpr('set', args.set as Record<string, unknown>, params), where: where! }, params: params.values };
    case 'del':
      return { statement: { kind: 'Del', collection, where: where! }, params: params.values };
  }
}

/** A write's rows (a row or an array of them, objects as the tool's schema checked), their field names held to FenecQL's rule for a name. */
function checkedRows(verb: 'insert' | 'put', value: unknown): unknown {
  const rows = (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
  rows.forEach((row, i) => {
    for (const key of Object.keys(row)) checkName('write', `${verb}${Array.isArray(value) ? `[${i}]` : ''}: a field`, key);
  });
  return value;
}

function rowExpr(path: string, row: Record<string, unknown>, params: Params): ObjectExpr {
  const entries: ObjectEntry[] = [];
  for (const [key, value] of Object.entries(row)) {
    checkName('write', `${path}: a field`, key);
    entries.push({ key, value: value === null ? { kind: 'Literal', type: 'null', value: null } : params.add(value) });
  }
  return { kind: 'Object', entries };
}

/** Milliseconds of an `expires_in` such as 30m, 12h or 7d (checked against the tool's pattern before). */
export function durationMs(text: string): number {
  const [, amount, unit] = /^(\d+)([a-z]+)$/.exec(text)!;
  const ms = Number(amount) * DURATION_UNITS.find(([name]) => name === unit)![1];
  if (!Number.isSafeInteger(ms)) throw new FenecError('invalid_argument', `remember: expires_in ${text} is too long`);
  return ms;
}

/** `insert into C {text: $1, tags: $2, at: now(), expires: now() + $3 | null[, vector: $4]}` */
export function rememberStatement(collection: string, args: Arguments): Bound {
  const params = new Params(undefined);
  const entries: ObjectEntry[] = [
    { key: 'text', value: params.add(args.text) },
    { key: 'tags', value: params.add(args.tags ?? []) },
    { key: 'at', value: { kind: 'Call', fn: 'now', args: [] } },
    {
      key: 'expires',
      value: args.expires_in == null
        ? { kind: 'Literal', type: 'null', value: null }
        : { kind: 'Binary', op: '+', left: { kind: 'Call', fn: 'now', args: [] }, right: params.add(durationMs(args.expires_in as string)) },
    },
  ];
  if (args.vector != null) entries.push({ key: VECTOR_FIELD, value: params.add(args.vector) });
  return { statement: { kind: 'Insert', collection, rows: [{ kind: 'Object', entries }], many: false }, params: params.values };
}

/** What makes two recall calls run the same tree; their values are the text, the vector, then each tag. */
export function recallShape(args: Arguments): string {
  return JSON.stringify(['recall', args.text != null, args.vector != null, ((args.tags as unknown[] | undefined) ?? []).length, args.detail ?? null, args.limit ?? null]);
}

export function recallParams(args: Arguments): unknown[] {
  const values: unknown[] = [];
  if (args.text != null) values.push(args.text);
  if (args.vector != null) values.push(args.vector);
  for (const tag of (args.tags as unknown[] | undefined) ?? []) values.push(tag);
  return values;
}

/** The fields a memory is recalled with, at detail "fields". */
const RECALLED = Object.freeze(['text', 'tags', 'at']);

/** `get C select text, tags, at [match text $1] [near vector $2] [fuse] [where tags has $3 and …] [order at desc, id desc] limit N` */
export function recallStatement(collection: string, args: Arguments): Bound<GetStmt> {
  const params = new Params(undefined);
  const text = args.text == null ? undefined : params.add(args.text);
  const vector = args.vector == null ? undefined : params.add(args.vector);
  let where: Cond | undefined;
  for (const tag of (args.tags as string[] | undefined) ?? []) where = and(where, { kind: 'Has', left: field('tags'), right: params.add(tag) });
  const ranked = text !== undefined || vector !== undefined;
  const statement: GetStmt = {
    kind: 'Get',
    collection,
    select: detailSelect('recall', args, RECALLED),
    ...(text === undefined ? {} : { match: { field: 'text', query: text } }),
    ...(vector === undefined ? {} : { near: { field: VECTOR_FIELD, vector } }),
    fuse: text !== undefined && vector !== undefined,
    ...(where === undefined ? {} : { where }),
    order: ranked ? [] : [{ field: 'at', direction: 'desc' }, { field: 'id', direction: 'desc' }],
    limit: int((args.limit as number | undefined) ?? DEFAULT_RECALL_LIMIT),
    count: false,
  };
  return { statement, params: params.values };
}

/** `del C where id = $1` */
export function forgetStatement(collection: string, args: Arguments): Bound {
  return { statement: { kind: 'Del', collection, where: { kind: 'Compare', op: '=', left: field('id'), right: param(1) } }, params: [args.id] };
}
