/**
 * The rows of a load file, read as a stream: NDJSON (one JSON object per line, blank lines
 * skipped) or one JSON array of objects, told apart by the first character that is not white space.
 * Each row comes with its JSON text (sent as it is) and the line it starts on (for messages); a row
 * that is not a JSON object is refused naming its line. Memory holds one row at a time.
 */
import { FenecError } from '../../shared/errors.js';

export interface SourceRow {
  /** The line of the file the row starts on, 1-based. */
  readonly line: number;
  /** The row's JSON text, checked to be one JSON object. */
  readonly text: string;
  readonly value: Record<string, unknown>;
}

export interface RowSourceOptions {
  /** Told how many bytes of the input have been read so far (for progress). */
  readonly onBytes?: (bytes: number) => void;
}

const WHITE = new Set([' ', '\t', '\n', '\r', '\ufeff']);

function row(line: number, text: string): SourceRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new FenecError('bad_json', `line ${line}: not JSON (${(err as Error).message})`, { hint: 'each row is one JSON object: {"field": value, …}' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FenecError('bad_json', `line ${line}: a row is a JSON object {"field": value, …}, not ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`);
  }
  return { line, text, value: value as Record<string, unknown> };
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
