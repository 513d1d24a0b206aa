/**
 * A `match` under a policy, when it runs: BM25's statistics counted over the rows the token may read,
 * and the rank function over them put into the context (node/query/plan/text-rank.ts says why).
 */
import { rankFunction, wordExpressions, type TextStats } from '../../search/text-index.js';
import { bindArg, bindArgs } from '../compile/args.js';
import type { SqlValue } from '../../storage/codec.js';
import type { BindContext } from '../compile/evaluate.js';
import type { ScopedRank } from '../plan/text-rank.js';
import type { StatementCache } from './statement-cache.js';

/** The context a scoped match runs with: its rank function over the statistics of the token's rows. */
export function withScopedRank(
  scoped: ScopedRank | undefined,
  ctx: BindContext,
  statements: StatementCache,
): BindContext {
  if (scoped === undefined) return ctx;
  const args: SqlValue[] = bindArgs(scoped.args, ctx);
  const [rows, tokens] = statements.get(scoped.size).raw(true).get(args) as [number, number];
  const count = statements.get(scoped.hits).pluck(true);
  const stats: TextStats = {
    rows,
    tokens,
    hits: wordsOf(scoped, ctx).map((word) => count.get([...args, word]) as number),
  };
  return { ...ctx, rank: rankFunction(scoped.column, stats) };
}

/** The query's words as MATCH expressions, one each; none when it holds no word. */
function wordsOf(scoped: ScopedRank, ctx: BindContext): string[] {
  const words = bindArg(scoped.words, ctx);
  const fields = scoped.fields.map((name) => ({ name }));
  return words === null ? [] : wordExpressions(String(words), scoped.field, fields, scoped.tokenizer);
}
