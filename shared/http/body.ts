/**
 * Small request bodies read whole, for the routes that take a little JSON (a tenant's quotas or
 * policy, a tenant move) and for a refused MCP call. The hot routes' bodies (/query, /_mcp) are
 * node/http/handler.ts's: read without a promise per request, and refused at Content-Length.
 */
import type * as http from 'node:http';
import { FenecError } from '../errors.js';

/**
 * A body's text, or undefined past `limit` bytes: the rest is read and dropped, so that the refusal
 * is answered on a connection still in step. Rejects when the request fails before its end.
 */
export function readBody(req: http.IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => resolve(size > limit ? undefined : Buffer.concat(chunks).toString('utf8')));
  });
}

/**
 * The refusal of a body sent compressed (`Content-Encoding: gzip`, …), or undefined. Bodies are read as
 * the bytes they are: without this a gzip body read as JSON was refused as "not JSON", which sends its
 * sender looking in the wrong place.
 */
export function encodingRefusal(req: http.IncomingMessage): FenecError | undefined {
  const encoding = req.headers['content-encoding'];
  if (encoding === undefined || encoding.trim().toLowerCase() === 'identity') return undefined;
  return new FenecError(
    'unsupported_encoding',
    `the request body is sent with Content-Encoding ${JSON.stringify(encoding.slice(0, 100))}; this server takes bodies uncompressed`,
    {
      hint: 'send the body as it is, without a Content-Encoding header',
    },
  );
}

/** What a route tells of a body it refuses: one past its limit, one that is not JSON. */
export interface BodyRefusals {
  readonly tooLarge: string;
  readonly notJson: string;
}

/**
 * A small JSON body, undefined when it is empty.
 *
 * @throws FenecError `unsupported_encoding` for a compressed one, `payload_too_large` past `limit` bytes,
 *   `bad_json` for one that does not parse.
 */
export async function readJson(
  req: http.IncomingMessage,
  limit: number,
  refusals: BodyRefusals = { tooLarge: `the body is larger than ${limit} bytes`, notJson: 'the body is not JSON' },
): Promise<unknown> {
  const encoding = encodingRefusal(req);
  if (encoding !== undefined) {
    req.resume();
    throw encoding;
  }
  const body = await readBody(req, limit);
  if (body === undefined) throw new FenecError('payload_too_large', refusals.tooLarge);
  const text = body.trim();
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new FenecError('bad_json', refusals.notJson);
  }
}
