/**
 * The embedder a node calls to turn text into vectors, over the OpenAI embeddings API that OpenAI, Ollama, vLLM,
 * llama.cpp, TEI, LM Studio and LiteLLM all serve.
 *
 * One per node (or per `fenec mcp --file`): its concurrency bound is shared by every caller, so tenants together
 * never have more than `concurrency` calls out. It is pure async I/O: it holds no SQLite transaction and no
 * worker turn, so callers embed before a write's transaction begins.
 *
 * Texts are sent in batches of `batchSize`; each batch is retried on 429, 5xx, a refused connection and a call
 * past its time limit, with exponential back-off and jitter, never sooner than the server's Retry-After, and
 * never past `totalTimeoutMs`. A batch refused for an input past the model's length is halved until the input is
 * found, so that the caller can name its row and field.
 */
import { LRUCache } from 'lru-cache';
import pLimit from 'p-limit';
import { setTimeout as sleep } from 'node:timers/promises';
import { callEmbedder, type Outcome } from './call.js';
import type { EmbedderConfig } from './config.js';
import { EmbedderError, failed, unavailable } from './errors.js';

/** Two texts, so that the probe sees whether the count and the dimensions of an answer hold together. */
const PROBE = ['fenecdb start probe', 'a second text'];

export interface EmbedOptions {
  /** The caller's end (its statement's time limit): the embedding stops and the signal's reason is thrown. */
  readonly signal?: AbortSignal;
}

/** Told of each HTTP call made: how it ended (retried: a 429, 5xx or dropped call tried again), its texts, its time. */
export type CallObserver = (outcome: 'ok' | 'retried' | 'failed', inputs: number, seconds: number) => void;

/** What a field's vectors were made with, as the catalogue records it. */
export interface EmbeddingOrigin {
  readonly model: string;
  readonly dimension: number;
}

export class Embedder {
  readonly model: string;
  readonly dimension: number;
  private readonly config: EmbedderConfig;
  private readonly limit: ReturnType<typeof pLimit>;
  private readonly cache: LRUCache<string, Float32Array>;
  /** Told of every call (the metrics); set by whoever counts them. */
  observe: CallObserver | undefined;

  private constructor(config: EmbedderConfig, dimension: number) {
    this.config = config;
    this.model = config.model;
    this.dimension = dimension;
    this.limit = pLimit(config.concurrency);
    this.cache = new LRUCache<string, Float32Array>({
      max: config.cacheEntries,
      maxSize: config.cacheBytes,
      sizeCalculation: (vector, key) => vector.byteLength + key.length * 2,
    });
  }

  /**
   * Calls the embedder once to learn the dimension of its vectors; refuses one that does not answer, or answers
   * anything but one vector per text, all of one length, every component a number.
   */
  static async start(config: EmbedderConfig, options: EmbedOptions = {}): Promise<Embedder> {
    // The probe's calls check no dimension (it has none yet); the embedder answered is made with the one learned.
    const probe = new Embedder(config, 0);
    const vectors = await probe.limit(() => probe.batch(PROBE, 0, undefined, options.signal));
    return new Embedder(config, vectors[0]!.length);
  }

  /** An embedder whose dimension a start probe learned already (a worker thread's, given the serving thread's). */
  static ready(config: EmbedderConfig, dimension: number): Embedder {
    return new Embedder(config, dimension);
  }

  /** A query's vector when the cache has it (the array is the cache's own: read it, never change it). */
  cachedQuery(text: string): Float32Array | undefined {
    return this.cache.get(`${this.model}\n${text}`);
  }

  /** One vector per text, in the texts' order. Refused whole when any batch fails. */
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    // One batch failing stops the others: the call is refused whole, so their vectors would be thrown away.
    const stop = new AbortController();
    const signal = options.signal === undefined ? stop.signal : AbortSignal.any([options.signal, stop.signal]);
    const batches: Promise<Float32Array[]>[] = [];
    for (let start = 0; start < texts.length; start += this.config.batchSize) {
      const part = texts.slice(start, start + this.config.batchSize);
      batches.push(
        this.limit(() => {
          signal.throwIfAborted();
          return this.batch(part, start, this.dimension, signal);
        }),
      );
    }
    try {
      return (await Promise.all(batches)).flat();
    } catch (err) {
      stop.abort(err);
      await Promise.allSettled(batches);
      if (options.signal?.aborted) throw options.signal.reason;
      throw err;
    }
  }

  /**
   * A query's vector, from the cache of recent ones when the same model embedded the same text. The array is the
   * cache's own: read it, never change it.
   */
  async embedQuery(text: string, options: EmbedOptions = {}): Promise<Float32Array> {
    const key = `${this.model}\n${text}`;
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached;
    const [vector] = await this.embed([text], options);
    this.cache.set(key, vector!);
    return vector!;
  }

  /** Refuses a field whose vectors another model, or another dimension, made: they would not compare. */
  checkOrigin(field: string, origin: EmbeddingOrigin): void {
    checkOrigin(field, origin, this);
  }

  /** One batch (texts[offset…] of the caller's), retried, its too-long input found. */
  private async batch(
    texts: readonly string[],
    offset: number,
    dimension: number | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Float32Array[]> {
    const deadline = Date.now() + this.config.totalTimeoutMs;
    const first = await this.retried(texts, dimension, signal, deadline);
    if (first.kind === 'done') return first.vectors;
    // Halve the batch until the one input the model refuses is left; each half is one call.
    let lo = 0;
    let hi = texts.length;
    let why = first.why;
    let confirmed = texts.length === 1;
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      const half = await this.retried(texts.slice(lo, mid), dimension, signal, deadline);
      if (half.kind === 'too_long') {
        hi = mid;
        why = half.why;
        confirmed = hi - lo === 1;
      } else {
        lo = mid;
        confirmed = false;
      }
    }
    if (!confirmed) {
      const alone = await this.retried(texts.slice(lo, lo + 1), dimension, signal, deadline);
      if (alone.kind === 'done')
        throw failed(`a batch of ${texts.length} inputs is longer than the model takes together: ${why}`, {
          hint: 'lower --embedder-batch',
        });
      why = alone.why;
    }
    throw failed(`input ${offset + lo} is longer than the model takes: ${why}`, {
      input: offset + lo,
      hint: 'shorten the text, or split it into rows of their own',
    });
  }

  /** One call and its retries: its vectors, or the word that an input is too long; any other end is thrown. */
  private async retried(
    texts: readonly string[],
    dimension: number | undefined,
    signal: AbortSignal | undefined,
    deadline: number,
  ): Promise<Extract<Outcome, { kind: 'done' | 'too_long' }>> {
    for (let attempt = 0; ; attempt++) {
      const left = deadline - Date.now();
      const started = performance.now();
      const outcome = await callEmbedder(this.config, texts, {
        timeoutMs: Math.max(1, Math.min(this.config.callTimeoutMs, left)),
        signal,
        dimension,
      });
      this.observe?.(
        outcome.kind === 'done' ? 'ok' : outcome.kind === 'transient' ? 'retried' : 'failed',
        texts.length,
        (performance.now() - started) / 1000,
      );
      if (outcome.kind === 'done' || outcome.kind === 'too_long') return outcome;
      if (outcome.kind === 'refused') throw outcome.error;
      const wait = Math.max(outcome.retryAfterMs ?? 0, this.backoff(attempt));
      if (attempt >= this.config.retries || Date.now() + wait > deadline) throw this.givenUp(outcome, attempt, wait);
      await sleep(wait, undefined, { signal }).catch(() => {
        throw signal?.reason;
      });
    }
  }

  /** Exponential back-off with equal jitter: half the step fixed, half random, so that callers spread out. */
  private backoff(attempt: number): number {
    const step = Math.min(this.config.retryMaxDelayMs, this.config.retryBaseDelayMs * 2 ** attempt);
    return step / 2 + Math.random() * (step / 2);
  }

  private givenUp(outcome: Extract<Outcome, { kind: 'transient' }>, attempt: number, wait: number): EmbedderError {
    const tries = `${attempt + 1} ${attempt === 0 ? 'try' : 'tries'}`;
    const status = outcome.status;
    // A 500 (or 501, 505…) is the embedder failing at the task: what it said is the news. 502–504 and 429 say
    // it is away or busy, as a refused connection does.
    if (status !== undefined && status !== 429 && (status < 502 || status > 504))
      return failed(`${outcome.why} (${tries})`);
    return unavailable(`${outcome.why} (${tries})`, wait / 1000, outcome.cause);
  }
}

/** Refuses a field whose vectors another model, or another dimension, made than the server's embedder's. */
export function checkOrigin(field: string, origin: EmbeddingOrigin, server: EmbeddingOrigin): void {
  if (origin.model === server.model && origin.dimension === server.dimension) return;
  throw new EmbedderError(
    'embedder_mismatch',
    `${field} was embedded with ${origin.model} (${origin.dimension} dimensions), and this server's embedder is ${server.model} (${server.dimension} dimensions)`,
    { hint: `start the server with --embedder-model ${origin.model}, or make the field again for ${server.model}` },
  );
}
