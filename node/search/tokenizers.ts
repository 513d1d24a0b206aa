/**
 * How an `@text` field compares words: the tokenizer its collection's FTS5 table is made with, and
 * which of a query's words are searched.
 *
 * - `english` (the default since it exists): Snowball's English stemmer (Porter2, through
 *   native/fts5/src/stem.c) over unicode61: "deploys", "deployed", "deploying" and "deployment" are
 *   all `deploy`. English stop words (STOP_WORDS) are dropped from the query, so that a row sharing
 *   only "the" with "what day is the deploy?" is no answer. The rows' text is indexed whole: a stop
 *   word still counts in a row's length, and snippets show the text as written.
 * - `porter`: FTS5's own Porter stemmer, which every `@text` field had before there was a choice (a
 *   catalogue entry without a tokenizer is one). Kept, with every query word searched, so that a file
 *   written then reads exactly as it did. Porter's 1980 steps disagree on common words: "deploys" is
 *   `deploi`, "deployment" `deploy`.
 * - `exact`: unicode61 alone: words as written, every query word searched.
 *
 * All three fold case in every script and remove accents from Latin letters ("Café" is "cafe").
 * One FTS5 table holds all of a collection's `@text` fields, so they share one tokenizer.
 */
import type { FieldDef, TextTokenizer } from '../../shared/fenecql/ast.js';
import { FenecError } from '../../shared/errors.js';

/** What a bare `@text` makes in a new collection. */
export const DEFAULT_TOKENIZER: TextTokenizer = 'english';
/** What a stored `@text` without a tokenizer is: the files written before the choice. */
export const STORED_DEFAULT_TOKENIZER: TextTokenizer = 'porter';

/** Each tokenizer as FTS5's `tokenize=` option (and fenec_snippet's tokenizer argument). */
export const FTS5_TOKENIZE: Readonly<Record<TextTokenizer, string>> = {
  english: 'fenec_stem english unicode61 remove_diacritics 2',
  porter: 'porter unicode61 remove_diacritics 2',
  exact: 'unicode61 remove_diacritics 2',
};

/**
 * English stop words, dropped from the queries of `@text(english)` fields: Snowball's English list
 * (snowballstem.org, algorithms/english/stop.txt) as unicode61 splits it — "don't" is `don` and `t`, so
 * the contractions' pieces are here in place of the contractions.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers ' +
    'herself it its itself they them their theirs themselves what which who whom this that these those am is ' +
    'are was were be been being have has had having do does did doing would should could ought a an the and ' +
    'but if or because as until while of at by for with about against between into through during before ' +
    'after above below to from up down in out on off over under again further then once here there when ' +
    'where why how all any both each few more most other some such no nor not only own same so than too very ' +
    'cannot s t d ll m re ve isn aren wasn weren hasn haven hadn doesn don didn won wouldn shan shouldn can ' +
    'couldn mustn let'
  ).split(' '),
);

/** Whether a query's word is left out of the search of fields with this tokenizer (word lower-cased). */
export function isStopWord(tokenizer: TextTokenizer, word: string): boolean {
  return tokenizer === 'english' && STOP_WORDS.has(word);
}

/** The tokenizer of stored `@text` fields (the first one's; a collection's all share it). */
export function storedTokenizer(defs: readonly FieldDef[]): TextTokenizer | undefined {
  for (const def of defs)
    for (const a of def.annotations) if (a.kind === 'text') return a.tokenizer ?? STORED_DEFAULT_TOKENIZER;
  return undefined;
}

/**
 * Definitions as the catalogue stores them: every `@text` with its tokenizer written out — a bare one
 * takes `inherited` (the tokenizer of the collection's `@text` fields, when a field is added to them)
 * or else the default. Refuses two tokenizers in one collection.
 */
export function withTokenizers(
  collection: string,
  defs: readonly FieldDef[],
  inherited: TextTokenizer | undefined,
): FieldDef[] {
  const bare = inherited ?? DEFAULT_TOKENIZER;
  let first: { readonly tokenizer: TextTokenizer; readonly by: string } | undefined =
    inherited === undefined ? undefined : { tokenizer: inherited, by: `the @text fields of ${collection}` };
  for (const def of defs) {
    const annotation = def.annotations.find((a) => a.kind === 'text');
    if (annotation === undefined) continue;
    const tokenizer = annotation.tokenizer ?? bare;
    first ??= { tokenizer, by: `${collection}.${def.name}` };
    if (tokenizer !== first.tokenizer) {
      throw new FenecError(
        'invalid_annotation',
        `a collection's @text fields share one tokenizer: ${collection}.${def.name} asks for ${tokenizer}, ${first.by} for ${first.tokenizer}`,
        { hint: `name the same one on each: @text(${first.tokenizer}), or @text(${tokenizer}) on all` },
      );
    }
  }
  return defs.map((def) =>
    def.annotations.some((a) => a.kind === 'text')
      ? {
          ...def,
          annotations: def.annotations.map((a) =>
            a.kind === 'text' ? { kind: 'text', tokenizer: first!.tokenizer } : a,
          ),
        }
      : def,
  );
}
