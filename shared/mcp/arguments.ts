/**
 * A tool's arguments checked against its input schema: an argument it does not take is refused
 * (never ignored: a misspelt `filter` ignored would answer rows the model meant to leave out), and
 * each value must be of its type. Names are held to FenecQL's rule for one.
 */
import { FenecError } from '../errors.js';
import { isName } from '../fenecql/lexer.js';
import { checkJsonValue } from '../fenecql/limits.js';
import type { ArgSchema, Arguments, ToolDefinition } from './tool.js';

/**
 * @throws FenecError `invalid_argument` naming the argument, what it takes, and for an unknown one
 *   the arguments the tool takes (and the likeliest meant); `too_complex` or `invalid_number` for a
 *   value nested past MAX_DEPTH or holding a number JSON read as Infinity.
 */
export function checkArguments(tool: ToolDefinition, args: unknown): Arguments {
  if (args === undefined || args === null) args = {};
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new FenecError(
      'invalid_argument',
      `${tool.name} takes its arguments as a JSON object, not ${describe(args)}`,
    );
  }
  // Before anything walks them (a row's values become literal trees past $99): depth and finite numbers.
  checkJsonValue(args, tool.name);
  const { properties, required = [] } = tool.inputSchema;
  const record = args as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!Object.hasOwn(properties, key)) {
      const names = Object.keys(properties);
      const near = closest(key, names);
      throw new FenecError(
        'invalid_argument',
        `${tool.name} takes no argument ${JSON.stringify(key)}${near === undefined ? '' : ` (did you mean ${near}?)`}`,
        {
          hint: `${tool.name} takes ${names.join(', ')}`,
        },
      );
    }
  }
  for (const name of required) {
    if (record[name] === undefined || record[name] === null) {
      throw new FenecError(
        'invalid_argument',
        `${tool.name} needs the argument ${name}: ${properties[name]!.description ?? ''}`.trimEnd(),
      );
    }
  }
  for (const [key, value] of Object.entries(record)) {
    // null stands for "not given", as JSON writers often send it for an optional argument.
    if (value !== null && value !== undefined) checkValue(tool.name, key, properties[key]!, value);
  }
  return record;
}

function checkValue(tool: string, path: string, schema: ArgSchema, value: unknown): void {
  const types = typeof schema.type === 'string' ? [schema.type] : schema.type;
  const type = types.find((t) => isType(t, value));
  if (type === undefined) {
    throw new FenecError(
      'invalid_argument',
      `${tool}: ${path} takes ${types.map(article).join(' or ')}, not ${describe(value)}`,
    );
  }
  if (schema.const !== undefined && value !== schema.const) {
    throw new FenecError('invalid_argument', `${tool}: ${path} takes only ${JSON.stringify(schema.const)}`);
  }
  if (schema.enum !== undefined && !schema.enum.includes(value as string)) {
    throw new FenecError(
      'invalid_argument',
      `${tool}: ${path} takes ${schema.enum.map((v) => JSON.stringify(v)).join(', ')}, not ${describe(value)}`,
    );
  }
  if (schema.minimum !== undefined && (value as number) < schema.minimum) {
    throw new FenecError('invalid_argument', `${tool}: ${path} takes ${schema.minimum} or more, not ${String(value)}`);
  }
  if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value as string)) {
    throw new FenecError(
      'invalid_argument',
      `${tool}: ${path} is ${JSON.stringify(value)}; ${schema.description ?? `it takes ${schema.pattern}`}`,
    );
  }
  if (type === 'array') {
    const items = value as unknown[];
    if (schema.minItems !== undefined && items.length < schema.minItems) {
      throw new FenecError(
        'invalid_argument',
        `${tool}: ${path} takes at least ${schema.minItems} item${schema.minItems === 1 ? '' : 's'}`,
      );
    }
    if (schema.maxItems !== undefined && items.length > schema.maxItems) {
      throw new FenecError(
        'invalid_argument',
        `${tool}: ${path} takes at most ${schema.maxItems} items; it has ${items.length}`,
        {
          hint:
            tool === 'write'
              ? 'split the rows over several calls; a bulk load goes through /query (insert into C $1) or fenec import'
              : undefined,
        },
      );
    }
    if (schema.items !== undefined) items.forEach((item, i) => checkValue(tool, `${path}[${i}]`, schema.items!, item));
  }
}

function isType(type: string, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isSafeInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    default:
      return false;
  }
}

function article(type: string): string {
  return type === 'array'
    ? 'an array'
    : type === 'object'
      ? 'an object'
      : type === 'integer'
        ? 'an integer'
        : `a ${type}`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'number')
    return Number.isInteger(value) ? `the number ${value}` : `the number ${value} (not an integer)`;
  return `${typeof value} ${String(value)}`;
}

/**
 * A collection or field name from an argument, held to FenecQL's rule for a name.
 *
 * @throws FenecError `invalid_name`.
 */
export function checkName(tool: string, argument: string, name: string): string {
  if (!isName(name)) {
    throw new FenecError(
      'invalid_name',
      `${tool}: ${argument} is ${JSON.stringify(name.length > 70 ? `${name.slice(0, 70)}…` : name)}, not a FenecQL name`,
      {
        hint: 'a name is a letter or _, then letters, digits or _, at most 64 characters; schema lists the names there are',
      },
    );
  }
  return name;
}

/** The name a misspelling most likely meant: within two edits, or undefined. */
function closest(word: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const name of names) {
    const distance = editDistance(word.toLowerCase(), name);
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}
