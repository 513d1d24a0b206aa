/**
 * Values between JSON and SQLite, one field type at a time.
 *
 * Storage forms: text TEXT, int INTEGER, float REAL, bool INTEGER 0/1, timestamp INTEGER milliseconds,
 * json TEXT, vector<N> BLOB of N little-endian float32, [T] TEXT holding a JSON array of T's storage form.
 */
import type { ElementType, FieldType, ScalarType } from '../../shared/fenecql/ast.js';
import { FenecError } from '../../shared/errors.js';
import { printFieldType } from '../../shared/fenecql/print.js';

export type SqlValue = string | number | bigint | Buffer | null;

/** Says where a value came from, for messages: `field year`, `$1`, `"2024"`. */
export type Label = string;

// ISO-8601 as users write it: a date, optionally a time (with seconds and fraction optional) and a zone.
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? `the int ${value}` : `the float ${value}`;
  if (typeof value === 'string')
    return `the text ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'boolean') return `the bool ${value}`;
  return 'an object';
}

function mismatch(label: Label, value: unknown, type: FieldType): FenecError {
  return new FenecError(
    'type_mismatch',
    `${label} takes ${printFieldType(type)}; the value given is ${describe(value)}`,
  );
}

/** The widest timestamp, in milliseconds either side of 1970: a JavaScript Date's range (years -271821 to 275760). */
export const MAX_TIMESTAMP_MS = 8_640_000_000_000_000;

/** A timestamp in: integer milliseconds since the epoch, or an ISO-8601 string (UTC unless it names a zone). */
export function timestampFromJson(value: unknown, label: Label): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && Math.abs(value) <= MAX_TIMESTAMP_MS) return value;
    throw new FenecError(
      'invalid_value',
      Number.isSafeInteger(value)
        ? `${label} takes a timestamp; ${value} milliseconds is past ±${MAX_TIMESTAMP_MS} (the years -271821 to 275760)`
        : `${label} takes a timestamp; ${value} is not whole milliseconds since 1970-01-01`,
    );
  }
  if (typeof value === 'string' && ISO_8601.test(value)) {
    const text = /[zZ]|[+-]\d{2}:?\d{2}$/.test(value) || value.length === 10 ? value : `${value}Z`;
    const ms = Date.parse(text.replace(' ', 'T'));
    if (!Number.isNaN(ms)) return ms;
  }
  throw new FenecError(
    'invalid_value',
    `${label} takes a timestamp; ${JSON.stringify(value)} is neither an ISO-8601 string ("2026-11-29T18:00:00Z") nor milliseconds since the epoch`,
  );
}

export function timestampToJson(ms: number): string {
  return new Date(ms).toISOString();
}

function scalarToSql(scalar: ScalarType, value: unknown, label: Label, type: FieldType): SqlValue {
  switch (scalar) {
    case 'text':
      if (typeof value === 'string') return value;
      break;
    case 'int':
      if (typeof value === 'number' && Number.isInteger(value)) {
        if (Number.isSafeInteger(value)) return value;
        throw new FenecError('invalid_value', `${label} takes int; ${value} is outside ±2^53`);
      }
      break;
    case 'float':
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      break;
    case 'bool':
      if (typeof value === 'boolean') return value ? 1 : 0;
      break;
    case 'timestamp':
      if (typeof value === 'number' || typeof value === 'string') return timestampFromJson(value, label);
      break;
    case 'json':
      return JSON.stringify(value);
  }
  throw mismatch(label, value, type);
}

/** The JSON form an array element is stored as inside a [T] column. */
function elementToStored(element: ElementType, value: unknown, label: Label): unknown {
  const type: FieldType = { kind: 'scalar', scalar: element };
  if (element === 'bool') {
    if (typeof value === 'boolean') return value;
    throw mismatch(label, value, type);
  }
  return scalarToSql(element, value, label, type);
}

export function vectorToBlob(value: unknown, dims: number, label: Label): Buffer {
  let numbers = Array.isArray(value);
  for (let i = 0; numbers && i < (value as unknown[]).length; i++) {
    const x = (value as unknown[])[i];
    numbers = typeof x === 'number' && Number.isFinite(x);
  }
  if (!numbers) {
    throw new FenecError(
      'type_mismatch',
      `${label} takes vector<${dims}>, an array of ${dims} numbers; the value given is ${describe(value)}`,
    );
  }
  const given = value as number[];
  if (given.length !== dims) {
    throw new FenecError('vector_length', `vector has ${given.length} components; ${label} takes vector<${dims}>`);
  }
  // Out of Node's buffer pool (a slab shared by small buffers, offsets aligned to 8): a Float32Array
  // of its own is an allocation outside the heap for every row.
  const blob = Buffer.allocUnsafe(dims * 4);
  const floats = new Float32Array(blob.buffer, blob.byteOffset, dims);
  for (let i = 0; i < dims; i++) floats[i] = given[i]!;
  checkFloat32(floats, given, label);
  return blob;
}

/** The largest float32, which a vector's components are stored as. */
const MAX_FLOAT32 = 3.4028234663852886e38;

/**
 * Refuses a vector whose components overflowed on the way to float32 (1e39 becomes Infinity, read back
 * as null and never found by near): `invalid_number`, naming the component.
 */
export function checkFloat32(floats: Float32Array, given: ArrayLike<number>, label: Label): void {
  for (let i = 0; i < floats.length; i++) {
    if (!Number.isFinite(floats[i]!)) {
      throw new FenecError(
        'invalid_number',
        `component ${i} of ${label} is ${given[i]}, past the range of a vector's float32 components (±3.4e38)`,
        {
          hint: `give components between -${MAX_FLOAT32} and ${MAX_FLOAT32}`,
        },
      );
    }
  }
}

export type NumberKind = 'int' | 'float' | 'timestamp';

/**
 * The result of an arithmetic operation as SQLite computed it, checked as FenecQL takes numbers: an int
 * inside ±2^53 (SQLite turns an overflowing int into a float), a float finite (SQLite's overflow is
 * Infinity, stored and read back as null), a timestamp inside a Date's range. `invalid_number` else.
 * The SQL functions fenec_int, fenec_float and fenec_timestamp (storage/sqlite.ts) call it on each row.
 */
export function checkedNumber(kind: NumberKind, value: unknown, label: Label): unknown {
  if (typeof value !== 'number') return value;
  const fits =
    kind === 'float'
      ? Number.isFinite(value)
      : Number.isSafeInteger(value) && (kind === 'int' || Math.abs(value) <= MAX_TIMESTAMP_MS);
  if (fits) return value;
  const range =
    kind === 'float'
      ? '±1.8e308'
      : kind === 'int'
        ? "an int's ±2^53"
        : `a timestamp's ±${MAX_TIMESTAMP_MS} milliseconds`;
  throw new FenecError('invalid_number', `${label} overflows: its result is past ${range}`, {
    hint:
      kind === 'float'
        ? 'scale the values down before multiplying'
        : kind === 'int'
          ? 'compute with floats (1.0 * x) or smaller values'
          : 'a timestamp lies between the years -271821 and 275760',
  });
}

/**
 * A JSON value as the storage form of a field type; throws type_mismatch, vector_length or invalid_value
 * naming `label`. null passes as SQL NULL (required fields are checked by the caller, which knows why).
 */
export function toSql(type: FieldType, value: unknown, label: Label): SqlValue {
  if (value === null || value === undefined) return null;
  switch (type.kind) {
    case 'scalar':
      return scalarToSql(type.scalar, value, label, type);
    case 'vector':
      return vectorToBlob(value, type.dims, label);
    case 'array':
      if (!Array.isArray(value)) throw mismatch(label, value, type);
      return JSON.stringify(value.map((item, i) => elementToStored(type.element, item, `${label}[${i}]`)));
  }
}

/** 10^k for k = 0 … 22: every one exactly a double. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);

/**
 * The shortest decimal that reads back as the same float32: 0.1f prints as 0.1, not 0.10000000149011612.
 *
 * A candidate of d significant digits is m / 10^k (or m × 10^k) with m a whole number: an operation on
 * two doubles that are exact, so it is the double nearest the decimal, the number JSON prints as that
 * decimal. Arithmetic, not `toPrecision` and a parse of its string for each d, which cost 1 µs a
 * component: 0.4 ms to read one 384-dim vector. Whether d digits read back grows with d, so d is found by
 * a binary search over 1 … 9 (nine always do). A product a hair off a half may round m the wrong way: that
 * candidate fails the float32 check and a longer one is taken, so what is answered always reads back as
 * the same float32. Magnitudes whose powers of ten are not exact take the string way.
 */
export function shortestFloat32(x: number): number {
  if (x === 0) return 0;
  const magnitude = Math.abs(x);
  const exponent = Math.floor(Math.log10(magnitude));
  // d digits place the last one at 10^(exponent - d + 1): exact powers for every d from 1 to 9.
  if (exponent > 22 || exponent < -14) return shortestByString(x);
  let low = 1;
  let high = 9;
  let best = NaN;
  while (low <= high) {
    const digits = (low + high) >> 1;
    const places = digits - 1 - exponent;
    const candidate =
      places >= 0
        ? Math.round(magnitude * POWERS_OF_TEN[places]!) / POWERS_OF_TEN[places]!
        : Math.round(magnitude / POWERS_OF_TEN[-places]!) * POWERS_OF_TEN[-places]!;
    if (Math.fround(candidate) === magnitude) {
      best = candidate;
      high = digits - 1;
    } else {
      low = digits + 1;
    }
  }
  if (Number.isNaN(best)) return shortestByString(x);
  return x < 0 ? -best : best;
}

function shortestByString(x: number): number {
  for (let digits = 1; digits < 9; digits++) {
    const candidate = Number(x.toPrecision(digits));
    if (Math.fround(candidate) === x) return candidate;
  }
  return Number(x.toPrecision(9));
}

export function blobToVector(blob: Buffer): number[] {
  const floats = new Float32Array(blob.buffer, blob.byteOffset, blob.byteLength / 4);
  const out = new Array<number>(floats.length);
  for (let i = 0; i < floats.length; i++) out[i] = shortestFloat32(floats[i]!);
  return out;
}

/** A function from a column's stored value to its JSON value, built once per field. */
export function decoderFor(type: FieldType): (value: unknown) => unknown {
  switch (type.kind) {
    case 'vector':
      return (v) => (v === null ? null : blobToVector(v as Buffer));
    case 'array':
      if (type.element === 'timestamp') {
        return (v) => (v === null ? null : (JSON.parse(v as string) as number[]).map(timestampToJson));
      }
      return (v) => (v === null ? null : JSON.parse(v as string));
    case 'scalar':
      switch (type.scalar) {
        case 'bool':
          return (v) => (v === null ? null : v === 1);
        case 'timestamp':
          return (v) => (v === null ? null : timestampToJson(v as number));
        case 'json':
          return (v) => (v === null ? null : JSON.parse(v as string));
        default:
          return (v) => v;
      }
  }
}

/** The SQLite column type of a field (tables are STRICT, so SQLite holds us to it). */
export function columnType(type: FieldType): 'TEXT' | 'INTEGER' | 'REAL' | 'BLOB' {
  switch (type.kind) {
    case 'vector':
      return 'BLOB';
    case 'array':
      return 'TEXT';
    case 'scalar':
      switch (type.scalar) {
        case 'int':
        case 'bool':
        case 'timestamp':
          return 'INTEGER';
        case 'float':
          return 'REAL';
        default:
          return 'TEXT';
      }
  }
}
