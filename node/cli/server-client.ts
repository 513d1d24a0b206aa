/**
 * `fenec`'s way to a server's /query: the URL a user gives, the POST with its token, and the answer
 * as JSON (a refusal's too), or `unavailable` when no fenecdb server answers.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { FenecError } from '../../shared/errors.js';
import { usageError } from '../../shared/cli/command-line.js';

const NAME = 'fenec';

/** An answer, or a refusal as its error JSON. */
export interface Outcome {
  readonly ok: boolean;
  readonly status?: number;
  readonly body: unknown;
}

/** A base URL gets /query appended (keeping any path prefix, as /t/<tenant>); a /query URL is kept. */
export function queryUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    usageError(NAME, `--url takes a URL such as http://127.0.0.1:8080, not ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    usageError(NAME, `--url takes an http or https URL, not ${text}`);
  if (!url.pathname.endsWith('/query')) url.pathname = `${url.pathname.replace(/\/$/, '')}/query`;
  return url;
}

/**
 * POSTs a /query body (JSON text, or its bytes). Through node:http, not fetch: fetch copies a body
 * given as bytes before it sends it, and `fenec import` sends a megabyte a batch.
 *
 * @throws FenecError `unavailable` when no fenecdb server answers at `url`.
 */
export function postQuery(
  url: URL,
  body: string | Buffer,
  token: string | undefined,
  idleMs = ANSWER_IDLE_MS,
): Promise<Outcome> {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(payload.length),
  };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const secure = url.protocol === 'https:';
  return new Promise((resolve, reject) => {
    const unavailable = (err: NodeJS.ErrnoException) =>
      reject(new FenecError('unavailable', `cannot reach ${url.href}: ${err.code ?? err.message}`));
    const sent = (secure ? https : http).request(
      url,
      { method: 'POST', headers, agent: secure ? HTTPS_AGENT : HTTP_AGENT },
      (response) => {
        const parts: Buffer[] = [];
        response.on('data', (part: Buffer) => parts.push(part));
        response.on('error', unavailable);
        response.on('end', () => {
          const status = response.statusCode ?? 0;
          try {
            resolve({
              ok: status >= 200 && status < 300,
              status,
              body: JSON.parse(Buffer.concat(parts).toString('utf8')),
            });
          } catch {
            reject(
              new FenecError('unavailable', `${url.href} answered ${status} with no JSON; is it a fenecdb server?`),
            );
          }
        });
      },
    );
    sent.on('error', unavailable);
    // A server that takes the request and never answers would hold the command for good.
    sent.setTimeout(idleMs, () => sent.destroy(new Error(`no answer in ${idleMs / 1000} s`)));
    sent.end(payload);
  });
}

/** How long a request may go without a byte from the server (fetch's undici waited as long). */
const ANSWER_IDLE_MS = 300_000;

/** Connections kept between a command's requests (Node unrefs an idle one: it never holds the process). */
const HTTP_AGENT = new http.Agent({ keepAlive: true });
const HTTPS_AGENT = new https.Agent({ keepAlive: true });

/** The bearer token of a command that reaches a server: --token, else $FENEC_TOKEN. */
export function tokenOf(option: string | undefined): string | undefined {
  return option ?? (process.env.FENEC_TOKEN || undefined);
}
