/**
 * Every JSON answer fenec-server and fenec-router write, refusals above all: one content type, the
 * length, the headers a refusal carries (refusalHeaders: `WWW-Authenticate: Bearer` on a 401, RFC 6750), and the
 * headers the caller adds (Retry-After, Allow, Connection). An error's body is `{"error": {code, message, hint?}}`
 * from wherever it comes.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { asFenecError, type FenecError } from '../errors.js';

export const JSON_TYPE = 'application/json';

/**
 * The headers a refusal of `status` carries beyond its body, the same from both programs' reply stage: the one
 * place where they are added (a 401's challenge, RFC 6750). `req` is the refused request, for a header that names
 * where it came (the resource metadata's address, say).
 */
export function refusalHeaders(status: number, _req: IncomingMessage): OutgoingHttpHeaders | undefined {
  return status === 401 ? { 'www-authenticate': 'Bearer' } : undefined;
}

/** The headers of a JSON answer to `req` of `status` whose body is `body`: a refusal's own (above), then `extra`. */
export function jsonHeaders(
  req: IncomingMessage,
  status: number,
  body: string | Uint8Array,
  extra?: OutgoingHttpHeaders,
): OutgoingHttpHeaders {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const headers: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': length };
  if (status >= 400) Object.assign(headers, refusalHeaders(status, req));
  if (extra !== undefined) Object.assign(headers, extra);
  return headers;
}

/** Any error as a FenecError (a fault becomes `internal`, its details kept out) and its JSON body. */
export function errorBody(err: unknown): { readonly error: FenecError; readonly body: string } {
  const error = asFenecError(err);
  return { error, body: JSON.stringify(error.toJSON()) };
}

/** Writes a whole JSON answer to `req`. */
export function writeJson(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: string | Uint8Array,
  extra?: OutgoingHttpHeaders,
): void {
  res.writeHead(status, jsonHeaders(req, status, body, extra));
  res.end(body);
}

/** Writes an error's answer; the error is returned for the caller's metrics and log (a 5xx is a fault to log). */
export function writeError(
  req: IncomingMessage,
  res: ServerResponse,
  err: unknown,
  extra?: OutgoingHttpHeaders,
): FenecError {
  const { error, body } = errorBody(err);
  writeJson(req, res, error.status, body, withChallenge(error, extra));
  return error;
}

/** `extra` with the error's WWW-Authenticate challenge, when it has one. */
export function withChallenge(error: FenecError, extra?: OutgoingHttpHeaders): OutgoingHttpHeaders | undefined {
  const retry =
    error.retryAfter === undefined || extra?.['retry-after'] !== undefined
      ? extra
      : { ...extra, 'retry-after': String(error.retryAfter) };
  return error.challenge === undefined ? retry : { ...retry, 'www-authenticate': error.challenge };
}
