/**
 * How a `match` scores its rows under a token's policy: the rank function its SQL binds
 * (`<fts>.rank MATCH ?`).
 *
 * With the server's token, or a token whose policy reads every row, BM25's statistics are the whole
 * collection's, kept by FTS5: the rank function is written into the plan's SQL (text-index.ts,
 * textTopSql), and there is nothing to bind. Under a policy condition they are counted, at each run,
 * over the rows the condition lets the token read: N, their total
 * length, and for each word of the query the rows holding it. A score then depends on those rows
 * alone, so that no token learns from its scores how many rows it cannot read hold a word
 * (docs/security.md). What that costs (bench/HISTORY.md, "Scores under a policy"): one statement over the token's rows
 * and one per word over the rows holding the word, each joined to the policy's condition.
 */
import type { Cond, TextTokenizer } from '../../../shared/fenecql/ast.js';
import { textStatsSql } from '../../search/text-index.js';
import type { Collection } from '../../schema/catalog.js';
import type { Compiler } from '../compile/compiler.js';
import type { Arg } from '../compile/args.js';

/** Statistics to count at run time: the rows a policy condition lets a token read. */
export interface ScopedRank {
  /** N and total length of those rows; its arguments are the condition's. */
  readonly size: string;
  /** Those rows that one word's MATCH expression finds; the condition's arguments, then the expression. */
  readonly hits: string;
  readonly args: readonly Arg[];
  /** The query's words (text), each counted as a MATCH expression of its own (wordExpressions), in their order. */
  readonly words: Arg;
  /** The field matched ('*': every @text field), and the @text fields' names. */
  readonly field: string;
  readonly fields: readonly string[];
  /** Which of the words are searched (tokenizers.ts). */
  readonly tokenizer: TextTokenizer;
  readonly column: number;
}

/** What a plan keeps of a `match`'s scoring under a policy: what to count first, and its rank argument. */
export interface TextRank {
  /** Binds the rank function `scopedRank` put into the context. */
  readonly arg: Arg;
  readonly scoped: ScopedRank;
}

/** A `match` when planned: what it searches for and how it scores. */
export interface MatchQuery {
  readonly field: string;
  /** The MATCH expression when bound: null when the words hold no word, and the statement answers no rows. */
  readonly expression: Arg;
  /** The words as fenec_snippet takes them (matchTerms), null with the expression. */
  readonly snippetWords: Arg;
  /** Under a policy; undefined for the whole collection's statistics. */
  readonly rank: TextRank | undefined;
}

/**
 * The scoring of `match FIELD` (column: its index among the @text fields; -1 for `*`) over
 * `collection` under `policy`, or undefined when the token has none. `words` binds the user's words.
 */
export function textRank(
  collection: Collection,
  field: string,
  column: number,
  words: Arg,
  compiler: Compiler,
  policy: Cond | undefined,
): TextRank | undefined {
  if (policy === undefined) return undefined;
  const condition = compiler.cond(policy);
  const sql = textStatsSql(collection.name, column, condition.sql);
  return {
    arg: { kind: 'rank' },
    scoped: {
      size: sql.size,
      hits: sql.hits,
      args: condition.args,
      words,
      field,
      fields: collection.textFields.map((f) => f.name),
      tokenizer: collection.textTokenizer,
      column,
    },
  };
}
