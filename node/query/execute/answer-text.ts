/**
 * An answer as the JSON `/query` sends, held to the answer cap (--max-answer, a tenant's
 * maxAnswerBytes). A read's rows are serialized as SQLite yields them and the read stops at the cap,
 * so that a request never holds more than about the cap, however many rows the statement matches.
 */
import { FenecError } from '../../../shared/errors.js';
import type { Statement } from '../../storage/sqlite.js';
import type { Answer } from '../../../shared/answer.js';

/** The JSON of an answer written as its rows were read: taken as is by answerText. */
const JSON_TEXT = Symbol('json');

type Serialized = Answer & { readonly [JSON_TEXT]?: string };

/** The answer's JSON, refused with `answer_too_large` past `maxBytes`. */
export function answerText(answer: Answer, maxBytes: number): string {
  const text = (answer as Serialized)[JSON_TEXT] ?? JSON.stringify(answer);
  // Each character is at most three bytes: the exact count is needed only near the cap.
  const bytes = text.length * 3 <= maxBytes ? text.length : Buffer.byteLength(text);
  if (bytes > maxBytes) {
    const rows = Array.isArray(answer.rows) ? answer.rows.length : undefined;
    throw tooLarge(`the answer is ${bytes} bytes${rows === undefined ? '' : ` in ${rows} rows`}`, maxBytes, rows);
  }
  return text;
}

export interface ReadColumn {
  readonly key: string;
  readonly decode: ((value: unknown) => unknown) | null;
}

/**
 * Reads rows one at a time into their JSON, `{"rows":[…],"count":N}`, and stops — ending SQLite's
 * statement — once the text would pass `maxBytes`. A statement of `one` row at most is read by one fetch: it
 * holds no more than the iterator would, and better-sqlite3's iterator costs several µs to make.
 */
export function readSerialized(
  statement: Statement,
  args: readonly unknown[],
  columns: readonly ReadColumn[],
  maxBytes: number,
  one = false,
): Answer {
  const parts: string[] = [];
  // '{"rows":[' and '],"count":' and the count's digits.
  let bytes = 9 + 10 + 16;
  const rows = one ? fetched(statement, args) : (statement.iterate(args) as IterableIterator<unknown[]>);
  for (const values of rows) {
    const row: Record<string, unknown> = {};
    for (let c = 0; c < columns.length; c++) {
      const column = columns[c]!;
      const value = values[c];
      row[column.key] = column.decode === null ? value : column.decode(value);
    }
    const json = JSON.stringify(row);
    bytes += (json.length * 3 <= maxBytes - bytes ? json.length : Buffer.byteLength(json)) + 1;
    // Thrown out of the loop, the iterator is ended, and SQLite's statement with it.
    if (bytes > maxBytes) {
      throw tooLarge(`the answer passes ${maxBytes} bytes after ${parts.length} rows`, maxBytes, parts.length, true);
    }
    parts.push(json);
  }
  const answer: Serialized = {
    count: parts.length,
    [JSON_TEXT]: `{"rows":[${parts.join(',')}],"count":${parts.length}}`,
  };
  return answer;
}

/**
 * The row of a statement of one row at most, or none: one fetch, where better-sqlite3's iterate() and all() set up an
 * iteration even for one row (several µs).
 */
export function fetched(statement: Statement, args: readonly unknown[]): unknown[][] {
  const row = statement.get(args) as unknown[] | undefined;
  return row === undefined ? [] : [row];
}

function tooLarge(what: string, maxBytes: number, rows: number | undefined, more = false): FenecError {
  // A page sized to about half the cap, from the rows that fitted: room for rows that differ.
  const page = rows === undefined || rows < 2 ? undefined : Math.max(1, Math.floor(rows / 2));
  const limit = page === undefined ? 'limit N' : `limit ${page}`;
  return new FenecError(
    'answer_too_large',
    `${what}${more ? ' and there are more' : ''}, past the cap of ${maxBytes} bytes; it is refused whole, never cut`,
    {
      hint:
        `page through it: add "${limit}" to the read and send each answer's next_cursor back as "cursor" ` +
        `(or add "order id ${limit}" and ask again with "where id > $1" set to the last id answered), ` +
        "or select fewer fields; the cap is the server's --max-answer (a tenant's maxAnswerBytes quota)",
    },
  );
}
