/**
 * The body of `POST /query`, as JSON read: `{"statement": string, "params"?: array, "cursor"?: string}`,
 * nothing else. A misspelt field (`"param"`) is refused rather than ignored, since ignoring it would run the
 * statement without the values the caller meant to bind. Checked by zod, as the MCP tools' arguments are.
 */
import * as z from 'zod';
import { FenecError } from './errors.js';
import { nearestName } from './nearest-name.js';

/** The body as a message shows it. */
export const QUERY_BODY_SHAPE = '{"statement": "...", "params": [...], "cursor": "..."}';

/** Each field, described by what it must be (the refusal of another value says so). */
const QUERY_BODY = z.strictObject({
  statement: z.string().describe('a string'),
  params: z.array(z.unknown()).optional().describe('an array of values (bound to $1, $2, …)'),
  cursor: z.string().optional().describe('a string (next_cursor of the page before)'),
});

export interface QueryBody {
  readonly statement: string;
  readonly params: readonly unknown[];
  /** next_cursor of the page before: the rows after it. */
  readonly cursor?: string;
}

const NO_PARAMS: readonly unknown[] = Object.freeze([]);
const FIELDS = Object.keys(QUERY_BODY.shape);

/** A body read as JSON, checked. @throws FenecError `bad_request` naming the field and what it must be. */
export function checkQueryBody(value: unknown): QueryBody {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FenecError(
      'bad_request',
      `the request body must be a JSON object ${QUERY_BODY_SHAPE}, not ${kind(value)}`,
    );
  }
  // The shape every well-formed body has, checked by hand: zod's parse cost 1–2 µs a request. zod still has the last
  // word on any other body, and gives the refusal's words.
  if (wellFormed(value)) return queryBody(value);
  const checked = QUERY_BODY.safeParse(value);
  if (checked.success) return queryBody(checked.data);
  const { issues } = checked.error;
  const unknown = issues.find((issue) => issue.code === 'unrecognized_keys');
  if (unknown !== undefined) {
    const key = unknown.keys[0]!;
    const near = nearestName(FIELDS, key);
    throw new FenecError(
      'bad_request',
      `unknown field ${JSON.stringify(key)} in the request body${near === undefined ? '' : ` (did you mean "${near}"?)`}; it takes "statement", "params" and "cursor"`,
    );
  }
  const field = String(issues[0]!.path[0]);
  const given: unknown = Reflect.get(value, field);
  if (given === undefined) throw new FenecError('bad_request', `"${field}" is missing; send ${QUERY_BODY_SHAPE}`);
  const schema = Object.entries(QUERY_BODY.shape).find(([name]) => name === field)?.[1];
  const wanted = schema === undefined ? undefined : z.globalRegistry.get(schema)?.description;
  throw new FenecError('bad_request', `"${field}" must be ${wanted ?? 'other'}, not ${kind(given)}`);
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  return type === 'object' ? 'an object' : `a ${type}`;
}

function queryBody({
  statement,
  params,
  cursor,
}: {
  statement: string;
  params?: unknown[];
  cursor?: string;
}): QueryBody {
  const values = params ?? NO_PARAMS;
  return cursor === undefined ? { statement, params: values } : { statement, params: values, cursor };
}

/** Whether `value` is a body QUERY_BODY takes: its fields of the types it says, and no other field. */
function wellFormed(value: object): value is { statement: string; params?: unknown[]; cursor?: string } {
  for (const key in value) if (key !== 'statement' && key !== 'params' && key !== 'cursor') return false;
  const { statement, params, cursor } = value as Record<string, unknown>;
  return (
    typeof statement === 'string' &&
    (params === undefined || Array.isArray(params)) &&
    (cursor === undefined || typeof cursor === 'string')
  );
}
