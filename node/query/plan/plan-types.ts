/**
 * Plans: what the planner makes of a row statement and the executor runs. SQL text with its arguments
 * as data (compile/args.ts: a literal, a parameter, a claim, the clock), made once per statement text
 * and schema version, run many times; plain data throughout but a column's decoder, so that `explain`
 * prints a plan and a test compares one whole.
 */
import type { Expr, FieldType, Metric } from '../../../shared/fenecql/ast.js';
import type { ScopedRank, TextRank } from './text-rank.js';
import type { Arg } from '../compile/args.js';
import type { EmbedSpec } from '../../schema/catalog.js';

/** One column of a read's answer: its key and, where the stored form differs from JSON, how to turn it. */
export interface OutputColumn {
  readonly key: string;
  readonly decode: ((stored: unknown) => unknown) | null;
}

export interface SqlStep {
  readonly sql: string;
  readonly args: readonly Arg[];
}

/**
 * One row of an `insert`: the row, then its vectors kept apart (catalog.ts), which take its id as
 * `last_insert_rowid()`.
 */
export interface RowWrite {
  readonly step: SqlStep;
  readonly apart: readonly SqlStep[];
}

/**
 * The rows a token's write touched must meet its policy condition. The step counts, among the rows
 * whose ids its first argument holds (a JSON array), those that do not; its other arguments follow.
 * A `set` under a check answers the ids it changed (`RETURNING "id"`).
 */
export interface PolicyCheck {
  readonly step: SqlStep;
  /** The condition as written in the policy, for the refusal's message. */
  readonly condition: string;
}

/**
 * A read may depend on a value known only when bound: `match ""` has no word, and answers no rows. The
 * guard is the argument that must not bind to null for the read to run.
 */
export type Guard = Arg;

export type Plan =
  | {
      readonly kind: 'read';
      readonly step: SqlStep;
      readonly columns: readonly OutputColumn[];
      readonly guard?: Guard;
      /** A `match` under a policy: the statistics its rank function needs, counted before the step runs. */
      readonly scoped?: ScopedRank;
      /** The step finds one row at most (an id, `limit 1`): one fetch reads it, without an iterator. */
      readonly one?: true;
    }
  | { readonly kind: 'count'; readonly step: SqlStep; readonly guard?: Guard }
  | { readonly kind: 'insert'; readonly rows: readonly RowWrite[]; readonly check?: PolicyCheck }
  | {
      readonly kind: 'put';
      readonly step: SqlStep;
      /** Then each vector kept apart (catalog.ts): its value written, or its row deleted when the put leaves it out. */
      readonly apart: readonly SqlStep[];
      readonly id: Arg;
      readonly check?: PolicyCheck;
    }
  | {
      readonly kind: 'change';
      /** The change; with `byIds`, the select of the ids of the rows it changes. */
      readonly step: SqlStep;
      /**
       * A `set` of a vector kept apart (catalog.ts): the changes of the rows `step` chose — the row's
       * own fields, then each vector's table — each given their ids (a JSON array) as its last argument.
       */
      readonly byIds?: readonly SqlStep[];
      readonly check?: PolicyCheck;
      /**
       * A `set`'s: how many bytes its new values add to the rows it changes (negative when they
       * shrink), asked of a file at its byte quota (storage/byte-quota.ts). Its arguments are the set's.
       */
      readonly growth?: SqlStep;
    }
  | BulkPlan
  | VectorPlan;

/** `insert into c $1`, `put c $1`: one SQL text run for each row of an array bound as a parameter. */
export interface BulkPlan {
  readonly kind: 'bulk';
  readonly verb: 'insert' | 'put';
  /** The parameter, as messages name it: `$1`. */
  readonly param: string;
  /** One row's statement; undefined when a row is more than one (a collection with vectors kept apart, catalog.ts). */
  readonly sql: string | undefined;
  /** All rows in one statement (node/query/plan/bulk.ts); undefined for a collection without fields. */
  readonly staged: StagedSql | undefined;
  readonly check?: PolicyCheck;
  /** The collection, as a refused row's message names it. */
  readonly collection: string;
  /** The parameter's index: it holds the rows, an array of objects (or one object). */
  readonly index: number;
  /** Each field, in the collection's order: how a row's value for it binds (execute/bulk-rows.ts). */
  readonly fields: readonly BulkField[];
}

/** How one field's SQL arguments come from a bulk row. */
export interface BulkField {
  readonly name: string;
  readonly type: FieldType;
  readonly required: boolean;
  /** The value a row that leaves the field out takes from the token (a policy pins it). */
  readonly pinned: Arg | undefined;
  /** The default's SQL arguments, bound once per execution; undefined when the field has no default. */
  readonly defaultArgs: readonly Arg[] | undefined;
}

/** A bulk write's rows through a temporary table, then into the collection by one statement. */
export interface StagedSql {
  /** The temporary table, if this connection has not made it yet. */
  readonly create: string;
  /** One row into it: the row statement's values and arguments. */
  readonly stage: string;
  /** Every staged row into the collection, in their order; an insert answers the ids (`RETURNING`). */
  readonly write: string;
  /**
   * Then each vector kept apart into its table (catalog.ts): an insert's take the ids `write` answered
   * (a JSON array), a put's nothing.
   */
  readonly apart: readonly string[];
  /** Empties the temporary table. */
  readonly clear: string;
}

/** `near`, alone or fused with `match`: a ranking from the vector index (or a scan), then a read of its rows. */
export interface VectorPlan {
  readonly kind: 'vector';
  /** The field is made with `@embed`: what it embeds and with what model, for a `near` given words. */
  readonly embed?: EmbedSpec;
  readonly collection: string;
  readonly field: string;
  readonly dims: number;
  readonly metric: Metric;
  /** The field has @hnsw: the ranking comes from its Faiss index; otherwise from an exact scan. */
  readonly indexed: boolean;
  /** The query vector, as given: a value expression (an array of numbers, a parameter). */
  readonly vector: Expr;
  /** The ids of the rows that pass the filter (where and expiry); undefined when every row does. */
  readonly passing: SqlStep | undefined;
  /** Ids and vectors of the rows that pass, for an exact scan. */
  readonly scan: SqlStep;
  /**
   * With fuse: the text ranking's candidates (ids), best first. Its arguments: the filter's, the MATCH
   * expression, the rank function (when `rank` is given: a token's statistics), the LIMIT.
   */
  readonly text:
    | {
        readonly sql: string;
        readonly filterArgs: readonly Arg[];
        /** The MATCH expression: null when the words hold no word, and the text ranks no row. */
        readonly query: Arg;
        readonly rank: TextRank | undefined;
        /** The words the read's snippets bind (matchTerms). */
        readonly words: Arg;
      }
    | undefined;
  /**
   * Reads the chosen rows: its last argument is their ids as a JSON array. With `text`, the words
   * come first, and each row's snippet follows its columns.
   */
  readonly read: string;
  readonly columns: readonly OutputColumn[];
  /** The statement has `order`: rows come in the read's order, not the ranking's. */
  readonly ordered: boolean;
  readonly limit: Arg | undefined;
  readonly offset: Arg | undefined;
  readonly count: boolean;
}
