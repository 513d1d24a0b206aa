/**
 * The embedder's refusals: FenecErrors that also carry what a caller needs to answer well — the seconds for
 * Retry-After, and which input of a call the embedder refused (the caller names the row and field from it).
 */
import { FenecError, type FenecErrorOptions } from '../../shared/errors.js';

/** How much of an embedder's answer an error quotes. */
const EXCERPT_CHARS = 300;

export class EmbedderError extends FenecError {
  /** Seconds until a retry may help (embedder_unavailable only). */
  readonly retryAfterSeconds: number | undefined;
  /** The 0-based index, in the texts given to embed(), of the input the embedder refused as too long. */
  readonly input: number | undefined;

  constructor(
    code: 'embedder_unavailable' | 'embedder_failed' | 'embedder_mismatch',
    message: string,
    options: FenecErrorOptions & { retryAfterSeconds?: number; input?: number } = {},
  ) {
    super(code, message, options);
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.input = options.input;
  }
}

export function unavailable(why: string, retryAfterSeconds: number, cause?: unknown): EmbedderError {
  const seconds = Math.max(1, Math.ceil(retryAfterSeconds));
  return new EmbedderError('embedder_unavailable', `the embedder is unavailable: ${why}; nothing was written`, {
    hint: `retry after ${seconds} s`,
    retryAfterSeconds: seconds,
    cause,
  });
}

export function failed(why: string, options: { input?: number; hint?: string } = {}): EmbedderError {
  return new EmbedderError('embedder_failed', `the embedder failed: ${why}; nothing was written`, options);
}

/**
 * A short, single-line quote of what the embedder answered, with the key blanked should the embedder echo it
 * (some proxies repeat request headers in their error pages).
 */
export function excerpt(body: string, apiKey: string | undefined): string {
  let text = body.replace(/\s+/g, ' ').trim();
  if (apiKey !== undefined && apiKey !== '') text = text.replaceAll(apiKey, '[key]');
  if (text === '') return '(an empty body)';
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}
