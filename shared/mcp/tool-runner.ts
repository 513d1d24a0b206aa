/**
 * Runs the tools a server offers: a call's arguments checked against its tool's input schema, then
 * the tool's own `run` (tools/), handed what every tool shares — its statements run as trees under
 * the caller's own options (a token's policy is the database's to enforce, exactly as for /query),
 * reads kept by the shape of their call, paged, and held to the bounds.
 */
import type { Cond, Expr, GetStmt, Statement } from '../fenecql/ast.js';
import { randomBytes } from 'node:crypto';
import { CursorKeeper } from '../paging/cursor.js';
import type { Answer } from '../answer.js';
import { Pager } from '../paging/pager.js';
import { asFenecError, FenecError } from '../errors.js';
import { checkArguments } from './arguments.js';
import { BOUNDS, checkBounds, NO_NARROWING, type Narrowing } from './bounds.js';
import {
  offers,
  SWITCHES,
  type OfferedTool,
  type PreparedRead,
  type SchemaChangeStmt,
  type Tool,
  type ToolCaller,
  type ToolContext,
  type ToolDefinition,
  type ToolOutcome,
  type ToolSetOptions,
  type EmbedderOf,
} from './tool.js';
import { TOOLS } from './tools.js';

export type { Answer, ToolCaller, ToolOutcome };

/** What the tools need of a database: a statement tree run under the caller's options. */
export interface StatementRunner<O> {
  executeStatement(statement: Statement, params: readonly unknown[], options: O): Answer;
}

export interface ToolRunnerOptions {
  /** The tools the server can offer, in tools/list's order. Default: tools.ts's list. */
  readonly tools?: readonly Tool[];
  /** Hears of the memory collection made or given its vector field (for the audit). */
  readonly onSchemaChange?: (change: SchemaChangeStmt) => void;
  /**
   * Signs the cursors of reads: the server's, from its config; by default one of this runner's own
   * (a process serving one stdio session).
   */
  readonly cursors?: CursorKeeper;
  /** The server's embedder, for a tool that makes a field with @embed (the memory collection). */
  readonly embedder?: EmbedderOf;
}

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
  if (
    statement.count ||
    (limit?.kind === 'Literal' && (limit.value as number) <= BOUNDS.rows) ||
    oneId(statement.where)
  )
    return statement;
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
  /** The tools this server offers, each with its definition here, in tools/list's order. */
  readonly offered: readonly OfferedTool[];
  /** Their definitions, as tools/list shows them. */
  readonly tools: readonly ToolDefinition[];
  readonly #byName: ReadonlyMap<string, OfferedTool>;
  readonly #all: readonly Tool[];
  readonly #setup: ToolSetOptions;
  readonly #db: StatementRunner<O>;
  readonly #prepared = new Map<string, PreparedRead>();
  readonly #onSchemaChange: ((change: SchemaChangeStmt) => void) | undefined;
  readonly #pager: Pager<O>;
  readonly #embedder: EmbedderOf;

  constructor(db: StatementRunner<O>, setup: ToolSetOptions, options: ToolRunnerOptions = {}) {
    this.#db = db;
    this.#setup = setup;
    this.#all = options.tools ?? TOOLS;
    this.#pager = new Pager(db, options.cursors ?? new CursorKeeper(randomBytes(32)));
    this.#embedder =
      options.embedder ??
      ((what) => {
        throw new FenecError('embedder_missing', `${what}, and this server has no embedder`);
      });
    this.#onSchemaChange = options.onSchemaChange;
    this.offered = Object.freeze(
      this.#all
        .map((tool) => ({ tool, definition: tool.define(setup) }))
        .filter(({ tool, definition }) => offers(tool, definition, setup)),
    );
    this.tools = Object.freeze(this.offered.map((o) => o.definition));
    this.#byName = new Map(this.offered.map((o) => [o.tool.name, o]));
  }

  /** The tool of that name on this server, or undefined (an unknown tool is a protocol fault, not a result). */
  tool(name: string): OfferedTool | undefined {
    return this.#byName.get(name);
  }

  /** Why a tool this server could offer is not offered here: the option to start it with; '' for any other name. */
  whyNotOffered(name: string): string {
    const tool = this.#all.find((t) => t.name === name);
    if (tool === undefined || tool.switch === 'always') return '';
    const writes = !tool.define(this.#setup).annotations.readOnlyHint;
    return `; ${name} is offered by a server started with ${SWITCHES[tool.switch].flag}${writes ? ' (and without --http-read-only)' : ''}`;
  }

  /** Runs a tool this server offers. Never throws: a refusal is an outcome for the model to correct. */
  call(offered: OfferedTool, rawArgs: unknown, caller: ToolCaller<O>): ToolOutcome {
    try {
      const args = checkArguments(offered.tool.name, offered.tool.input, rawArgs);
      return offered.tool.run(args, this.#context(offered.tool.name, caller));
    } catch (err) {
      return { ok: false, error: asFenecError(err) };
    }
  }

  #context(tool: string, caller: ToolCaller<O>): ToolContext {
    const execute = (statement: Statement, params: readonly unknown[]): Answer =>
      this.#db.executeStatement(statement, params, caller.options);
    return {
      setup: this.#setup,
      scoped: caller.scoped,
      execute,
      schemaChanged: (change) => this.#onSchemaChange?.(change),
      kept: (key) => this.#prepared.get(key),
      prepare: (requested, read, key, note) => {
        const prepared: PreparedRead = { requested, read, run: probing(read), ...(note === undefined ? {} : { note }) };
        if (key !== undefined) this.#keep(key, prepared);
        return prepared;
      },
      read: (read, params, cursor, narrowing) => this.#read(tool, read, params, caller, cursor, narrowing),
      bounded: (answer, narrowing = NO_NARROWING) => bounded(tool, answer, narrowing),
      fields: (collection) => {
        const answer = execute({ kind: 'Schema', collection }, []);
        return (
          (answer.collections as { fields: { name: string; type: string; annotations: string[] }[] }[])[0]?.fields ?? []
        );
      },
      embedder: this.#embedder,
    };
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
  #read(
    tool: string,
    prepared: PreparedRead,
    params: readonly unknown[],
    caller: ToolCaller<O>,
    cursor: string | undefined,
    narrowing: Narrowing,
  ): ToolOutcome {
    const noted = (answer: Answer): Answer =>
      prepared.note === undefined ? answer : { ...answer, note: prepared.note };
    if (prepared.requested.count || (cursor === undefined && oneId(prepared.requested.where))) {
      const answer = noted(this.#db.executeStatement(prepared.run, params, caller.options));
      if (prepared.requested.count) return bounded(tool, answer, narrowing);
      return bounded(tool, answer, narrowing, () => this.#count(prepared.requested, params, caller));
    }
    const page = this.#pager.read({
      statement: prepared.read,
      params,
      options: caller.options,
      cursor,
      scope: tool,
      subject: caller.subject ?? 'server',
      bound: BOUNDS.rows,
    });
    // The narrower call a refusal names pages as this one does: its answer carries next_cursor to read on.
    return bounded(tool, noted(page.answer), narrowing, () => this.#count(page.counted, page.params, caller), true);
  }

  /** How many rows a read would answer under its own limit and offset, for a refusal's figures. */
  #count(statement: GetStmt, params: readonly unknown[], caller: ToolCaller<O>): number | undefined {
    const { limit, offset, order, select, ...rest } = statement;
    try {
      const all = this.#db.executeStatement({ ...rest, select: null, order: [], count: true }, params, caller.options)
        .count as number;
      const skipped = offset?.kind === 'Literal' ? (offset.value as number) : 0;
      const left = Math.max(0, all - skipped);
      return limit?.kind === 'Literal' ? Math.min(left, limit.value as number) : left;
    } catch {
      return undefined;
    }
  }
}

function bounded(
  tool: string,
  answer: Answer,
  narrowing: Narrowing,
  found: () => number | undefined = () => undefined,
  pages = false,
): ToolOutcome {
  const checked = checkBounds(tool, answer, narrowing, found, pages);
  return checked.ok
    ? { ok: true, answer, text: checked.text }
    : { ok: false, error: checked.error, details: checked.details };
}
