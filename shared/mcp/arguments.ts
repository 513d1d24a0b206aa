/**
 * A tool's arguments: its input schema, written once with zod, is the type its `run` is handed, what
 * each call is checked against, and (as JSON Schema) what tools/list shows. An argument the tool
 * does not take is refused (never ignored: a misspelt `filter` ignored would answer rows the model
 * meant to leave out), and zod's issues are told as a model acts on them: which argument, what it
 * takes, and the name likely meant. Names are held to FenecQL's rule for one.
 */
import * as z from 'zod';
import { FenecError } from '../errors.js';
import { isName } from '../fenecql/lexer.js';
import { checkJsonValue } from '../fenecql/limits.js';
import { nearestName } from '../nearest-name.js';

/** A tool's input schema: an object of named arguments, and no other. */
export type ToolInput = z.ZodObject<z.ZodRawShape, z.core.$strict>;

/** The input schema as tools/list shows it. */
export interface InputSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, unknown>>;
  readonly required?: readonly string[];
  readonly additionalProperties: false;
}

/**
 * What to do instead when an argument has more items than it takes (write's rows: split them, or
 * load in bulk elsewhere): registered on the argument's schema, kept out of the JSON Schema shown.
 */
export const TOO_MANY = z.registry<{ readonly hint: string }>();

/** The JSON Schema of a tool's arguments, made once per tool (tool.ts). */
export function inputSchemaOf(input: ToolInput): InputSchema {
  const json = z.toJSONSchema(input, { unrepresentable: 'any', override: ({ jsonSchema }) => tidy(jsonSchema) });
  return {
    type: 'object',
    properties: json.properties ?? {},
    ...(json.required === undefined || json.required.length === 0 ? {} : { required: json.required }),
    additionalProperties: false,
  };
}

/**
 * What zod writes that says nothing to a model: an integer's safe-integer range (JSON numbers past it
 * are refused anyway) and an array's `items: {}` (any value).
 */
function tidy(schema: z.core.JSONSchema.BaseSchema): void {
  if (schema.type === 'integer') {
    if (schema.minimum === Number.MIN_SAFE_INTEGER) delete schema.minimum;
    if (schema.maximum === Number.MAX_SAFE_INTEGER) delete schema.maximum;
  }
  const { items } = schema;
  if (typeof items === 'object' && !Array.isArray(items) && Object.keys(items).length === 0) delete schema.items;
}

/**
 * @throws FenecError `invalid_argument` naming the argument, what it takes, and for an unknown one
 *   the arguments the tool takes (and the likeliest meant); `too_complex` or `invalid_number` for a
 *   value nested past MAX_DEPTH or holding a number JSON read as Infinity.
 */
export function checkArguments<S extends ToolInput>(tool: string, input: S, raw: unknown): z.output<S> {
  const args = raw ?? {};
  if (typeof args !== 'object' || Array.isArray(args)) {
    throw new FenecError('invalid_argument', `${tool} takes its arguments as a JSON object, not ${describe(args)}`);
  }
  // Before anything walks them (a row's values become literal trees past $99): depth and finite numbers.
  checkJsonValue(args, tool);
  // null stands for "not given", as JSON writers often send it for an optional argument.
  const given = Object.fromEntries(Object.entries(args).filter(([, value]) => value !== null));
  const checked = input.safeParse(given);
  if (checked.success) return checked.data;
  throw refusal(tool, input, given, checked.error.issues);
}

/** The issue a model is told of first: an unknown argument, then a missing one, then the first value refused. */
function refusal(
  tool: string,
  input: ToolInput,
  given: Readonly<Record<string, unknown>>,
  issues: readonly z.core.$ZodIssue[],
): FenecError {
  const names = Object.keys(input.shape);
  const unknown = issues.find((issue) => issue.code === 'unrecognized_keys');
  if (unknown !== undefined) {
    const key = unknown.keys[0]!;
    const near = nearestName(names, key);
    return new FenecError(
      'invalid_argument',
      `${tool} takes no argument ${JSON.stringify(key)}${near === undefined ? '' : ` (did you mean ${near}?)`}`,
      { hint: `${tool} takes ${names.join(', ')}` },
    );
  }
  const missing = issues.find((issue) => issue.path.length === 1 && given[String(issue.path[0])] === undefined);
  if (missing !== undefined) {
    const name = String(missing.path[0]);
    return new FenecError(
      'invalid_argument',
      `${tool} needs the argument ${name}: ${descriptionOf(input.shape[name]) ?? ''}`.trimEnd(),
    );
  }
  const issue = issues[0]!;
  const argument = input.shape[String(issue.path[0])];
  const { message, tooMany } = wanted(issue, issue.path, given, argument);
  return new FenecError('invalid_argument', `${tool}: ${message}`, {
    hint: tooMany && argument !== undefined ? TOO_MANY.get(argument)?.hint : undefined,
  });
}

/** What was wrong with the value at `path`, and whether it had too many items. */
function wanted(
  issue: z.core.$ZodIssue,
  path: readonly PropertyKey[],
  given: unknown,
  argument: z.core.$ZodType | undefined,
): { message: string; tooMany: boolean } {
  const at = pathText(path);
  const value = valueAt(given, path);
  const says = (message: string) => ({ message: `${at} ${message}`, tooMany: false });
  switch (issue.code) {
    case 'invalid_type': {
      // zod says "number" of a string given for an integer: the schema says which it wants.
      const schema = schemaAt(argument, path.slice(1));
      const integer = issue.expected === 'number' && schema instanceof z.ZodNumber && schema.isInt;
      return says(`takes ${article(integer ? 'int' : issue.expected)}, not ${describe(value)}`);
    }
    case 'custom':
      // A custom check (a row) says in its message what it takes: "an object".
      return says(`takes ${issue.message}, not ${describe(value)}`);
    case 'invalid_union': {
      // The branch the value's type matched says what is wrong inside it; when none did, every branch's type is named.
      const matched = issue.errors.find((branch) => !branch.every((inner) => typeRefusal(inner)));
      if (matched !== undefined) {
        const inner = matched[0]!;
        return wanted(inner, [...path, ...inner.path], given, argument);
      }
      const types = issue.errors
        .flat()
        .map((inner) => (inner.code === 'custom' ? inner.message : article(expected(inner))));
      return says(`takes ${types.join(' or ')}, not ${describe(value)}`);
    }
    case 'invalid_value': {
      const values = issue.values;
      if (!values.some((v) => typeof v === typeof value))
        return says(`takes ${article(typeof values[0])}, not ${describe(value)}`);
      if (values.length === 1) return says(`takes only ${JSON.stringify(values[0])}`);
      return says(`takes ${values.map((v) => JSON.stringify(v)).join(', ')}, not ${describe(value)}`);
    }
    case 'too_small':
      if (issue.origin === 'array') {
        const n = Number(issue.minimum);
        return says(`takes at least ${n} item${n === 1 ? '' : 's'}`);
      }
      return says(`takes ${issue.minimum} or more, not ${String(value)}`);
    case 'too_big':
      if (issue.origin === 'array') {
        const length = Array.isArray(value) ? value.length : 0;
        return { message: `${at} takes at most ${issue.maximum} items; it has ${length}`, tooMany: true };
      }
      return says(`takes ${issue.maximum} or less, not ${String(value)}`);
    case 'invalid_format': {
      const description = path.length === 1 && argument !== undefined ? descriptionOf(argument) : undefined;
      return {
        message: `${at} is ${JSON.stringify(value)}; ${description ?? `it takes ${issue.format === 'regex' ? issue.pattern : issue.format}`}`,
        tooMany: false,
      };
    }
    default:
      return says(issue.message);
  }
}

/** An issue that only says the value is not of the type wanted, at the branch's own level. */
function typeRefusal(issue: z.core.$ZodIssue): boolean {
  return issue.path.length === 0 && (issue.code === 'invalid_type' || issue.code === 'custom');
}

function expected(issue: z.core.$ZodIssue): string {
  return issue.code === 'invalid_type' ? issue.expected : 'value';
}

/** The schema of the value at `path` inside an argument, where one schema is it (not inside a union). */
function schemaAt(schema: z.core.$ZodType | undefined, path: readonly PropertyKey[]): z.core.$ZodType | undefined {
  if (schema instanceof z.ZodOptional) return schemaAt(schema.unwrap(), path);
  const [key, ...rest] = path;
  if (key === undefined) return schema;
  if (schema instanceof z.ZodArray && typeof key === 'number') return schemaAt(schema.element, rest);
  if (schema instanceof z.ZodObject && typeof key === 'string') return schemaAt(schema.shape[key], rest);
  return undefined;
}

/** An argument's description, on it or on the schema it makes optional. */
function descriptionOf(schema: z.core.$ZodType | undefined): string | undefined {
  if (schema === undefined) return undefined;
  const own = z.globalRegistry.get(schema)?.description;
  if (own !== undefined || !(schema instanceof z.ZodOptional)) return own;
  return descriptionOf(schema.unwrap());
}

/** `vector[0]`, `insert[3]`: where in the arguments. */
function pathText(path: readonly PropertyKey[]): string {
  return path
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`))
    .join('');
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let at = value;
  for (const key of path) at = typeof at === 'object' && at !== null ? Reflect.get(at, key) : undefined;
  return at;
}

function article(type: string): string {
  switch (type) {
    case 'array':
      return 'an array';
    case 'object':
    case 'record':
      return 'an object';
    case 'int':
    case 'integer':
      return 'an integer';
    default:
      return `a ${type}`;
  }
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
