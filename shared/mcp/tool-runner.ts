/**
 * Runs a tool: its arguments checked, its statement built as a tree and run under the caller's own
 * options (a token's policy is the database's to enforce, exactly as for /query), vector fields
 * left out, and the answer held to the bounds.
 */
import type { AlterAddStmt, Cond, CreateCollectionStmt, Expr, GetStmt, Statement } from '../fenecql/ast.js';
import { randomBytes } from 'node:crypto';
import type { Answer } from '../answer.js';
import { printStatement } from '../fenecql/print.js';
import { CursorKeeper } from '../paging/cursor.js';
import { Pager } from '../paging/pager.js';
import { asFenecError, FenecError } from '../errors.js';
import { checkArguments, type Arguments } from './arguments.js';
import { checkBounds, type Narrowing } from './bounds.js';
import { addMemoryVector, createMemories, VECTOR_FIELD } from './memory.js';
import {
  forgetStatement,
  MAX_BOUND,
  queryStatement,
  recallParams,
  recallShape,
  recallStatement,
  rememberStatement,
  schemaStatement,
  searchParams,
  searchShape,
  searchStatement,
  writeStatement,
  type Bound,
} from './statements.js';
import { BOUNDS, toolDefinitions, type ToolDefinition, type ToolName, type ToolSetOptions } from './tools.js';

export type { Answer };

/**
 * What the tools need of a database: a statement tree run under the caller's options, and the
 * `query` tool's own statement text (its canonical form), whose parse and plan the database keeps.
 */
export interface StatementRunner<O> {
  executeStatement(statement: Statement, params: readonly unknown[], options: O): Answer;
  execute(text: string, params: readonly unknown[], options: O): Answer;
}

/**
 * A read as a call of that shape runs it: the tree asked for, the tree read (the fields answered
 * worked out: `query` leaves vectors out), the tree run when it does not page (at most one row past
 * the bound), and for `query` the run tree's canonical text.
 */
interface PreparedRead {
  readonly requested: GetStmt;
  readonly read: GetStmt;
  readonly run: GetStmt;
  readonly text: string | undefined;
}

/** Who calls: the options their statements run under (token claims, policy, read-only), passed through as is. */
export interface ToolCaller<O> {
  readonly options: O;
  /** A JSON Web Token held to a policy, not the server's token: it cannot make the memory collection. */
  readonly scoped: boolean;
  /**
   * The tools this caller may list and call (its token's `tools` claim and the policy's `tools` line),
   * or undefined for every tool the server offers. Any other is unknown to it.
   */
  readonly tools?: ReadonlySet<string>;
  /** Who the caller is, for the cursors it is given: a cursor is refused to any other (cursor.ts). */
  readonly subject?: string;
}

export type ToolOutcome =
  | { readonly ok: true; readonly answer: Answer; readonly text: string }
  | { readonly ok: false; readonly error: FenecError; readonly details?: Readonly<Record<string, unknown>> };

/** One row more than the bound: when it comes back, the answer is past the bound. */
const PROBE_LIMIT = BOUNDS.rows + 1;
/**
 * Reads kept by the shape of their call (query: its statement; search and recall: everything but the
 * values bound): agents send the same few calls again and again, and a kept tree is parsed, checked
 * and planned once.
 */
const PREPARED_LIMIT = 500;

/**
 * The tree a read runs: one row past the bound when it asks for more or for no limit — but for a
 * read of one id, which answers a row at most, and runs fastest as the statement it is.
 */
function probing(statement: GetStmt): GetStmt {
  const limit = statement.limit;
  if (statement.count || (limit?.kind === 'Literal' && (limit.value as number) <= BOUNDS.rows) || oneId(statement.where)) return statement;
  return { ...statement, limit: { kind: 'Literal', type: 'int', value: PROBE_LIMIT } };
}

/** A condition that holds for one id at most: `id = VALUE`, alone or ANDed with anything. */
function oneId(cond: Cond | undefined): boolean {
  if (cond === undefined) return false;
  if (cond.kind === 'And') return oneId(cond.left) || oneId(cond.right);
  if (cond.kind !== 'Compare' || cond.op !== '=') return false;
  const id = (e: Expr) => e.kind === 'Field' && e.name === 'id';
  const value = (e: Expr) => e.kind === 'Param' || e.kind === 'Literal' || e.kind === 'Jwt';
  return (id(cond.left) && value(cond.right)) || (id(cond.right) && value(cond.left));
}

export class ToolRunner<O> {
  readonly tools: readonly ToolDefinition[];
  readonly #byName: ReadonlyMap<string, ToolDefinition>;
  readonly #db: StatementRunner<O>;
  readonly #memory: string | undefined;
  readonly #prepared = new Map<string, PreparedRead>();
  readonly #onSchemaChange: ((change: CreateCollectionStmt | AlterAddStmt) => void) | undefined;
  readonly #pager: Pager<O>;

  /**
   * `onSchemaChange` hears of the memory collection made or given its vector field (for the audit).
   * `cursors` signs the cursors of reads: the server's, from its config; by default one of this
   * runner's own (a process serving one stdio session).
   */
  constructor(
    db: StatementRunner<O>,
    options: ToolSetOptions,
    onSchemaChange?: (change: CreateCollectionStmt | AlterAddStmt) => void,
    cursors: CursorKeeper = new CursorKeeper(randomBytes(32)),
  ) {
    this.#db = db;
    this.#pager = new Pager(db, cursors);
    this.#onSchemaChange = onSchemaChange;
    this.#memory = options.memory;
    this.tools = toolDefinitions(options);
    this.#byName = new Map(this.tools.map((t) => [t.name, t]));
  }

  /** The tool of that name on this server, or undefined (an unknown tool is a protocol fault, not a result). */
  tool(name: string): ToolDefinition | undefined {
    return this.#byName.get(name);
  }

  /** Runs a tool this server offers. Never throws: a refusal is an outcome for the model to correct. */
  call(tool: ToolDefinition, rawArgs: unknown, caller: ToolCaller<O>): ToolOutcome {
    try {
      const args = checkArguments(tool, rawArgs);
      return this.#run(tool.name, args, caller);
    } catch (err) {
      return { ok: false, error: asFenecError(err) };
    }
  }

  #run(name: ToolName, args: Arguments, caller: ToolCaller<O>): ToolOutcome {
    switch (name) {
      case 'query':
        return this.#query(args, caller);
      case 'search':
        return this.#search(args, caller);
      case 'schema':
        return this.#bounded('schema', this.#exec(schemaStatement(args), caller), { choosesFields: false, call: () => undefined });
      case 'write':
        return this.#small('write', this.#exec(writeStatement(args), caller));
      case 'remember':
        return this.#small('remember', this.#remember(args, caller));
      case 'recall':
        return this.#recall(args, caller);
      case 'forget':
        return this.#small('forget', this.#orNothing(() => this.#exec(forgetStatement(this.#memory!, args), caller), caller, { count: 0 }));
    }
  }

  #exec(bound: Bound, caller: ToolCaller<O>): Answer {
    return this.#db.executeStatement(bound.statement, bound.params, caller.options);
  }

  #query(args: Arguments, caller: ToolCaller<O>): ToolOutcome {
    const params = args.params == null ? [] : (args.params as unknown[]);
    const includeVectors = args.include_vectors === true;
    const key = `${includeVectors ? 'query+v' : 'query'}\u0000${args.statement as string}`;
    let prepared = this.#prepared.get(key);
    if (prepared === undefined) {
      const { statement } = queryStatement(args);
      if (statement.kind === 'Schema') return this.#bounded('query', this.#exec({ statement, params }, caller), { choosesFields: false, call: () => undefined });
      let select = statement.select;
      // Which fields hold vectors is the schema's to say, and it may change: such a read is not kept.
      let keep = true;
      if (includeVectors) {
        if (select === null) select = '*';
      } else if (select === '*') {
        select = null;
      } else if (select !== null) {
        const vectors = this.#vectorFields(statement.collection, caller);
        if (select.some((f) => vectors.includes(f))) select = select.filter((f) => !vectors.includes(f));
        keep = false;
      }
      const read = { ...statement, select };
      const run = probing(read);
      prepared = { requested: statement, read, run, text: printStatement(run) };
      if (keep) this.#keep(key, prepared);
    }
    const { requested } = prepared;
    return this.#read('query', prepared, params, caller, args.cursor, {
      choosesFields: true,
      call: (limit, fields) => ({
        name: 'query',
        arguments: { ...args, statement: printStatement({ ...requested, select: fields ?? requested.select, limit: { kind: 'Literal', type: 'int', value: limit } }) },
      }),
    });
  }

  #search(args: Arguments, caller: ToolCaller<O>): ToolOutcome {
    let field: string | undefined;
    if (args.vector != null) field = this.#searchVectorField(args.collection as string, caller);
    const { tree, params } = this.#shaped(searchShape(args, field), () => searchStatement(args, field), () => searchParams(args));
    return this.#read('search', tree, params, caller, args.cursor, {
      choosesFields: (args.detail ?? 'fields') === 'fields',
      call: (limit, fields) => ({ name: 'search', arguments: { ...args, limit, ...(fields === undefined ? {} : { fields }) } }),
    });
  }

  #recall(args: Arguments, caller: ToolCaller<O>): ToolOutcome {
    const memory = this.#memory!;
    const narrowing: Narrowing = { choosesFields: false, call: (limit) => ({ name: 'recall', arguments: { ...args, limit } }) };
    const recall = (a: Arguments): ToolOutcome => {
      const { tree, params } = this.#shaped(recallShape(a), () => recallStatement(memory, a), () => recallParams(a));
      return this.#read('recall', tree, params, caller, a.cursor, narrowing);
    };
    try {
      return recall(args);
    } catch (err) {
      // No memory has come with a vector yet: words alone still recall.
      if (args.vector != null && args.text != null && isUnknownField(err, VECTOR_FIELD)) {
        const { vector: _vector, ...words } = args;
        return recall(words);
      }
      if (!caller.scoped && asFenecError(err).code === 'unknown_collection') return this.#bounded('recall', { rows: [], count: 0 }, narrowing);
      throw err;
    }
  }

  /**
   * The read a call of this shape runs, made once and kept, and this call's values for it. A call
   * with more values than parameters there are (their tree holds literals) is made each time.
   */
  #shaped(key: string, make: () => Bound<GetStmt>, values: () => unknown[]): { tree: PreparedRead; params: readonly unknown[] } {
    const kept = this.#prepared.get(key);
    if (kept !== undefined) return { tree: kept, params: values() };
    const bound = make();
    const tree: PreparedRead = { requested: bound.statement, read: bound.statement, run: probing(bound.statement), text: undefined };
    if (bound.params.length < MAX_BOUND) this.#keep(key, tree);
    return { tree, params: bound.params };
  }

  #keep(key: string, prepared: PreparedRead): void {
    if (this.#prepared.size >= PREPARED_LIMIT) this.#prepared.delete(this.#prepared.keys().next().value!);
    this.#prepared.set(key, prepared);
  }

  /**
   * A read run with at most one row past the bound, so that a statement matching a million rows
   * never reads them all; when the bound is passed, the rows found are counted for the refusal. A
   * read of rows pages (pager.ts): `next_cursor` when more rows follow its limit, and `cursor` to
   * continue. A count, and a read of one id without a cursor, run as they are.
   */
  #read(tool: string, prepared: PreparedRead, params: readonly unknown[], caller: ToolCaller<O>, cursor: unknown, narrowing: Narrowing): ToolOutcome {
    if (prepared.requested.count || (cursor == null && oneId(prepared.requested.where))) {
      const answer = prepared.text === undefined
        ? this.#db.executeStatement(prepared.run, params, caller.options)
        : this.#db.execute(prepared.text, params, caller.options);
      if (prepared.requested.count) return this.#bounded(tool, answer, narrowing);
      return this.#bounded(tool, answer, narrowing, () => this.#count({ statement: prepared.requested, params }, caller));
    }
    const page = this.#pager.read({
      statement: prepared.read,
      params,
      options: caller.options,
      cursor: cursor == null ? undefined : (cursor as string),
      scope: tool,
      subject: caller.subject ?? 'server',
      bound: BOUNDS.rows,
    });
    return this.#bounded(tool, page.answer, narrowing, () => this.#count({ statement: page.counted, params: page.params }, caller));
  }

  /** How many rows a read would answer under its own limit and offset, for a refusal's figures. */
  #count(bound: Bound<GetStmt>, caller: ToolCaller<O>): number | undefined {
    const { limit, offset, order: _order, select: _select, ...rest } = bound.statement;
    try {
      const all = this.#exec({ statement: { ...rest, select: null, order: [], count: true }, params: bound.params }, caller).count as number;
      const skipped = offset?.kind === 'Literal' ? (offset.value as number) : 0;
      const left = Math.max(0, all - skipped);
      return limit?.kind === 'Literal' ? Math.min(left, limit.value as number) : left;
    } catch {
      return undefined;
    }
  }

  #bounded(tool: string, answer: Answer, narrowing: Narrowing, found: () => number | undefined = () => undefined): ToolOutcome {
    const checked = checkBounds(tool, answer, narrowing, found);
    return checked.ok ? { ok: true, answer, text: checked.text } : { ok: false, error: checked.error, details: checked.details };
  }

  /** A write's answer: a count and ids, within the bounds but for an insert of thousands of rows. */
  #small(tool: string, answer: Answer): ToolOutcome {
    return this.#bounded(tool, answer, { choosesFields: false, call: () => undefined });
  }

  /** For the server's token, a memory collection not made yet holds nothing: `fallback` is the answer. */
  #orNothing(run: () => Answer, caller: ToolCaller<O>, fallback: Answer): Answer {
    try {
      return run();
    } catch (err) {
      if (!caller.scoped && asFenecError(err).code === 'unknown_collection') return fallback;
      throw err;
    }
  }

  /**
   * Inserts the memory; the collection is made at the first memory, and given a vector field at the
   * first that brings one. A scoped token may change no schema: it is told the statement to have run.
   */
  #remember(args: Arguments, caller: ToolCaller<O>): Answer {
    const memory = this.#memory!;
    const insert = rememberStatement(memory, args);
    const dims = args.vector == null ? undefined : (args.vector as unknown[]).length;
    try {
      return this.#exec(insert, caller);
    } catch (err) {
      const error = asFenecError(err);
      let change: CreateCollectionStmt | AlterAddStmt;
      if (error.code === 'unknown_collection') change = createMemories(memory, dims);
      else if (dims !== undefined && isUnknownField(error, VECTOR_FIELD) && !this.#fieldNames(memory, caller).includes(VECTOR_FIELD)) change = addMemoryVector(memory, dims);
      else throw err;
      if (caller.scoped) throw schemaNeeded(memory, change);
      try {
        const made = this.#db.executeStatement(change, [], caller.options);
        if (made.created !== false) this.#onSchemaChange?.(change);
      } catch (raced) {
        // Another call made the same change meanwhile.
        if (asFenecError(raced).code !== 'field_exists') throw raced;
      }
      return this.#exec(insert, caller);
    }
  }

  #fields(collection: string, caller: ToolCaller<O>): { name: string; type: string }[] {
    const answer = this.#db.executeStatement({ kind: 'Schema', collection }, [], caller.options);
    return (answer.collections as { fields: { name: string; type: string }[] }[])[0]?.fields ?? [];
  }

  #fieldNames(collection: string, caller: ToolCaller<O>): string[] {
    return this.#fields(collection, caller).map((f) => f.name);
  }

  #vectorFields(collection: string, caller: ToolCaller<O>): string[] {
    return this.#fields(collection, caller).filter((f) => f.type.startsWith('vector<')).map((f) => f.name);
  }

  /** The one vector field a search's vector is compared with. */
  #searchVectorField(collection: string, caller: ToolCaller<O>): string {
    const vectors = this.#vectorFields(collection, caller);
    if (vectors.length === 1) return vectors[0]!;
    if (vectors.length === 0) {
      throw new FenecError('invalid_argument', `search: ${collection} has no vector field to compare a vector with`, { hint: 'search it by text, or see schema' });
    }
    throw new FenecError('invalid_argument', `search: ${collection} has ${vectors.length} vector fields (${vectors.join(', ')}); search compares a vector with a collection's only one`, {
      hint: `use query with near: get ${collection} near ${vectors[0]} $1 limit 10, the vector in params`,
    });
  }
}

function isUnknownField(err: unknown, field: string): boolean {
  const error = asFenecError(err);
  return error.code === 'unknown_field' && new RegExp(`\\b${field}\\b`).test(error.message);
}

function schemaNeeded(collection: string, change: CreateCollectionStmt | AlterAddStmt): FenecError {
  const statement = printStatement(change);
  const what = change.kind === 'CreateCollection' ? `the memory collection ${collection} is not one this token reaches` : `${collection} has no vector field yet`;
  return new FenecError('forbidden', `${what}; a JSON Web Token may not change a schema, so the server's token must run, once: ${statement}`, {
    hint: change.kind === 'CreateCollection'
      ? `have the operator run it (fenec query --url … ${JSON.stringify(statement)} with the server token); if the collection exists already, the token's policy must name it, e.g. ${collection}  read,write  where owner = $jwt.sub`
      : `have the operator run it, or remember without a vector`,
  });
}
