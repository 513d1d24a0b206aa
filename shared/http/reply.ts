/**
 * Every JSON answer fenec-server and fenec-router write, refusals above all: one content type, the
 * length, `WWW-Authenticate: Bearer` on a 401 (RFC 6750), and the headers the caller adds (Retry-After,
 * Allow, Connection). An error's body is `{"error": {code, message, hint?}}` from wherever it comes.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { asFenecError, type FenecError } from '../errors.js';

export const JSON_TYPE = 'application/json';

/** The headers of a JSON answer of `status` whose body is `body`, then `extra`. */
export function jsonHeaders(
  status: number,
  body: string | Uint8Array,
  extra?: OutgoingHttpHeaders,
): OutgoingHttpHeaders {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const headers: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': length };
  if (status === 401) headers['www-authenticate'] = 'Bearer';
  if (extra !== undefined) Object.assign(headers, extra);
  return headers;
}

/** Any error as a FenecError (a fault becomes `internal`, its details kept out) and its JSON body. */
export function errorBody(err: unknown): { readonly error: FenecError; readonly body: string } {
  const error = asFenecError(err);
  return { error, body: JSON.stringify(error.toJSON()) };
}

/** Writes a whole JSON answer. */
export function writeJson(
  res: ServerResponse,
  status: number,
  body: string | Uint8Array,
  extra?: OutgoingHttpHeaders,
): void {
  res.writeHead(status, jsonHeaders(status, body, extra));
  res.end(body);
}

/** Writes an error's answer; the error is returned for the caller's metrics and log (a 5xx is a fault to log). */
export function writeError(res: ServerResponse, err: unknown, extra?: OutgoingHttpHeaders): FenecError {
  const { error, body } = errorBody(err);
  writeJson(res, error.status, body, withChallenge(error, extra));
  return error;
}

/** `extra` with the error's WWW-Authenticate challenge, when it has one. */
export function withChallenge(error: FenecError, extra?: OutgoingHttpHeaders): OutgoingHttpHeaders | undefined {
  return error.challenge === undefined ? extra : { ...extra, 'www-authenticate': error.challenge };
}
