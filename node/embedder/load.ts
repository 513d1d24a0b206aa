/**
 * A bulk write's embeddings (`insert into C $1` of many rows into a collection with an `@embed` field), made while
 * its earlier rows commit: the texts go to the embedder a batch at a time, at most `window` batches out at once (so
 * that a load neither queues the whole of itself ahead of other tenants' calls nor holds more vectors than its
 * window), and each batch's vectors reach the round as soon as every batch before it is in. The request runs again
 * whenever a chunk of rows is ready, writes those rows in a transaction of their own, and waits for the next chunk:
 * the embedder works on batch n+1 while the rows of batch n are written.
 *
 * A batch whose embedding fails ends the load: the rows of that batch and of every later one are not written, and the
 * refusal says how many rows were committed before it.
 */
import type { Embedder } from './embedder.js';
import { EmbedderError } from './errors.js';

/** A text the load embeds, as the round notes it (round.ts's WantedText): the row and field a refusal names. */
export interface LoadText {
  readonly text: string;
  readonly query: boolean;
  readonly label: string;
}

/** Where the vectors go: the request's round, which the load's passes read them from. */
export interface VectorSink {
  give(texts: readonly LoadText[], vectors: readonly Float32Array[]): void;
}

/** How many transactions a load's rows are written in at most (more texts than this many batches: bigger chunks). */
const CHUNKS = 8;

/** The passes a load takes at most past a statement's own: a chunk each, and one for rows the last chunk left. */
export const LOAD_PASSES = 2 * CHUNKS + 2;

export interface LoadOptions {
  /** Texts in one embedder call (--embedder-batch). */
  readonly batchSize: number;
  /** Batches out at once for this load. */
  readonly window: number;
}

export class EmbeddingLoad {
  /** Rows of the parameter's list written so far, and their ids. */
  committed = 0;
  readonly ids: number[] = [];
  /** A chunk is being written: the statement runs over its rows as any insert (load-rows.ts). */
  writing = false;
  readonly #texts: readonly LoadText[];
  readonly #round: VectorSink;
  readonly #embedder: Embedder;
  readonly #options: LoadOptions;
  /** Texts the round has the vectors of: every text before this one. */
  #done = 0;
  /** #done when the request last ran. */
  #seen = 0;
  readonly #chunk: number;
  /** Batches whose vectors are in but wait for an earlier batch, by their first text. */
  readonly #early = new Map<number, Float32Array[]>();
  #next = 0;
  #out = 0;
  #failure: { readonly error: unknown } | undefined;
  readonly #stop = new AbortController();
  #wake: (() => void) | undefined;

  constructor(embedder: Embedder, round: VectorSink, texts: readonly LoadText[], options: LoadOptions) {
    this.#embedder = embedder;
    this.#round = round;
    this.#texts = texts;
    this.#options = options;
    this.#chunk = Math.max(options.batchSize, Math.ceil(texts.length / CHUNKS));
    this.#send();
  }

  /** The texts of the load, and how many have their vectors. */
  get texts(): number {
    return this.#texts.length;
  }

  get embedded(): number {
    return this.#done;
  }

  /**
   * Resolves when a chunk more of texts has its vectors since the request last ran (or the last of them), rejects with
   * the failure of a batch; `signal` ends the wait (the time limit of one chunk).
   */
  async next(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (this.#failure !== undefined) throw this.#failure.error;
      if (this.#done === this.#texts.length || this.#done - this.#seen >= this.#chunk) {
        this.#seen = this.#done;
        return;
      }
      signal.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(signal.reason as Error);
        signal.addEventListener('abort', onAbort, { once: true });
        this.#wake = () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
      });
    }
  }

  /** The request is answered (or refused): the batches still out are called off. */
  stop(): void {
    this.#stop.abort(new Error('the load ended'));
  }

  /** Sends batches until the window is full. */
  #send(): void {
    const { batchSize, window } = this.#options;
    while (this.#failure === undefined && this.#out < window && this.#next < this.#texts.length) {
      const start = this.#next;
      const batch = this.#texts.slice(start, start + batchSize);
      this.#next += batch.length;
      this.#out += 1;
      this.#embedder
        .embed(
          batch.map((w) => w.text),
          { signal: this.#stop.signal },
        )
        .then(
          (vectors) => {
            this.#out -= 1;
            this.#early.set(start, vectors);
            this.#advance();
            this.#send();
          },
          (error: unknown) => {
            this.#out -= 1;
            // The first failure is the load's; what the batches called off after it say is not news.
            this.#failure ??= { error: labelled(error, batch) };
            this.#stop.abort(error);
            this.#wakeUp();
          },
        );
    }
  }

  /** Gives the round the vectors of every batch now in order, from the first not given yet. */
  #advance(): void {
    for (let vectors = this.#early.get(this.#done); vectors !== undefined; vectors = this.#early.get(this.#done)) {
      this.#early.delete(this.#done);
      this.#round.give(this.#texts.slice(this.#done, this.#done + vectors.length), vectors);
      this.#done += vectors.length;
    }
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/** An input refused as too long, named by its row and field (the embedder names it by its place in the batch). */
function labelled(error: unknown, batch: readonly LoadText[]): unknown {
  if (!(error instanceof EmbedderError) || error.input === undefined || batch[error.input] === undefined) return error;
  return new EmbedderError(error.code as 'embedder_failed', `${batch[error.input]!.label}: ${error.message}`, {
    hint: error.hint,
  });
}
