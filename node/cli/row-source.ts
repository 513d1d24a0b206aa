/**
 * The rows of a load file, read as a stream: NDJSON (one JSON object per line, blank lines
 * skipped) or one JSON array of objects, told apart by the first character that is not white space.
 * Each row comes with its JSON text (sent as it is) and the line it starts on (for messages). Memory
 * holds one row at a time.
 *
 * A row's text is checked to be one object by its shape (oneObject), not parsed: the server parses
 * it, and parsing it here too cost the loader a second JSON.parse of every row (21 µs a row of a
 * 384-dim vector, against 5 for the shape). What the shape lets through that is not JSON makes the
 * whole batch's body not JSON, which the server refuses before it writes anything; rowValue then
 * names the line.
 */
import { FenecError } from '../../shared/errors.js';

export interface SourceRow {
  /** The line of the file the row starts on, 1-based. */
  readonly line: number;
  /** The row's text: one JSON object by its shape (oneObject); rowValue parses it. */
  readonly text: string;
}

export interface RowSourceOptions {
  /** Told how many bytes of the input have been read so far (for progress). */
  readonly onBytes?: (bytes: number) => void;
}

const WHITE = new Set([' ', '\t', '\n', '\r', '\ufeff']);
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

/** The row's value; a text that is not a JSON object is refused naming its line. */
export function rowValue(row: SourceRow): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(row.text);
  } catch (err) {
    throw new FenecError('bad_json', `line ${row.line}: not JSON (${(err as Error).message})`, { hint: 'each row is one JSON object: {"field": value, …}' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FenecError('bad_json', `line ${row.line}: a row is a JSON object {"field": value, …}, not ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`);
  }
  return value as Record<string, unknown>;
}

function row(line: number, text: string): SourceRow {
  const source = { line, text };
  // Not of the shape: what is wrong with it, in JSON's own words.
  if (!oneObject(text)) rowValue(source);
  return source;
}

/** The rows of `input` (chunks of UTF-8 text, as a stream with setEncoding('utf8') gives them). */
export async function* readRows(input: AsyncIterable<string>, options: RowSourceOptions = {}): AsyncGenerator<SourceRow> {
  let bytes = 0;
  const counted = async function* (): AsyncGenerator<string> {
    for await (const chunk of input) {
      bytes += Buffer.byteLength(chunk);
      options.onBytes?.(bytes);
      yield chunk;
    }
  };
  const chunks = counted();
  // Find the first character that is not white space: `[` is a JSON array, anything else NDJSON.
  let head = '';
  for (;;) {
    const next = await chunks.next();
    if (next.done === true) return;
    head += next.value;
    if ([...head].some((c) => !WHITE.has(c))) break;
  }
  const first = [...head].find((c) => !WHITE.has(c));
  const rest = (async function* (): AsyncGenerator<string> {
    yield head;
    yield* { [Symbol.asyncIterator]: () => chunks };
  })();
  yield* first === '[' ? arrayRows(rest) : lineRows(rest);
}

async function* lineRows(chunks: AsyncIterable<string>): AsyncGenerator<SourceRow> {
  let line = 0;
  let carry = '';
  for await (const chunk of chunks) {
    carry += chunk;
    let start = 0;
    let at: number;
    while ((at = carry.indexOf('\n', start)) >= 0) {
      line++;
      const text = carry.slice(start, at).trim();
      start = at + 1;
      if (text !== '') yield row(line, text);
    }
    carry = carry.slice(start);
  }
  line++;
  if (carry.trim() !== '') yield row(line, carry.trim());
}

/** The elements of one top-level JSON array, each an object; text after the array is refused. */
async function* arrayRows(chunks: AsyncIterable<string>): AsyncGenerator<SourceRow> {
  let line = 1;
  let depth = 0; // 1 inside the array, more inside an element
  let inString = false;
  let escaped = false;
  let closed = false;
  let element: string[] = [];
  let elementLine = 0;
  let pieceStart = -1; // where the current element's text starts in this chunk
  for await (const chunk of chunks) {
    pieceStart = depth > 1 ? 0 : -1;
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i]!;
      if (c === '\n') line++;
      if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
        continue;
      }
      if (WHITE.has(c)) continue;
      if (closed) throw new FenecError('bad_json', `line ${line}: text after the array's closing ]`);
      if (depth === 0) {
        if (c !== '[') throw new FenecError('bad_json', `line ${line}: expected [`);
        depth = 1;
        continue;
      }
      if (depth === 1) {
        if (c === ',') continue;
        if (c === ']') {
          closed = true;
          depth = 0;
          continue;
        }
        if (c !== '{') throw new FenecError('bad_json', `line ${line}: a row is a JSON object {"field": value, …}; found ${JSON.stringify(c)}`);
        depth = 2;
        elementLine = line;
        element = [];
        pieceStart = i;
        continue;
      }
      if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 1) {
          element.push(chunk.slice(pieceStart, i + 1));
          pieceStart = -1;
          yield row(elementLine, element.join(''));
          element = [];
        }
      }
    }
    if (pieceStart >= 0) element.push(chunk.slice(pieceStart));
  }
  if (!closed) throw new FenecError('bad_json', `line ${line}: the input ends inside the array; it needs its closing ]`);
}
