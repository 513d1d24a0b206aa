/**
 * The bodies a server reads by hand. That of `POST /query`: `{"statement": string, "params"?: array}`, nothing else. A
 * misspelt field (`"param"`) is refused rather than ignored, since ignoring it would run the statement without the
 * values the caller meant to bind.
 */
import { FenecError } from '../../shared/errors.js';
import { describeByte, invalidUtf8At } from '../../shared/utf8.js';

export interface QueryBody {
  readonly statement: string;
  readonly params: readonly unknown[];
  /** next_cursor of the page before: the rows after it. */
  readonly cursor?: string;
}

const SHAPE = '{"statement": "...", "params": [...], "cursor": "..."}';
const NO_PARAMS: readonly unknown[] = Object.freeze([]);

/** Parses and checks a request body. @throws FenecError `bad_json` or `bad_request`. */
export function parseQueryBody(body: Buffer): QueryBody {
  if (body.length === 0) throw new FenecError('bad_json', `the request body is empty; send ${SHAPE}`);
  const notUtf8 = invalidUtf8At(body);
  if (notUtf8 >= 0) {
    throw new FenecError(
      'bad_json',
      `the request body is not UTF-8: ${describeByte(body, notUtf8)} begins no character; JSON is sent as UTF-8`,
      {
        hint: 'send the text as UTF-8 (a file in another encoding: iconv -f LATIN1 -t UTF-8 FILE)',
      },
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw new FenecError('bad_json', `the request body is not JSON (${(err as Error).message}); send ${SHAPE}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new FenecError('bad_request', `the request body must be a JSON object ${SHAPE}, not ${kind(value)}`);
  }
  const { statement, params, cursor } = value as Record<string, unknown>;
  for (const key in value) {
    if (key !== 'statement' && key !== 'params' && key !== 'cursor') {
      throw new FenecError(
        'bad_request',
        `unknown field ${JSON.stringify(key)} in the request body; it takes "statement", "params" and "cursor"`,
      );
    }
  }
  if (cursor !== undefined && typeof cursor !== 'string') {
    throw new FenecError(
      'bad_request',
      `"cursor" must be a string (next_cursor of the page before), not ${kind(cursor)}`,
    );
  }
  if (typeof statement !== 'string') {
    throw new FenecError(
      'bad_request',
      statement === undefined
        ? `"statement" is missing; send ${SHAPE}`
        : `"statement" must be a string, not ${kind(statement)}`,
    );
  }
  if (params !== undefined && !Array.isArray(params)) {
    throw new FenecError(
      'bad_request',
      `"params" must be an array of values (bound to $1, $2, …), not ${kind(params)}`,
    );
  }
  const values = params === undefined ? NO_PARAMS : (params as unknown[]);
  return cursor === undefined ? { statement, params: values } : { statement, params: values, cursor };
}

const REVOCATION_SHAPE = '{"jti": "..."} or {"sub": "..."}';

/** The body of `POST /_revocations`: one jti, or one sub. @throws FenecError `bad_json` or `bad_request`. */
export function parseRevocationBody(body: Buffer): { kind: 'jti' | 'sub'; value: string } {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new FenecError('bad_json', `the request body is not JSON; send ${REVOCATION_SHAPE}`);
  }
  const keys = value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
  const key = keys[0];
  if (keys.length !== 1 || (key !== 'jti' && key !== 'sub')) {
    throw new FenecError(
      'bad_request',
      `the request body must be ${REVOCATION_SHAPE}: one token by its jti, or every token of a sub`,
    );
  }
  const named = (value as Record<string, unknown>)[key];
  if (typeof named !== 'string') throw new FenecError('bad_request', `"${key}" must be a string, not ${kind(named)}`);
  return { kind: key, value: named };
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  const type = typeof value;
  return type === 'object' ? 'an object' : `a ${type}`;
}
