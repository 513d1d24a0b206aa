/**
 * The FenecQL syntax tree: plain, readonly, JSON-serialisable data.
 *
 * The parser builds it, the planner reads it, nothing mutates it. Field defaults are stored in the
 * catalogue as these same trees, and the MCP tools build statements as trees rather than as text.
 */
import type { Position } from '../errors.js';

export type { Position };

// Types

export type ScalarType = 'text' | 'int' | 'float' | 'bool' | 'timestamp' | 'json';
export type ElementType = Exclude<ScalarType, 'json'>;

export type FieldType =
  | { readonly kind: 'scalar'; readonly scalar: ScalarType }
  | { readonly kind: 'vector'; readonly dims: number }
  | { readonly kind: 'array'; readonly element: ElementType };

export type Metric = 'cosine' | 'l2' | 'ip';

/**
 * How `@text` compares words: `english` stems (Snowball's English) and drops English stop words from
 * queries; `porter` is FTS5's Porter stemmer, what every `@text` field had before the choice; `exact`
 * does not stem. Absent in a statement: the default; absent in a stored catalogue: `porter`.
 */
export type TextTokenizer = 'english' | 'porter' | 'exact';

export type Annotation =
  | { readonly kind: 'hash' }
  | { readonly kind: 'sorted' }
  | { readonly kind: 'text'; readonly tokenizer?: TextTokenizer }
  | { readonly kind: 'ttl'; readonly ms: number }
  | {
      readonly kind: 'hnsw';
      readonly metric: Metric;
      readonly m?: number;
      readonly ef?: number;
      readonly efConstruction?: number;
    }
  /**
   * `@embed(title, body)`: the vector is the server's embedding of those text fields, made when a row is written
   * without one. `model` is the embedder's model the vectors are made with: the catalogue records the server's when
   * the field is made, unless the definition names one.
   */
  | { readonly kind: 'embed'; readonly fields: readonly string[]; readonly model?: string };

export interface FieldDef {
  readonly name: string;
  readonly type: FieldType;
  readonly required: boolean;
  readonly unique: boolean;
  readonly default?: Expr;
  readonly annotations: readonly Annotation[];
  readonly pos?: Position;
}

// Expressions

export type LiteralType = 'null' | 'bool' | 'int' | 'float' | 'text';

export interface LiteralExpr {
  readonly kind: 'Literal';
  readonly type: LiteralType;
  readonly value: null | boolean | number | string;
  readonly pos?: Position;
}
export interface ArrayExpr {
  readonly kind: 'Array';
  readonly items: readonly Expr[];
  readonly pos?: Position;
}
export interface ObjectEntry {
  readonly key: string;
  readonly value: Expr;
  readonly pos?: Position;
}
export interface ObjectExpr {
  readonly kind: 'Object';
  readonly entries: readonly ObjectEntry[];
  readonly pos?: Position;
}
/** `$1 … $99`, 1-based into the request's params. */
export interface ParamExpr {
  readonly kind: 'Param';
  readonly index: number;
  readonly pos?: Position;
}
/** `$jwt.NAME`: a claim of the caller's token. */
export interface JwtExpr {
  readonly kind: 'Jwt';
  readonly claim: string;
  readonly pos?: Position;
}
export interface FieldExpr {
  readonly kind: 'Field';
  readonly name: string;
  readonly pos?: Position;
}
export type FunctionName = 'now' | 'len' | 'lower' | 'upper' | 'coalesce';
export interface CallExpr {
  readonly kind: 'Call';
  readonly fn: FunctionName;
  readonly args: readonly Expr[];
  readonly pos?: Position;
}
export type ArithmeticOp = '+' | '-' | '*' | '/';
export interface BinaryExpr {
  readonly kind: 'Binary';
  readonly op: ArithmeticOp;
  readonly left: Expr;
  readonly right: Expr;
  readonly pos?: Position;
}
export interface NegateExpr {
  readonly kind: 'Negate';
  readonly operand: Expr;
  readonly pos?: Position;
}

export type Expr =
  LiteralExpr | ArrayExpr | ObjectExpr | ParamExpr | JwtExpr | FieldExpr | CallExpr | BinaryExpr | NegateExpr;

// Conditions

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export interface AndCond {
  readonly kind: 'And';
  readonly left: Cond;
  readonly right: Cond;
  readonly pos?: Position;
}
export interface OrCond {
  readonly kind: 'Or';
  readonly left: Cond;
  readonly right: Cond;
  readonly pos?: Position;
}
export interface NotCond {
  readonly kind: 'Not';
  readonly operand: Cond;
  readonly pos?: Position;
}
export interface CompareCond {
  readonly kind: 'Compare';
  readonly op: CompareOp;
  readonly left: Expr;
  readonly right: Expr;
  readonly pos?: Position;
}
/** `tags has "ops"`: an array field contains the value. */
export interface HasCond {
  readonly kind: 'Has';
  readonly left: Expr;
  readonly right: Expr;
  readonly pos?: Position;
}
/** `x in [1, 2]` or `x in $1`: the value is one of an array. */
export interface InCond {
  readonly kind: 'In';
  readonly left: Expr;
  readonly right: Expr;
  readonly pos?: Position;
}
export interface IsNullCond {
  readonly kind: 'IsNull';
  readonly operand: Expr;
  readonly negated: boolean;
  readonly pos?: Position;
}
export interface LikeCond {
  readonly kind: 'Like';
  readonly operand: Expr;
  readonly pattern: string;
  readonly pos?: Position;
}
/** A boolean expression standing as a condition: `where true`, `where done`. */
export interface TruthCond {
  readonly kind: 'Truth';
  readonly expr: Expr;
  readonly pos?: Position;
}

export type Cond = AndCond | OrCond | NotCond | CompareCond | HasCond | InCond | IsNullCond | LikeCond | TruthCond;

// Statements

export interface CreateCollectionStmt {
  readonly kind: 'CreateCollection';
  readonly name: string;
  readonly ifNotExists: boolean;
  readonly fields: readonly FieldDef[];
}
export interface DropCollectionStmt {
  readonly kind: 'DropCollection';
  readonly name: string;
  readonly ifExists: boolean;
}
export interface AlterAddStmt {
  readonly kind: 'AlterAdd';
  readonly collection: string;
  readonly field: FieldDef;
}
export interface AlterDropStmt {
  readonly kind: 'AlterDrop';
  readonly collection: string;
  readonly field: string;
}
/**
 * `alter collection C embed F`: fills the vectors of F, a field made with `@embed`, for the rows that have none, in
 * the background (node/workers/backfills.ts).
 */
export interface AlterEmbedStmt {
  readonly kind: 'AlterEmbed';
  readonly collection: string;
  readonly field: string;
}
export interface InsertStmt {
  readonly kind: 'Insert';
  readonly collection: string;
  /**
   * The rows as written, or a parameter holding them (`insert into c $1`: a bulk write, its rows an
   * array of JSON objects bound at run time and never parsed as FenecQL).
   */
  readonly rows: readonly ObjectExpr[] | ParamExpr;
  /** `insert into c [ … ]` answers with every id; the single form with one. Both answer `ids`. */
  readonly many: boolean;
}
export interface PutStmt {
  readonly kind: 'Put';
  readonly collection: string;
  /** The row as written, or a parameter holding one row or an array of rows (`put c $1`). */
  readonly row: ObjectExpr | ParamExpr;
}
export interface SetStmt {
  readonly kind: 'Set';
  readonly collection: string;
  readonly changes: ObjectExpr;
  readonly where: Cond;
}
export interface DelStmt {
  readonly kind: 'Del';
  readonly collection: string;
  readonly where: Cond;
}

export interface MatchClause {
  /** A field name, or '*' for every @text field. */
  readonly field: string;
  readonly query: Expr;
  readonly pos?: Position;
}
export interface NearClause {
  readonly field: string;
  readonly vector: Expr;
  readonly pos?: Position;
}
export interface OrderItem {
  readonly field: string;
  readonly direction: 'asc' | 'desc';
  readonly pos?: Position;
}

export interface GetStmt {
  readonly kind: 'Get';
  readonly collection: string;
  /** Field names, '*' for every field (vectors included), or null for the default (vectors left out). */
  readonly select: readonly string[] | '*' | null;
  readonly match?: MatchClause;
  readonly near?: NearClause;
  readonly fuse: boolean;
  readonly where?: Cond;
  readonly order: readonly OrderItem[];
  /** An int literal or a parameter. */
  readonly limit?: Expr;
  readonly offset?: Expr;
  readonly count: boolean;
}
export interface SchemaStmt {
  readonly kind: 'Schema';
  readonly collection?: string;
}
export interface CompactStmt {
  readonly kind: 'Compact';
  readonly collection?: string;
}

/** `explain STATEMENT`: what the statement would run, without running it. */
export interface ExplainStmt {
  readonly kind: 'Explain';
  readonly statement: Exclude<Statement, ExplainStmt>;
}

export type Statement =
  | ExplainStmt
  | CreateCollectionStmt
  | DropCollectionStmt
  | AlterAddStmt
  | AlterDropStmt
  | AlterEmbedStmt
  | InsertStmt
  | PutStmt
  | SetStmt
  | DelStmt
  | GetStmt
  | SchemaStmt
  | CompactStmt;

export type StatementKind = Statement['kind'];

/** A node of the tree: what has a `kind` the tree walk lists (walk.ts). */
export type Node = Expr | Cond | Statement;
