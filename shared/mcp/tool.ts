/**
 * What one MCP tool is: its definition as `tools/list` shows it, what turns it on, its line in the
 * instructions, whether its calls are audited, and how it runs. Each tool is one file in tools/,
 * listed once in tools.ts; the runner, the endpoint, the audit, the metrics and the CLI text read
 * everything they say of a tool from here.
 */
import type * as z from 'zod';
import type { GetStmt, Statement } from '../fenecql/ast.js';
import type { FenecError } from '../errors.js';
import type { Answer } from '../answer.js';
import type { Narrowing } from './bounds.js';
import { inputSchemaOf, type InputSchema, type ToolInput } from './arguments.js';

export type { Answer, InputSchema, Narrowing, ToolInput };

/** A call's arguments as a tool's `run` is handed them: its input schema's type, checked (arguments.ts). */
export type ArgumentsOf<S extends ToolInput> = z.output<S>;

/**
 * A tool as `tools/list` shows it. The input schema is made from the one arguments are checked
 * against (arguments.ts), so what a model is told and what it is held to cannot drift apart.
 */
export interface ToolDefinition<N extends string = string> {
  readonly name: N;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: InputSchema;
  readonly outputSchema: { readonly type: 'object'; readonly properties?: Readonly<Record<string, unknown>> };
  readonly annotations: {
    readonly title: string;
    /** False: the tool writes, and a read-only server (--http-read-only, a read-only file) never offers it. */
    readonly readOnlyHint: boolean;
    readonly destructiveHint: boolean;
    readonly idempotentHint: boolean;
    readonly openWorldHint: false;
  };
}

/** The server's MCP options: which tools it offers. */
export interface ToolSetOptions {
  /** --mcp-write: offer the tools switched on by `write`. */
  readonly write: boolean;
  /** --mcp-memory NAME: offer the tools switched on by `memory`, over this collection. */
  readonly memory: string | undefined;
  /** --http-read-only or a read-only file: no tool that writes is offered, whatever else is asked. */
  readonly readOnly: boolean;
  /** The server has an embedder (--embedder-url): words are searched by meaning too where a field embeds them. */
  readonly embedder?: boolean;
  /** --mcp-memory-merge COSINE: a memory that near one of the caller's own refreshes it instead. */
  readonly memoryMerge?: number;
}

/** The server's embedder, as a tool that makes a field with @embed needs it: its model and dimension. */
export type EmbedderOf = (what: string) => { readonly model: string; readonly dimension: number };

/** What turns a tool on: every server offers it, or one of the server's MCP options does. */
export type ToolSwitch = 'always' | 'write' | 'memory';

/** Each switch: whether a server's options turn it on, and the option a server is started with for it. */
export const SWITCHES: Readonly<
  Record<ToolSwitch, { readonly on: (options: ToolSetOptions) => boolean; readonly flag: string }>
> = Object.freeze({
  always: { on: () => true, flag: '--mcp' },
  write: { on: (options: ToolSetOptions) => options.write, flag: '--mcp-write' },
  memory: { on: (options: ToolSetOptions) => options.memory !== undefined, flag: '--mcp-memory NAME' },
});

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
  /**
   * An OAuth token's tools that its policy grants but its scopes do not, with the scope each needs: a call of one is
   * answered 403 insufficient_scope (the client may sign in again for it), not as an unknown tool.
   */
  readonly scopeNeeded?: ReadonlyMap<string, string>;
}

export type ToolOutcome =
  | { readonly ok: true; readonly answer: Answer; readonly text: string }
  | { readonly ok: false; readonly error: FenecError; readonly details?: Readonly<Record<string, unknown>> };

/**
 * A read as a call of its shape runs it: the tree asked for (what a refusal's narrower call and
 * count start from), the tree read (`query` works out the fields answered), and the tree run when
 * the read does not page (at most one row past the bound). Made by ToolContext.prepare.
 */
export interface PreparedRead {
  readonly requested: GetStmt;
  readonly read: GetStmt;
  readonly run: GetStmt;
  /** What the answer tells of how `read` differs from `requested` (query: the vector fields its select left out). */
  readonly note?: string;
}

/** A tree and the schema change a memory tool may make first (for the audit). */
export type SchemaChangeStmt = Extract<Statement, { kind: 'CreateCollection' | 'AlterAdd' }>;

/**
 * What a tool's `run` is handed for one call: the caller's statements, reads held to the bounds,
 * and the reads kept by the shape of their call. Every statement runs as a tree, under the caller's
 * options, through the database's statement API.
 */
export interface ToolContext {
  /** The server's options the tool was offered under (its memory collection). */
  readonly setup: ToolSetOptions;
  /** The caller holds a JSON Web Token held to a policy: it may change no schema. */
  readonly scoped: boolean;
  /** Runs a statement tree under the caller's options. */
  execute(statement: Statement, params: readonly unknown[]): Answer;
  /**
   * A statement the server's token ran itself to make room for the call (the memory collection): the audit records it.
   */
  schemaChanged(change: SchemaChangeStmt): void;
  /** The read kept for a call of this shape, if one is. */
  kept(key: string): PreparedRead | undefined;
  /**
   * The read `requested` as it runs answering `read`, its answers carrying `note` when given; kept for calls of the
   * same shape when `key` is given.
   */
  prepare(requested: GetStmt, read: GetStmt, key: string | undefined, note?: string): PreparedRead;
  /**
   * Runs a read held to the bounds: one row past them at most, paged with `cursor` (next_cursor when
   * more rows follow), refused whole past them with a narrower call worked out by `narrowing`.
   */
  read(read: PreparedRead, params: readonly unknown[], cursor: string | undefined, narrowing: Narrowing): ToolOutcome;
  /** An answer held to the bounds (a schema listing, a write's ids). */
  bounded(answer: Answer, narrowing?: Narrowing): ToolOutcome;
  /** A collection's fields and their types, as `schema` lists them for the caller (none for one it does not reach). */
  fields(
    collection: string,
  ): readonly { readonly name: string; readonly type: string; readonly annotations?: readonly string[] }[];
  /** The server's embedder (throws when it has none, or cannot say yet: the call then runs again). */
  embedder: EmbedderOf;
}

/** What a tool says of itself on a server: its tools/list entry but for its name and input schema. */
export type ToolDescription = Omit<ToolDefinition, 'name' | 'inputSchema'>;

/**
 * One MCP tool, as a file in tools/ writes it (made with defineTool). `describe` says what it is on
 * a server with these options (the memory tools name their collection); the rest is the same on
 * every server.
 */
export interface ToolSpec<N extends string, S extends ToolInput> {
  readonly name: N;
  /** Its arguments, written once: the type `run` is handed, what calls are held to, tools/list's inputSchema. */
  readonly input: S;
  describe(options: ToolSetOptions): ToolDescription;
  /** What turns it on. A tool whose definition is not readOnlyHint is never offered by a read-only server. */
  readonly switch: ToolSwitch;
  /** Its sentence in what a model is told first (`initialize`, `server/discover`), when it is offered. */
  readonly instructions: string;
  /** Each call is an audit line (`--audit`): the tools that change rows. */
  readonly audited: boolean;
  /**
   * It answers rows someone wrote: its text is marked as data (untrusted.ts), and the instructions
   * tell of pages and the bounds.
   */
  readonly answersRows: boolean;
  /**
   * Runs a call, its arguments checked against `input` already.
   *
   * @throws FenecError anything the call is refused for: the model's to correct.
   */
  run(args: ArgumentsOf<S>, context: ToolContext): ToolOutcome;
}

/** A tool as the runner and the servers hold it: its spec, and its tools/list entry for a server's options. */
export interface Tool<N extends string = string, S extends ToolInput = ToolInput> extends Omit<
  ToolSpec<N, S>,
  'describe'
> {
  define(options: ToolSetOptions): ToolDefinition<N>;
}

/** A tool from its spec, its input's JSON Schema made once. */
export function defineTool<N extends string, S extends ToolInput>(spec: ToolSpec<N, S>): Tool<N, S> {
  const { describe, ...tool } = spec;
  const inputSchema = inputSchemaOf(spec.input);
  const define = (options: ToolSetOptions): ToolDefinition<N> => {
    const { title, description, outputSchema, annotations } = describe(options);
    return { name: spec.name, title, description, inputSchema, outputSchema, annotations };
  };
  return Object.freeze({ ...tool, define });
}

/** A tool a server offers, with its definition there. */
export interface OfferedTool {
  readonly tool: Tool;
  readonly definition: ToolDefinition;
}

/** Whether a server with these options offers the tool. */
export function offers(tool: Tool, definition: ToolDefinition, options: ToolSetOptions): boolean {
  return SWITCHES[tool.switch].on(options) && !(options.readOnly && !definition.annotations.readOnlyHint);
}
