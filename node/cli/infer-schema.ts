/**
 * The `create collection` that fits a load file's first rows, offered when `fenec import` is pointed at
 * a collection that does not exist: each key the rows hold becomes a field of the type its values
 * share (docs/fenecql.md, Types). A key whose values do not share one becomes `json`, which takes any.
 */
import { isName } from '../../shared/fenecql/lexer.js';

/** How many rows of the file the fields are inferred from. */
export const SAMPLE_ROWS = 100;
const MAX_DIMS = 4096;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** A value's type as a field would hold it, or undefined for null (which any field takes). */
function typeOf(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isSafeInteger(value) ? 'int' : 'float';
  if (typeof value === 'string') return ISO_TIME.test(value) && !Number.isNaN(Date.parse(value)) ? 'timestamp' : 'text';
  if (!Array.isArray(value)) return 'json';
  if (value.length > 0 && value.length <= MAX_DIMS && value.every((v) => typeof v === 'number'))
    return `vector<${value.length}>`;
  const elements: string[] = [];
  for (const element of value.map(typeOf)) {
    // An array of arrays or objects, or one holding null, is no [T] field: json holds it.
    if (element === undefined || element === 'json' || element.startsWith('vector') || element.startsWith('['))
      return 'json';
    elements.push(element);
  }
  if (elements.length === 0) return '[text]';
  const element = elements.reduce(join);
  return element === 'json' ? 'json' : `[${element}]`;
}

/** The type that holds values of both types: an int widens to a float, anything else mixed is json. */
function join(a: string, b: string): string {
  if (a === b) return a;
  if ((a === 'int' && b === 'float') || (a === 'float' && b === 'int')) return 'float';
  if ((a === '[int]' && b === '[float]') || (a === '[float]' && b === '[int]')) return '[float]';
  if (a.startsWith('vector<') && b.startsWith('vector<')) return '[float]';
  // Empty arrays were read as [text]: another array type (or a vector) holds them as well.
  if (a === '[text]' || b === '[text]') {
    const other = a === '[text]' ? b : a;
    if (other.startsWith('[') || other.startsWith('vector<')) return other;
  }
  return 'json';
}

/**
 * `create collection NAME (field type, …)` for these rows, keys in the order first seen (`id`, which
 * every collection has, left out); undefined when a key is not a name FenecQL takes.
 */
export function createCollectionFor(collection: string, rows: readonly Record<string, unknown>[]): string | undefined {
  const types = new Map<string, string | undefined>();
  for (const row of rows) {
    for (const [key, value] of Object.entries(row)) {
      if (key === 'id') continue;
      const type = typeOf(value);
      const known = types.get(key);
      types.set(key, known === undefined ? type : type === undefined ? known : join(known, type));
    }
  }
  if (types.size === 0 || [...types.keys()].some((key) => !isName(key))) return undefined;
  const fields = [...types].map(([key, type]) => `${key} ${type ?? 'json'}`);
  return `create collection ${collection} (${fields.join(', ')})`;
}
