/**
 * The embedder's options: where it is, which model, and how patiently it is called. The CLI parses them (the
 * key from FENEC_EMBEDDER_API_KEY) and passes them down; nothing here reads the environment.
 */
import { invalidOption } from '../../shared/cli/options.js';

export interface EmbedderConfig {
  /** The API's base, up to and without `/embeddings`: `http://127.0.0.1:11434/v1`, `https://api.openai.com/v1`. */
  readonly url: string;
  /** The model named in every call (`nomic-embed-text`, `text-embedding-3-small`). */
  readonly model: string;
  /** Sent as `Authorization: Bearer …` when set. Never logged, never in an error. */
  readonly apiKey: string | undefined;
  /** Inputs in one call. Default 64 (OpenAI takes 2048, Ollama any; TEI takes 32 unless --max-client-batch-size). */
  readonly batchSize: number;
  /** Calls out at once from this node, all callers together. Default 4. */
  readonly concurrency: number;
  /** The time limit of one call, connection to last byte. Default 10 s. */
  readonly callTimeoutMs: number;
  /** Tries after the first, on 429, 5xx, a refused connection or a call past its time limit. Default 3. */
  readonly retries: number;
  /** The first back-off; each next one doubles, up to retryMaxDelayMs, with jitter. Default 250 ms. */
  readonly retryBaseDelayMs: number;
  readonly retryMaxDelayMs: number;
  /** The whole of one batch's calls and waits; no retry starts past it. Default 30 s. */
  readonly totalTimeoutMs: number;
  /** The largest answer read; a longer one is refused, never buffered whole. Default 64 MiB. */
  readonly maxResponseBytes: number;
  /** Query embeddings kept (model + text → vector), by count and by bytes of text and vector. */
  readonly cacheEntries: number;
  readonly cacheBytes: number;
}

export const EMBEDDER_DEFAULTS = {
  batchSize: 64,
  concurrency: 4,
  callTimeoutMs: 10_000,
  retries: 3,
  retryBaseDelayMs: 250,
  retryMaxDelayMs: 8_000,
  totalTimeoutMs: 30_000,
  maxResponseBytes: 64 * 1024 * 1024,
  cacheEntries: 1_000,
  cacheBytes: 32 * 1024 * 1024,
} as const satisfies Partial<EmbedderConfig>;

export type EmbedderInput = Pick<EmbedderConfig, 'url' | 'model'> & Partial<EmbedderConfig>;

/** The options with their defaults, checked: a bad one is refused naming its flag. */
export function embedderConfig(input: EmbedderInput): EmbedderConfig {
  const config: EmbedderConfig = { apiKey: undefined, ...EMBEDDER_DEFAULTS, ...input };
  let url: URL;
  try {
    url = new URL(config.url);
  } catch {
    throw invalidOption(
      '--embedder-url',
      'must be an http:// or https:// URL (the API base, e.g. http://127.0.0.1:11434/v1)',
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalidOption(
      '--embedder-url',
      'must be an http:// or https:// URL (the API base, e.g. http://127.0.0.1:11434/v1)',
    );
  if (url.username !== '' || url.password !== '' || url.search !== '')
    throw invalidOption(
      '--embedder-url',
      'must hold no user, password or query: pass the key in FENEC_EMBEDDER_API_KEY',
    );
  if (config.model.trim() === '') throw invalidOption('--embedder-model', 'must name a model');
  if (config.apiKey !== undefined && !/^[\x21-\x7e]+$/.test(config.apiKey))
    throw invalidOption('FENEC_EMBEDDER_API_KEY', 'must be printable ASCII with no spaces');
  const counts: [keyof EmbedderConfig, string, number, number][] = [
    ['batchSize', '--embedder-batch', 1, 2048],
    ['concurrency', '--embedder-concurrency', 1, 256],
    ['callTimeoutMs', '--embedder-timeout', 1, 600_000],
    ['retries', '--embedder-retries', 0, 20],
    ['retryBaseDelayMs', 'retryBaseDelayMs', 1, 600_000],
    ['retryMaxDelayMs', 'retryMaxDelayMs', 1, 600_000],
    ['totalTimeoutMs', '--embedder-total-timeout', 1, 3_600_000],
    ['maxResponseBytes', 'maxResponseBytes', 1024, 2 ** 31],
    ['cacheEntries', 'cacheEntries', 1, 10_000_000],
    ['cacheBytes', 'cacheBytes', 1024, 2 ** 40],
  ];
  for (const [key, flag, min, max] of counts) {
    const value = config[key];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max)
      throw invalidOption(flag, `must be a whole number from ${min} to ${max}`);
  }
  return Object.freeze({ ...config, url: config.url.replace(/\/+$/, '') });
}
