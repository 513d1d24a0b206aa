/**
 * Pages of a read: a `get` whose limit is its page size answers `next_cursor` when more rows follow,
 * and a cursor continues it after the last row answered — by keys, never by offset.
 *
 * - A read with `order` (or none: then id order) continues after the last row's `order` values and
 *   id, as a condition ANDed into its `where`: `year > $a or (year = $a and id > $b)`, with nulls
 *   where SQLite sorts them (first ascending, last descending).
 * - A ranked read (`match`, `near`, `fuse`, without `order`) continues after the last row's
 *   `(_score, id)`: the ranking is run again deep enough to hold the next page, and the rows at or
 *   before the key are left out.
 * - Either way a walk is over the rows there were when it began: its cursor holds the highest id of
 *   its first page's time, and rows inserted since (higher ids) are not part of it.
 *
 * A `near` read with `order` (its k nearest, sorted by a field) has no next page: the k nearest of a
 * continuation would be other rows, not the next ones.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Cond, Expr, GetStmt, OrderItem, Statement } from '../fenecql/ast.js';
import { Params } from '../fenecql/bind.js';
import { withIdTies } from '../fenecql/order.js';
import { printStatement } from '../fenecql/print.js';
import type { Answer } from '../answer.js';
import { FenecError } from '../errors.js';
import type { Binding, CursorKeeper, Position } from './cursor.js';

type Row = Record<string, unknown>;

/** What the pager needs of a database: a statement tree run under the caller's options. */
export interface ReadRunner<O> {
  executeStatement(statement: Statement, params: readonly unknown[], options: O): Answer;
}

export interface PageRequest<O> {
  /** The read as asked; its `limit` is the page size. */
  readonly statement: GetStmt;
  readonly params: readonly unknown[];
  readonly options: O;
  /** The cursor given, to continue from. */
  readonly cursor: string | undefined;
  /** What a cursor is bound to, but the read itself (the pager works it out). */
  readonly scope: string;
  readonly subject: string;
  /**
   * The most rows an answer may hold (MCP's bound): the read is run for at most one row more, so that
   * a statement matching a million rows never reads them all. Undefined: no bound but the limit.
   */
  readonly bound?: number;
}

export interface Page {
  /** `{"rows": [...], "count": n}`, with `next_cursor` when more rows follow. */
  readonly answer: Answer;
  /** The read this page ran, without its limit: what a refusal counts the rows of. */
  readonly counted: GetStmt;
  readonly params: readonly unknown[];
}

const ID: OrderItem = { field: 'id', direction: 'asc' };
const int = (value: number): Expr => ({ kind: 'Literal', type: 'int', value });
const field = (name: string): Expr => ({ kind: 'Field', name });
const or = (parts: Cond[]): Cond => parts.reduce((left, right) => ({ kind: 'Or', left, right }));
const and = (parts: Cond[]): Cond => parts.reduce((left, right) => ({ kind: 'And', left, right }));
/** Each deeper run of a ranking for a page at least doubles how many rows it asks for. */
const DEEPER = 2;

/** The rows a ranked walk answers after the row `id` scoring `score`. */
function afterRank(score: number, id: number): (row: Row) => boolean {
  return (row) => (row._score as number) < score || ((row._score as number) === score && (row.id as number) > id);
}

/** Whether a read can page: a read of rows (not a count) that `near` does not sort by a field. */
export function pages(statement: GetStmt): boolean {
  return !statement.count && !(statement.near !== undefined && statement.order.length > 0);
}

function ranked(statement: GetStmt): boolean {
  return (statement.match !== undefined || statement.near !== undefined) && statement.order.length === 0;
}

/** The page size: the statement's limit, a literal or a parameter; undefined without one. */
function pageSize(statement: GetStmt, params: readonly unknown[]): number | undefined {
  const limit = statement.limit;
  if (limit === undefined) return undefined;
  const value = limit.kind === 'Literal' ? limit.value : limit.kind === 'Param' ? params[limit.index - 1] : undefined;
  // A limit the database would refuse is left for it to refuse, with its own message.
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/**
 * What a cursor is bound to: the statement without what may change between pages (limit, offset,
 * select — a narrower call keeps its cursor) and the values bound, but a parameter limit's. A value that is an
 * array of numbers (a `near`'s vector) is bound by the digest of its float64 bytes, not its JSON: writing a
 * 384-number vector as text took 35–40 µs, a quarter of what main's `near` cost over the build before.
 */
export function readIdentity(statement: GetStmt, params: readonly unknown[]): string {
  const limitAt = statement.limit?.kind === 'Param' ? statement.limit.index - 1 : -1;
  const vectors: string[] = [];
  const values = params.map((v, i) => {
    if (i === limitAt) return null;
    if (!isNumberList(v)) return v;
    vectors.push(`${i}:${numbersDigest(v)}`);
    return null;
  });
  // JSON text holds no raw NUL, so the three parts cannot run into one another.
  return `${boundText(statement)}\u0000${JSON.stringify(values)}\u0000${vectors.join(',')}`;
}

/**
 * The statement a cursor is bound to, printed once for each tree: a tree is never changed (ast.ts), and /query's is
 * the one the database keeps for the statement's text, the same object on every page.
 */
const printed = new WeakMap<GetStmt, string>();

function boundText(statement: GetStmt): string {
  let text = printed.get(statement);
  if (text === undefined) {
    text = printStatement({ ...statement, select: null, limit: undefined, offset: undefined });
    printed.set(statement, text);
  }
  return text;
}

function isNumberList(value: unknown): value is number[] {
  if (!Array.isArray(value) || value.length === 0) return false;
  for (const x of value) if (typeof x !== 'number') return false;
  return true;
}

function numbersDigest(numbers: readonly number[]): string {
  const bytes = new Float64Array(numbers.length);
  // `+ 0` makes -0 into 0, as JSON writes both.
  for (let i = 0; i < numbers.length; i++) bytes[i] = numbers[i]! + 0;
  return hash('sha256', bytes, 'base64url');
}

/** Collections whose highest-id read is kept built. */
const NEWEST_KEPT = 256;

export class Pager<O> {
  readonly #db: ReadRunner<O>;
  readonly #keeper: CursorKeeper;
  /**
   * The trees the pager runs, built once and kept, so that the database finds them by the tree (the same object)
   * rather than printing a new one each page: each statement's tree with its page's limit (the last one asked), and
   * each collection's highest-id read.
   */
  readonly #limited = new WeakMap<GetStmt, { readonly limit: number; readonly statement: GetStmt }>();
  readonly #newest = new LRUCache<string, GetStmt>({ max: NEWEST_KEPT });

  constructor(db: ReadRunner<O>, keeper: CursorKeeper) {
    this.#db = db;
    this.#keeper = keeper;
  }

  /**
   * One page of the read: the first (no cursor) or the one after the cursor's position.
   *
   * @throws FenecError the cursor's refusal (cursor.ts), `invalid_argument` for a cursor given to a
   *   read that does not page, or the read's own.
   */
  read(request: PageRequest<O>): Page {
    const { statement, params } = request;
    const binding: Binding = { scope: request.scope, read: readIdentity(statement, params), subject: request.subject };
    const position = request.cursor === undefined ? undefined : this.#keeper.read(request.cursor, binding);
    if (position !== undefined && !pages(statement)) {
      throw new FenecError(
        'invalid_argument',
        statement.count
          ? 'a count answers one number: it has no pages to continue'
          : 'a near read with order answers its k nearest sorted by a field: it has no next page',
        {
          hint: 'leave cursor out',
        },
      );
    }
    const size = pageSize(statement, params);
    const most =
      size === undefined ? request.bound : request.bound === undefined ? size : Math.min(size, request.bound);
    const fetch = most === undefined ? undefined : most + 1;
    const paging = pages(statement) && size !== undefined;

    let run = position === undefined ? { statement, params } : continuation(statement, params, position);
    let rows = this.#rows(run.statement, run.params, fetch, position, request.options);
    let through = position?.through;
    const more = paging && rows.length > size;
    if (more && position === undefined) {
      // The first page of a walk: read again in the walk's own order, with the fields its keys need.
      const walk = walkOrder(statement);
      if (walk !== statement) {
        run = { statement: walk, params };
        rows = this.#rows(walk, params, fetch, undefined, request.options);
      }
      through = this.#highestId(statement.collection, request.options);
    }
    const answered = more ? rows.slice(0, size) : rows;
    const answer: Record<string, unknown> = { rows: answered, count: answered.length };
    if (more && answered.length > 0) {
      const last = answered[answered.length - 1]!;
      answer.next_cursor = this.#keeper.issue(binding, {
        keys: ranked(statement) ? [] : withIdTies(walkOrder(statement).order).map((o) => last[o.field] ?? null),
        ...(ranked(statement) ? { score: last._score as number } : {}),
        id: last.id as number,
        through: through!,
        answered: (position?.answered ?? 0) + answered.length,
      });
    }
    stripKeys(statement, answered);
    const { limit, ...counted } = run.statement;
    return { answer, counted: counted as GetStmt, params: run.params };
  }

  /**
   * The rows of a run: at most `fetch`. A ranked continuation reads the ranking again from its top,
   * deep enough to hold the last row answered and the page after it, and answers the rows after that
   * row's place: an insert moves every BM25 score alike (they are relative to the collection), and
   * where the walk left off is the row's place among the others, not its old figure. (The engine
   * ranks best first, ties in id order, the same at any depth.) A row since deleted leaves its old
   * `(_score, id)` as the key.
   */
  #rows(
    statement: GetStmt,
    params: readonly unknown[],
    fetch: number | undefined,
    position: Position | undefined,
    options: O,
  ): Row[] {
    const limited = (n: number | undefined): GetStmt => (n === undefined ? statement : this.#limit(statement, n));
    if (position === undefined || !ranked(statement))
      return this.#db.executeStatement(limited(fetch), params, options).rows as Row[];
    let depth = fetch === undefined ? undefined : position.answered + fetch + 1;
    for (;;) {
      const rows = this.#db.executeStatement(limited(depth), params, options).rows as Row[];
      const whole = depth === undefined || rows.length < depth;
      const anchor = rows.findIndex((row) => row.id === position.id);
      if (anchor !== -1 || whole) {
        const next = anchor !== -1 ? rows.slice(anchor + 1) : rows.filter(afterRank(position.score!, position.id));
        if (whole || next.length >= fetch!) return fetch === undefined ? next : next.slice(0, fetch);
      }
      depth! *= DEEPER;
    }
  }

  /** The statement with `limit n`. */
  #limit(statement: GetStmt, n: number): GetStmt {
    const kept = this.#limited.get(statement);
    if (kept?.limit === n) return kept.statement;
    const limited: GetStmt = { ...statement, limit: int(n) };
    this.#limited.set(statement, { limit: n, statement: limited });
    return limited;
  }

  /** The highest id the caller reads in the collection now: where a walk beginning now ends. */
  #highestId(collection: string, options: O): number {
    let newest = this.#newest.get(collection);
    if (newest === undefined) {
      newest = {
        kind: 'Get',
        collection,
        select: ['id'],
        fuse: false,
        order: [{ field: 'id', direction: 'desc' }],
        limit: int(1),
        count: false,
      };
      this.#newest.set(collection, newest);
    }
    const rows = this.#db.executeStatement(newest, [], options).rows as Row[];
    return (rows[0]?.id as number | undefined) ?? 0;
  }
}

/** The order a walk goes in: the statement's, then id; and the fields its keys are read from. */
function walkOrder(statement: GetStmt): GetStmt {
  if (ranked(statement)) return statement;
  const order = statement.order.length === 0 ? [ID] : statement.order;
  const select = withKeys(statement.select, order);
  return order === statement.order && select === statement.select ? statement : { ...statement, order, select };
}

/** A select naming the fields the keys need besides its own (stripped from the rows answered). */
function withKeys(select: GetStmt['select'], order: readonly OrderItem[]): GetStmt['select'] {
  if (select === null || select === '*') return select;
  const missing = order.map((o) => o.field).filter((f) => f !== 'id' && !select.includes(f));
  return missing.length === 0 ? select : [...select, ...missing];
}

function stripKeys(statement: GetStmt, rows: Row[]): void {
  const { select } = statement;
  if (select === null || select === '*') return;
  const added = statement.order.map((o) => o.field).filter((f) => f !== 'id' && !select.includes(f));
  if (added.length === 0) return;
  for (const row of rows) for (const name of added) delete row[name];
}

/**
 * The read after a position: its `where` ANDed with `id <= through` and, for a read by fields, the
 * keyset condition; no offset (the position is past it). Its values are parameters after the
 * caller's.
 */
function continuation(
  statement: GetStmt,
  params: readonly unknown[],
  position: Position,
): { statement: GetStmt; params: readonly unknown[] } {
  const walk = walkOrder(statement);
  const bound = new Params(params);
  const parts: Cond[] = [];
  if (statement.where !== undefined) parts.push(statement.where);
  parts.push({ kind: 'Compare', op: '<=', left: field('id'), right: bound.add(position.through) });
  if (!ranked(statement)) {
    const keys = withIdTies(walk.order);
    if (position.keys.length !== keys.length) {
      throw new FenecError('invalid_cursor', "the cursor does not fit this read's order", {
        hint: 'leave cursor out to start from the first row',
      });
    }
    parts.push(afterKeys(keys, position.keys, bound));
  }
  const { offset, ...rest } = walk;
  return { statement: { ...rest, where: and(parts) }, params: bound.values };
}

/** `k1 after v1, or k1 = v1 and k2 after v2, or …`: the rows after the values, in the keys' order. */
function afterKeys(keys: readonly OrderItem[], values: readonly unknown[], bound: Params): Cond {
  const disjuncts: Cond[] = [];
  for (let j = 0; j < keys.length; j++) {
    const beyond = after(keys[j]!, values[j], bound);
    if (beyond === undefined) continue;
    const equal = keys.slice(0, j).map((key, i) => same(key.field, values[i], bound));
    disjuncts.push(and([...equal, beyond]));
  }
  // Nothing sorts after the last row's keys (its id is the last): no row.
  return disjuncts.length === 0
    ? { kind: 'Truth', expr: { kind: 'Literal', type: 'bool', value: false } }
    : or(disjuncts);
}

function same(name: string, value: unknown, bound: Params): Cond {
  if (value === null || value === undefined) return { kind: 'IsNull', operand: field(name), negated: false };
  return { kind: 'Compare', op: '=', left: field(name), right: bound.add(value) };
}

/** The rows whose key sorts after `value`: nulls come first ascending and last descending, as SQLite sorts. */
function after(key: OrderItem, value: unknown, bound: Params): Cond | undefined {
  const isNull = value === null || value === undefined;
  if (key.direction === 'asc') {
    return isNull
      ? { kind: 'IsNull', operand: field(key.field), negated: true }
      : { kind: 'Compare', op: '>', left: field(key.field), right: bound.add(value) };
  }
  if (isNull) return undefined;
  return {
    kind: 'Or',
    left: { kind: 'Compare', op: '<', left: field(key.field), right: bound.add(value) },
    right: { kind: 'IsNull', operand: field(key.field), negated: false },
  };
}
