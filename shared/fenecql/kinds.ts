/**
 * The statement kinds, one row each: what every part of fenecdb needs to know of a kind before it
 * runs one — the read-only refusal, a token's grants, the byte quota's room, a tenant's quotas, the
 * audit, the MCP tools. A new kind of the AST's statement union does not compile until it has its row
 * here; each classification elsewhere is read from this table, never written again.
 */
import type { SchemaChange } from '../audit.js';
import type { Node, ObjectExpr, ParamExpr, Statement, StatementKind } from './ast.js';

/**
 * What a statement is about. `read` and `write` are row statements, planned into SQL over one
 * collection; `schema` changes the collections, `describe` reads them, `maintenance` rewrites the file,
 * `explain` tells what another statement would run (under the rules that statement runs under).
 */
export type Family = 'read' | 'write' | 'schema' | 'describe' | 'maintenance' | 'explain';

/**
 * How a statement may change the file's size, which is the room it has at a byte quota
 * (node/storage/byte-quota.ts): `grows` is held to the quota, `frees` may take the headroom kept for
 * removing, `copies` needs room for a copy of the file; `none` changes no size.
 */
export type Size = 'none' | 'grows' | 'frees' | 'copies';

/** The MCP tool through which a caller's statement of this kind runs: `query` takes it as text, `write` builds it. */
export type McpTool = 'query' | 'write';

/** Where a row statement's rows are: written out as objects, or one parameter holding them. */
export type WrittenRows = readonly ObjectExpr[] | ObjectExpr | ParamExpr;

export interface KindInfo<S extends Statement = Statement> {
  readonly family: Family;
  /** It changes the file: a read-only file or server refuses it, and a token needs a write grant. */
  readonly writes: boolean;
  readonly size: Size;
  /** Only the server's token runs it: never a JSON Web Token, whatever its policy. */
  readonly serverOnly: boolean;
  /** What a tenant's quotas count that it adds: a collection (its name), rows (where they are), or nothing. */
  readonly adds:
    { readonly collection: (statement: S) => string } | { readonly rows: (statement: S) => WrittenRows } | null;
  /** How the audit records it once it ran (`"event":"schema"`), or null: not audited as a statement. */
  readonly audit: SchemaChange | null;
  /** The MCP tool that runs it for a caller, or null: never over MCP. */
  readonly mcp: McpTool | null;
  /**
   * Where it may need the server's embedder (`@embed`): the rows it writes (`rows`, as `adds` finds them), the fields
   * a set changes (`changes`), the words of a `near` (`near`), or nowhere (null).
   */
  readonly embeds: 'rows' | 'changes' | 'near' | null;
  /** Its children in the tree, in the order written (undefined: a clause left out), for the tree walk (walk.ts). */
  readonly children: (statement: S) => readonly (Node | undefined)[];
}

type Table = { readonly [K in StatementKind]: KindInfo<Extract<Statement, { kind: K }>> };

export const STATEMENT_KINDS = {
  Get: {
    family: 'read',
    writes: false,
    size: 'none',
    serverOnly: false,
    adds: null,
    audit: null,
    mcp: 'query',
    embeds: 'near',
    children: (s) => [s.match?.query, s.near?.vector, s.where, s.limit, s.offset],
  },
  Insert: {
    family: 'write',
    writes: true,
    size: 'grows',
    serverOnly: false,
    adds: { rows: (s) => s.rows },
    audit: null,
    mcp: 'write',
    embeds: 'rows',
    children: (s) => (Array.isArray(s.rows) ? s.rows : [s.rows as Node]),
  },
  Put: {
    family: 'write',
    writes: true,
    size: 'grows',
    serverOnly: false,
    adds: { rows: (s) => s.row },
    audit: null,
    mcp: 'write',
    embeds: 'rows',
    children: (s) => [s.row],
  },
  // A set may grow its rows or shrink them: it is held to the quota, and the database lets one that does not grow take
  // the headroom.
  Set: {
    family: 'write',
    writes: true,
    size: 'grows',
    serverOnly: false,
    adds: null,
    audit: null,
    mcp: 'write',
    embeds: 'changes',
    children: (s) => [s.changes, s.where],
  },
  Del: {
    family: 'write',
    writes: true,
    size: 'frees',
    serverOnly: false,
    adds: null,
    audit: null,
    mcp: 'write',
    embeds: null,
    children: (s) => [s.where],
  },
  Schema: {
    family: 'describe',
    writes: false,
    size: 'none',
    serverOnly: false,
    adds: null,
    audit: null,
    mcp: 'query',
    embeds: null,
    children: () => [],
  },
  CreateCollection: {
    family: 'schema',
    writes: true,
    size: 'grows',
    serverOnly: true,
    adds: { collection: (s) => s.name },
    audit: 'create',
    mcp: null,
    embeds: null,
    children: (s) => s.fields.map((field) => field.default),
  },
  DropCollection: {
    family: 'schema',
    writes: true,
    size: 'frees',
    serverOnly: true,
    adds: null,
    audit: 'drop',
    mcp: null,
    embeds: null,
    children: () => [],
  },
  // Adding a field fills it in every row there is, with its default.
  AlterAdd: {
    family: 'schema',
    writes: true,
    size: 'grows',
    serverOnly: true,
    adds: null,
    audit: 'alter add',
    mcp: null,
    embeds: null,
    children: (s) => [s.field.default],
  },
  AlterDrop: {
    family: 'schema',
    writes: true,
    size: 'frees',
    serverOnly: true,
    adds: null,
    audit: 'alter drop',
    mcp: null,
    embeds: null,
    children: () => [],
  },
  // Records a backfill of vectors, which the server's worker then makes and writes in batches of their own: it
  // changes rows, never the schema.
  AlterEmbed: {
    family: 'maintenance',
    writes: true,
    size: 'grows',
    serverOnly: true,
    adds: null,
    audit: 'alter embed',
    mcp: null,
    embeds: null,
    children: () => [],
  },
  Compact: {
    family: 'maintenance',
    writes: true,
    size: 'copies',
    serverOnly: true,
    adds: null,
    audit: 'compact',
    mcp: null,
    embeds: null,
    children: () => [],
  },
  Explain: {
    family: 'explain',
    writes: false,
    size: 'none',
    serverOnly: false,
    adds: null,
    audit: null,
    mcp: null,
    embeds: null,
    children: (s) => [s.statement],
  },
} as const satisfies Table;

/** A statement's row of the table, typed for its own kind. */
export function kindOf<S extends Statement>(statement: S): KindInfo<S> {
  // The table's row for S['kind'] is a KindInfo of exactly that statement type (Table says so); TypeScript cannot
  // follow the index.
  return STATEMENT_KINDS[statement.kind] as unknown as KindInfo<S>;
}

type KindsOf<F extends Family> = {
  [K in StatementKind]: (typeof STATEMENT_KINDS)[K]['family'] extends F ? K : never;
}[StatementKind];

/** get, insert, put, set, del: planned into SQL over one collection's rows. */
export type RowStatement = Extract<Statement, { kind: KindsOf<'read' | 'write'> }>;
/** create, drop, alter, schema, compact: run against the catalogue and the file. */
export type SchemaStatement = Extract<Statement, { kind: KindsOf<'schema' | 'describe' | 'maintenance'> }>;

type KindsOver<T extends McpTool> = {
  [K in StatementKind]: (typeof STATEMENT_KINDS)[K]['mcp'] extends T ? K : never;
}[StatementKind];

/** The statements an MCP tool runs for a caller (`query`: get and schema). */
export type McpStatement<T extends McpTool> = Extract<Statement, { kind: KindsOver<T> }>;

/** The kinds an MCP tool runs for a caller, in the table's order. */
export function kindsOver(tool: McpTool): StatementKind[] {
  return (Object.keys(STATEMENT_KINDS) as StatementKind[]).filter((kind) => STATEMENT_KINDS[kind].mcp === tool);
}

/** The table lets the MCP tool run this statement for a caller. */
export function runsOver<T extends McpTool>(tool: T, statement: Statement): statement is McpStatement<T> {
  return STATEMENT_KINDS[statement.kind].mcp === tool;
}

export function isRowStatement(statement: Statement): statement is RowStatement {
  const { family } = STATEMENT_KINDS[statement.kind];
  return family === 'read' || family === 'write';
}

/**
 * A change the audit records: the statement's kind as the audit names it, and its collection (null for a compact of the
 * whole file).
 */
export interface AuditedChange {
  readonly statement: SchemaChange;
  readonly collection: string | null;
}

/** The audit line a statement that ran is recorded as, or undefined when it is not audited. */
export function auditedChange(statement: Statement): AuditedChange | undefined {
  const as = STATEMENT_KINDS[statement.kind].audit;
  if (as === null) return undefined;
  return {
    statement: as,
    collection:
      'name' in statement ? statement.name : 'collection' in statement ? (statement.collection ?? null) : null,
  };
}

/** For the compiler: a switch over kinds that reaches here has missed one. */
export function unreachable(value: never): never {
  throw new Error(`unhandled statement kind: ${JSON.stringify(value)}`);
}
