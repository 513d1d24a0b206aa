/**
 * Plans: what the planner makes of a row statement and the executor runs. SQL text with the sources
 * of its arguments, made once per statement text and schema version, run many times.
 */
import type { ArgSource, BindContext } from './values.js';

/** One column of a read's answer: its key and, where the stored form differs from JSON, how to turn it. */
export interface OutputColumn {
  readonly key: string;
  readonly decode: ((stored: unknown) => unknown) | null;
}

export interface SqlStep {
  readonly sql: string;
  readonly args: readonly ArgSource[];
}

/** A read may depend on a value known only when bound: `match ""` has no word, and answers no rows. */
export type Guard = (ctx: BindContext) => boolean;

export type Plan =
  | { readonly kind: 'read'; readonly step: SqlStep; readonly columns: readonly OutputColumn[]; readonly guard?: Guard }
  | { readonly kind: 'count'; readonly step: SqlStep; readonly guard?: Guard }
  | { readonly kind: 'insert'; readonly rows: readonly SqlStep[] }
  | { readonly kind: 'put'; readonly step: SqlStep; readonly id: ArgSource }
  | { readonly kind: 'change'; readonly step: SqlStep };

