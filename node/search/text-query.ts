/**
 * A user's words as an FTS5 query: what `match FIELD "…"` and `match * "…"` search for.
 *
 * The text is read as words, never as FTS5 syntax. A word is a run of letters, digits, combining marks
 * and private-use characters: the characters the `unicode61` tokenizer keeps in a token (it treats
 * everything else, apostrophes and underscores included, as a separator: "what's" is `what` and `s`).
 * Each word becomes an FTS5 string ("…"), and the strings are joined by OR: any word may match, and
 * BM25 ranks the rows. An FTS5 string cannot hold syntax, so no input can make a syntax error: the
 * only characters that reach FTS5 are word characters, double quotes around them, `OR`, and the
 * column filter `{…} : ( … )` around the whole.
 *
 * With `@text(english)` the query's stop words are left out (tokenizers.ts); a text of stop words alone
 * holds no word to search. A word followed by `*` (`data*`) is refused: the index holds stems, and a
 * prefix of a word is not one of its stem ("running" is `run`), so FTS5's prefix queries would miss.
 *
 * Where the tokenizer splits a word further (unicode61 splits Devanagari and Thai at some vowel signs),
 * the quoted word is an FTS5 phrase of its pieces, which matches the same word in the text.
 */
import assert from 'node:assert/strict';
import type { TextTokenizer } from '../../shared/fenecql/ast.js';
import { FenecError } from '../../shared/errors.js';
import { isStopWord } from './tokenizers.js';

/** The characters of a word, as unicode61 (with remove_diacritics) counts them. */
const WORD = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;
/** A word is kept only with a letter, digit or private-use character in it: marks alone make no token. */
const BASE = /[\p{L}\p{N}\p{Co}]/u;
/**
 * WORD within ASCII: its only letters and digits there, and no mark or private-use character. A text of ASCII is read
 * with it, and its words need no BASE and no NFC: in a serving process, WORD's Unicode classes, matchAll's copy of the
 * pattern and normalize took some 8 µs of a two-word `match` (make match-bench's server, CPU profiles).
 */
const ASCII_WORD = /[A-Za-z0-9]+/g;

/**
 * At most this many distinct words of a query are searched; the rest are dropped. Every word of an OR
 * is looked up and its rows ranked: 1 000 words took 1.5 s over 20 000 rows, 64 take milliseconds.
 */
export const MAX_QUERY_WORDS = 64;

/** A column of the text index: the FTS5 name of an `@text` field. Field names cannot hold a '.'. */
export function textColumn(field: string): string {
  return `f.${field}`;
}

/** An FTS5 string: double quotes around, a double quote inside doubled (words never hold one). */
function fts5String(text: string): string {
  return `"${text.includes('"') ? text.replaceAll('"', '""') : text}"`;
}

/**
 * The words of a user's text that fields with `tokenizer` search, in order, each once (compared without
 * case), at most MAX_QUERY_WORDS. `"what's C++ (v2)?"` → `["what", "s", "C", "v2"]` (exact, porter),
 * `["C", "v2"]` (english). Throws `invalid_value` for a word followed by `*`.
 */
export function queryWords(userText: string, tokenizer: TextTokenizer): string[] {
  const seen = new Set<string>();
  const words: string[] = [];
  const ascii = isAscii(userText);
  const pattern = ascii ? ASCII_WORD : WORD;
  pattern.lastIndex = 0;
  for (let match = pattern.exec(userText); match !== null; match = pattern.exec(userText)) {
    const [word] = match;
    if (!ascii && !BASE.test(word)) continue;
    if (asksForPrefix(userText, match.index, word.length)) throw prefixRefused(word);
    const key = (ascii ? word : word.normalize('NFC')).toLowerCase();
    if (seen.has(key) || isStopWord(tokenizer, key)) continue;
    seen.add(key);
    words.push(word);
    if (words.length === MAX_QUERY_WORDS) break;
  }
  return words;
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * Whether the word at `start` is followed by a `*` that asks for a prefix (`data*`), not one that
 * marks emphasis as Markdown writes it (`*data*`, `**data**`): those words are searched as words.
 */
function asksForPrefix(text: string, start: number, length: number): boolean {
  const after = start + length;
  return text[after] === '*' && text[after + 1] !== '*' && text[start - 1] !== '*';
}

function prefixRefused(word: string): FenecError {
  return new FenecError(
    'invalid_value',
    `match searches whole words; "${word}*" asks for the words that begin with "${word}"`,
    {
      hint: `write whole words without "*": they are compared by their stems where the field stems (@text), so "deployment" finds "deploys"`,
    },
  );
}

/**
 * The MATCH argument of `match FIELD "…"` or `match * "…"`: the user's words as an FTS5 query,
 * `"when" OR "do" OR "we" OR "deploy"` (`"deploy"` for english), restricted to the field's column for a
 * named field. `fields` are the collection's `@text` fields, in index order. null when the text holds no word to search
 * (`""`, `"?!"`, an emoji, or for english only stop words): the caller answers no rows.
 *
 * Throws `invalid_statement` when `field` is not an `@text` field (the planner should refuse it first,
 * with the statement's position).
 */
export function matchExpression(
  userText: string,
  field: string,
  fields: readonly { readonly name: string }[],
  tokenizer: TextTokenizer,
): string | null {
  return matchTerms(userText, field, fields, tokenizer)?.expression ?? null;
}

/**
 * matchExpression of one text, and its words as fenec_snippet takes them (native/fts5/src/snippet.c):
 * the query's words in its order (FTS5 numbers its phrases so), '\n' between them, a word never
 * holding one. The words are read once for both; null when the text holds none.
 */
export function matchTerms(
  userText: string,
  field: string,
  fields: readonly { readonly name: string }[],
  tokenizer: TextTokenizer,
): { readonly expression: string; readonly snippetWords: string } | null {
  checkField(field, fields);
  const words = queryWords(userText, tokenizer);
  if (words.length === 0) return null;
  return { expression: inField(words.map(fts5String).join(' OR '), field), snippetWords: words.join('\n') };
}

/**
 * Each word of matchExpression's query as a MATCH argument of its own, in the query's order (FTS5
 * numbers a query's phrases so): what counts the rows holding each word. [] when the text holds none.
 */
export function wordExpressions(
  userText: string,
  field: string,
  fields: readonly { readonly name: string }[],
  tokenizer: TextTokenizer,
): string[] {
  checkField(field, fields);
  return queryWords(userText, tokenizer).map((word) => inField(fts5String(word), field));
}

function checkField(field: string, fields: readonly { readonly name: string }[]): void {
  assert(fields.length > 0, 'a text index has at least one field');
  if (field !== '*' && !fields.some((f) => f.name === field)) {
    throw new FenecError('invalid_statement', `match ${field}: ${field} is not an @text field`, {
      hint: `the @text fields: ${fields.map((f) => f.name).join(', ')}; match * searches them all`,
    });
  }
}

/** A query restricted to a named field's column, or over every column for `*`. */
function inField(query: string, field: string): string {
  return field === '*' ? query : `{${fts5String(textColumn(field))}} : (${query})`;
}
