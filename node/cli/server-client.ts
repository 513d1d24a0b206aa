/**
 * `fenec`'s way to a server's /query: the URL a user gives, the POST with its token, and the answer
 * as JSON (a refusal's too), or `unavailable` when no fenecdb server answers.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { FenecError } from '../../shared/errors.js';
import { usageError } from '../../shared/cli/command-line.js';
import { INTERIM_HEADER } from '../http/request.js';

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
 * given as bytes before it sends it, and `fenec import` sends a megabyte a batch. `committed`, when given,
 * hears a replicated node's `102 Processing`: the write is in the tenant's file, its answer waits for the log.
 *
 * @throws FenecError `unavailable` when no fenecdb server answers at `url`.
 */
export function postQuery(
  url: URL,
  body: string | Buffer,
  token: string | undefined,
  committed?: () => void,
  idleMs = ANSWER_IDLE_MS,
): Promise<Outcome> {
  const payload = typeof body === 'string' ? Buffer.from(body) : body;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(payload.length),
  };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (committed !== undefined) headers[INTERIM_HEADER] = 'committed';
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
    if (committed !== undefined) {
      sent.on('information', (info) => {
        if (info.statusCode === 102) committed();
      });
    }
    sent.on('error', unavailable);
    // A server that takes the request and never answers would hold the command for good.
    sent.setTimeout(idleMs, () => sent.destroy(new Error(`no answer in ${idleMs / 1000} s`)));
    sent.end(payload);
  });
}

/**
 * Requests sent in order, each once the one before is committed (its `102 Processing`, or its answer from a server
 * that sends none), with at most two unanswered: a replicated batch's ack is waited for while the next is written,
 * and the file still takes the batches in the order they were sent. None is sent after one that failed (its answer
 * rejected).
 */
export class OrderedRequests<T> {
  #last: { readonly committed: Promise<boolean>; readonly done: Promise<T> } | undefined;
  /** Whether the request before the last one succeeded (resolved once it is answered). */
  #beforeLast: Promise<boolean> = Promise.resolve(true);

  /**
   * Sends once the requests before allow it (`send` is given the callback its request's 102 calls); resolves, once
   * sent, to a box holding its answer (boxed: it must not be awaited by the resolution itself), or to undefined when
   * it was not sent because one before it failed.
   */
  async push(send: (committed: () => void) => Promise<T>): Promise<{ readonly done: Promise<T> } | undefined> {
    const last = this.#last;
    if (!(await this.#beforeLast) || (last !== undefined && !(await last.committed))) return undefined;
    let commit!: (ok: boolean) => void;
    const committed = new Promise<boolean>((resolve) => (commit = resolve));
    const done = send(() => commit(true));
    // Answered, a request is as committed as it will be (a first resolution stands: a 102 came before a failure).
    done.then(
      () => commit(true),
      () => commit(false),
    );
    this.#beforeLast =
      last === undefined
        ? Promise.resolve(true)
        : last.done.then(
            () => true,
            () => false,
          );
    this.#last = { committed, done };
    return { done };
  }
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
