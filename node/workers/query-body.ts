/**
 * The bodies a server reads by hand. That of `POST /query` is read here as JSON and checked by shared/query-body.ts.
 */
import { FenecError } from '../../shared/errors.js';
import { checkQueryBody, QUERY_BODY_SHAPE as SHAPE, type QueryBody } from '../../shared/query-body.js';
import { describeByte, invalidUtf8At } from '../../shared/utf8.js';

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
  return checkQueryBody(value);
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
