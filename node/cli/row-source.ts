/**
 * The rows of a load file, read as a stream: NDJSON (one JSON object per line, blank lines
 * skipped) or one JSON array of objects, told apart by the first byte that is not white space.
 * Each row comes with its bytes as the file has them (sent as they are, never decoded) and the line
 * it starts on (for messages). Memory holds a chunk of the file and the rows of a batch.
 *
 * A row is checked to be one object by its shape (oneObject), not parsed: the server parses it, and
 * parsing it here too cost the loader a second JSON.parse of every row (21 µs a row of a 384-dim
 * vector, against 5 for the shape). What the shape lets through that is not JSON makes the whole
 * batch's body not JSON, which the server refuses before it writes anything; rowValue then names the
 * line.
 */
import { FenecError } from '../../shared/errors.js';
import { describeByte, invalidUtf8At } from '../../shared/utf8.js';

export interface SourceRow {
  /** The line of the file the row starts on, 1-based. */
  readonly line: number;
  /** The row's JSON text as the file has it (UTF-8): one JSON object by its shape (oneObject); rowValue parses it. */
  readonly bytes: Buffer;
}

export interface RowSourceOptions {
  /** Told how many bytes of the input have been read so far (for progress). */
  readonly onBytes?: (bytes: number) => void;
}

/** What the shape of a JSON text is made of: strings and brackets. Numbers and the rest are skipped. */
const STRUCTURE = /["{}[\]]/g;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Whether `text` is shaped as one JSON object: it opens with `{`, its brackets (of either kind, outside
 * strings) close at its last character and not before, and its strings end. A text of that shape joined
 * with others by commas inside an array is one element of it or makes the array not JSON: it can never
 * stand for two rows, or take a part of its neighbour.
 */
export function oneObject(text: string): boolean {
  const last = text.length - 1;
  if (text.charCodeAt(0) !== OPEN_BRACE || text.charCodeAt(last) !== CLOSE_BRACE) return false;
  let depth = 0;
  STRUCTURE.lastIndex = 0;
  for (let found = STRUCTURE.exec(text); found !== null; found = STRUCTURE.exec(text)) {
    const at = found.index;
    const c = text.charCodeAt(at);
    if (c === QUOTE) {
      const end = stringEnd(text, at + 1);
      if (end < 0) return false;
      STRUCTURE.lastIndex = end + 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
    } else if (--depth <= 0 && at !== last) {
      return false;
    }
  }
  return depth === 0;
}

/** Where the string opened before `from` ends (its closing quote), or -1 if it never does. */
function stringEnd(text: string, from: number): number {
  for (let quote = text.indexOf('"', from); quote >= 0; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote;
  }
  return -1;
}

/** The row's value; a text that is not UTF-8 or not a JSON object is refused naming its line. */
export function rowValue(row: SourceRow): Record<string, unknown> {
  const notUtf8 = invalidUtf8At(row.bytes);
  if (notUtf8 >= 0) {
    throw new FenecError(
      'bad_json',
      `line ${row.line}: not UTF-8 (${describeByte(row.bytes, notUtf8)} of the line begins no character)`,
      {
        hint: 'convert the file to UTF-8 (iconv -f LATIN1 -t UTF-8 FILE)',
      },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(row.bytes.toString('utf8'));
  } catch (err) {
    throw new FenecError('bad_json', `line ${row.line}: not JSON (${(err as Error).message})`, {
      hint: 'each row is one JSON object: {"field": value, …}',
    });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FenecError(
      'bad_json',
      `line ${row.line}: a row is a JSON object {"field": value, …}, not ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`,
    );
  }
  return value as Record<string, unknown>;
}

/**
 * A row of `bytes`; `text` is the same bytes read as latin1, one character a byte. The shape of a
 * JSON text is made of ASCII characters, which UTF-8 never uses inside a character of more than one
 * byte, so the shape read there is the shape of the UTF-8 text — with no decoding of it.
 */
function row(line: number, bytes: Buffer, text: string): SourceRow {
  const source = { line, bytes };
  // Not of the shape: what is wrong with it, in JSON's own words.
  if (!oneObject(text)) rowValue(source);
  return source;
}

const NEWLINE = 0x0a;
/** JSON's white space (ASCII only: a byte of latin1 0xa0 is a part of a UTF-8 character, not a space). */
const isWhite = (code: number): boolean => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** The rows of `input` (the file's bytes, in chunks as a stream gives them). */
export async function* readRows(
  input: AsyncIterable<Buffer>,
  options: RowSourceOptions = {},
): AsyncGenerator<SourceRow> {
  let bytes = 0;
  const counted = async function* (): AsyncGenerator<Buffer> {
    for await (const chunk of input) {
      bytes += chunk.length;
      options.onBytes?.(bytes);
      yield chunk;
    }
  };
  const chunks = counted();
  // Find the first byte that is not white space (after a byte order mark): `[` is a JSON array, anything else NDJSON.
  let head = Buffer.alloc(0);
  let first = -1;
  while (first < 0) {
    const next = await chunks.next();
    if (next.done === true) return;
    head = Buffer.concat([head, next.value]);
    if (head.length < BOM.length && BOM.subarray(0, head.length).equals(head)) continue;
    if (head.subarray(0, BOM.length).equals(BOM)) head = head.subarray(BOM.length);
    first = head.findIndex((code) => !isWhite(code));
  }
  const rest = (async function* (): AsyncGenerator<Buffer> {
    yield head;
    yield* { [Symbol.asyncIterator]: () => chunks };
  })();
  yield* head[first] === 0x5b ? arrayRows(rest) : lineRows(rest);
}

/** The row of a line, its white space trimmed; undefined for a blank line. */
function lineRow(line: number, bytes: Buffer, text: string, start: number, end: number): SourceRow | undefined {
  while (start < end && isWhite(text.charCodeAt(start))) start++;
  while (end > start && isWhite(text.charCodeAt(end - 1))) end--;
  return start === end ? undefined : row(line, bytes.subarray(start, end), text.slice(start, end));
}

async function* lineRows(chunks: AsyncIterable<Buffer>): AsyncGenerator<SourceRow> {
  let line = 0;
  // The start of a line that no chunk so far has ended.
  let pending: Buffer[] = [];
  for await (const chunk of chunks) {
    let at = chunk.indexOf(NEWLINE);
    if (at < 0) {
      pending.push(chunk);
      continue;
    }
    let start = 0;
    if (pending.length > 0) {
      const joined = Buffer.concat([...pending, chunk.subarray(0, at)]);
      pending = [];
      const found = lineRow(++line, joined, joined.toString('latin1'), 0, joined.length);
      if (found !== undefined) yield found;
      start = at + 1;
      at = chunk.indexOf(NEWLINE, start);
    }
    const text = chunk.toString('latin1');
    for (; at >= 0; start = at + 1, at = chunk.indexOf(NEWLINE, start)) {
      const found = lineRow(++line, chunk, text, start, at);
      if (found !== undefined) yield found;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  const last = Buffer.concat(pending);
  const found = lineRow(++line, last, last.toString('latin1'), 0, last.length);
  if (found !== undefined) yield found;
}

/** The elements of one top-level JSON array, each an object; text after the array is refused. */
async function* arrayRows(chunks: AsyncIterable<Buffer>): AsyncGenerator<SourceRow> {
  let line = 1;
  let depth = 0; // 1 inside the array, more inside an element
  let inString = false;
  let escaped = false;
  let closed = false;
  let element: Buffer[] = [];
  let elementLine = 0;
  let pieceStart = -1; // where the current element's bytes start in this chunk
  for await (const chunk of chunks) {
    const text = chunk.toString('latin1');
    pieceStart = depth > 1 ? 0 : -1;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === NEWLINE) line++;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === 0x5c) escaped = true;
        else if (c === 0x22) inString = false;
        continue;
      }
      if (isWhite(c)) continue;
      if (closed) throw new FenecError('bad_json', `line ${line}: text after the array's closing ]`);
      if (depth === 0) {
        if (c !== 0x5b) throw new FenecError('bad_json', `line ${line}: expected [`);
        depth = 1;
        continue;
      }
      if (depth === 1) {
        if (c === 0x2c) continue;
        if (c === 0x5d) {
          closed = true;
          depth = 0;
          continue;
        }
        if (c !== 0x7b)
          throw new FenecError(
            'bad_json',
            `line ${line}: a row is a JSON object {"field": value, …}; found ${c < 0x80 ? JSON.stringify(text[i]) : 'a character that is not'}`,
          );
        depth = 2;
        elementLine = line;
        element = [];
        pieceStart = i;
        continue;
      }
      if (c === 0x22) inString = true;
      else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (depth === 1) {
          element.push(chunk.subarray(pieceStart, i + 1));
          pieceStart = -1;
          const bytes = element.length === 1 ? element[0]! : Buffer.concat(element);
          yield row(elementLine, bytes, bytes.toString('latin1'));
          element = [];
        }
      }
    }
    if (pieceStart >= 0) element.push(chunk.subarray(pieceStart));
  }
  if (!closed)
    throw new FenecError('bad_json', `line ${line}: the input ends inside the array; it needs its closing ]`);
}
