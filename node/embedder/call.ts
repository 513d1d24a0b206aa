/**
 * One call to the embedder: `POST <url>/embeddings` with `{"model", "input": [...]}`, its time limit, its answer
 * read up to a byte cap and sorted into what the retry loop (client.ts) does next: done, try again (429, 5xx, a
 * refused or dropped connection, the time limit), an input too long, or a refusal that no retry mends.
 */
import { readAnswer, errorMessage, saysTooLong } from './answer.js';
import type { EmbedderConfig } from './config.js';
import { failed, excerpt, type EmbedderError } from './errors.js';

/** What an error body is read to, for its excerpt. */
const ERROR_BODY_BYTES = 64 * 1024;

export type Outcome =
  | { readonly kind: 'done'; readonly vectors: Float32Array[] }
  /** Worth another try; retryAfterMs is the server's Retry-After when it sent one. */
  | {
      readonly kind: 'transient';
      readonly why: string;
      readonly status: number | undefined;
      readonly retryAfterMs: number | undefined;
      readonly cause?: unknown;
    }
  | { readonly kind: 'too_long'; readonly why: string }
  | { readonly kind: 'refused'; readonly error: EmbedderError };

export interface CallOptions {
  readonly timeoutMs: number;
  /** The caller's own end (a statement's time limit): its reason is thrown as it is. */
  readonly signal: AbortSignal | undefined;
  /** The dimension every vector must have, once the start probe has learned it. */
  readonly dimension: number | undefined;
}

export async function callEmbedder(
  config: EmbedderConfig,
  texts: readonly string[],
  options: CallOptions,
): Promise<Outcome> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal === undefined ? timeout : AbortSignal.any([options.signal, timeout]);
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (config.apiKey !== undefined) headers.authorization = `Bearer ${config.apiKey}`;
  const where = `${config.url}/embeddings`;
  try {
    const response = await fetch(where, {
      method: 'POST',
      headers,
      body: JSON.stringify({ model: config.model, input: texts }),
      signal,
      // A redirect would carry the key to wherever it points; an embeddings API does not move.
      redirect: 'error',
    });
    if (response.status === 200) {
      const text = await readCapped(response, config.maxResponseBytes);
      if (text === undefined)
        return refused(
          failed(`its answer is larger than ${config.maxResponseBytes} bytes`, { hint: 'lower --embedder-batch' }),
        );
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return refused(failed(`its answer is not JSON: ${excerpt(text, config.apiKey)}`));
      }
      const vectors = readAnswer(body, texts.length, options.dimension);
      return Array.isArray(vectors) ? { kind: 'done', vectors } : refused(vectors);
    }
    const text = (await readCapped(response, ERROR_BODY_BYTES, true)) ?? '';
    const said = excerpt(errorMessage(text), config.apiKey);
    const status = response.status;
    if (status === 429 || status >= 500)
      return {
        kind: 'transient',
        why: `${where} answered ${status}: ${said}`,
        status,
        retryAfterMs: retryAfter(response.headers),
      };
    if (saysTooLong(status, errorMessage(text))) return { kind: 'too_long', why: said };
    // What a refusal of the key says may quote part of it (OpenAI's does): it is not repeated.
    if (status === 401 || status === 403)
      return refused(failed(`${where} refused the key (${status})`, { hint: hintFor(status) }));
    return refused(failed(`${where} answered ${status}: ${said}`, { hint: hintFor(status) }));
  } catch (err) {
    if (options.signal?.aborted) throw options.signal.reason;
    if (timeout.aborted)
      return {
        kind: 'transient',
        why: `no answer from ${where} within ${options.timeoutMs} ms`,
        status: undefined,
        retryAfterMs: undefined,
        cause: err,
      };
    return {
      kind: 'transient',
      why: `cannot reach ${where} (${networkReason(err)})`,
      status: undefined,
      retryAfterMs: undefined,
      cause: err,
    };
  }
}

function refused(error: EmbedderError): Outcome {
  return { kind: 'refused', error };
}

function hintFor(status: number): string | undefined {
  if (status === 401 || status === 403) return 'check the key in FENEC_EMBEDDER_API_KEY';
  if (status === 404)
    return '--embedder-url is the API base that /embeddings is appended to (e.g. http://127.0.0.1:11434/v1), and --embedder-model must name a model the embedder serves';
  return undefined;
}

/** The system's word for a failed connection (ECONNREFUSED, ECONNRESET, ENOTFOUND…), never a header or the key. */
function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === 'string' ? cause.code : 'the connection failed';
}

/**
 * The body as text, or undefined past max bytes; a body is never held whole before its size is known. With
 * truncate, the first max bytes are kept instead (an error page is only quoted).
 */
async function readCapped(response: Response, max: number, truncate = false): Promise<string | undefined> {
  const declared = Number(response.headers.get('content-length'));
  if (!truncate && Number.isFinite(declared) && declared > max) {
    await response.body?.cancel();
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body !== null) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        await reader.cancel();
        if (!truncate) return undefined;
        chunks.push(value.subarray(0, value.byteLength - (size - max)));
        break;
      }
      chunks.push(value);
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Retry-After in milliseconds: seconds or an HTTP date (RFC 9110 §10.2.3); also OpenAI's retry-after-ms. */
export function retryAfter(headers: Headers, now = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms.trim());
  const value = headers.get('retry-after')?.trim();
  if (value === undefined || value === '') return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
