/**
 * A worker's requests whose statements want texts embedded. A statement runs in the worker's turn, synchronously, and
 * an embedder call is network I/O that may take seconds: so a statement that lacks vectors stops before it writes
 * (node/embedder/round.ts), its request leaves the turn, and the call goes out here while the worker serves the other
 * tenants' requests. When the vectors are in, the request joins the fair queue again in its tenant's place and runs
 * through, with its first pass's deadline: the embedder's time is inside the statement's time limit.
 *
 * Each worker has its own embedder (its share of --embedder-concurrency, its own cache of query embeddings: a tenant's
 * requests all go to one worker, so its repeated searches find their embeddings there).
 */
import { FenecError } from '../../shared/errors.js';
import { Embedder } from '../embedder/embedder.js';
import { EmbedderError } from '../embedder/errors.js';
import { EmbeddingRound, fill, MAX_PASSES, type EmbedderState } from '../embedder/round.js';
import { EmbeddingLoad, LOAD_PASSES } from '../embedder/load.js';
import { committedBefore } from '../query/execute/load-rows.js';
import type { EmbedderCall, QuotaKind, ToWorker, WorkerEmbedder } from './protocol.js';

type Message = Extract<ToWorker, { kind: 'run' | 'open' }>;

/** A request's passes: its round of embeddings, its deadline, its worker time, what its answer carries. */
export interface Pass {
  readonly round: EmbeddingRound;
  deadline: number | undefined;
  ms: number;
  passes: number;
  retryAfter?: number;
  quota?: QuotaKind;
}

/**
 * A tenant's embedded texts: `rate` a second flow in, as many banked. A request takes all its texts at once or none;
 * one that needs more than the bank holds goes when the bank is full, and leaves a debt.
 */
export class EmbedBucket {
  #level: number;
  #last: number;

  constructor(
    readonly rate: number,
    now = performance.now(),
  ) {
    this.#level = rate;
    this.#last = now;
  }

  /** Takes `count` texts: 0 when taken, else the seconds until they may be (Retry-After). */
  take(count: number, now = performance.now()): number {
    if (this.rate === 0 || count === 0) return 0;
    this.#level = Math.min(this.rate, this.#level + ((now - this.#last) / 1000) * this.rate);
    this.#last = now;
    const needed = Math.min(count, this.rate);
    if (this.#level < needed) return Math.max(1, Math.ceil((needed - this.#level) / this.rate));
    this.#level -= count;
    return 0;
  }
}

export class EmbeddingPasses {
  readonly #setup: WorkerEmbedder | undefined;
  /** Puts a request back in the queue, its vectors in. */
  readonly #again: (message: Message) => void;
  /** Answers a request whose embedding failed its refusal. */
  readonly #answer: (message: Message, err: unknown) => void;
  readonly #passes = new WeakMap<object, Pass>();
  #embedder: Embedder | undefined;
  /** The probe under way (a lazy start), shared by the requests that wait for it. */
  #probing: Promise<Embedder> | undefined;
  /** Calls made since the last answer: the next answer carries them to the serving thread's metrics. */
  #calls: EmbedderCall[] = [];

  constructor(
    setup: WorkerEmbedder | undefined,
    again: (message: Message) => void,
    answer: (message: Message, err: unknown) => void,
  ) {
    this.#setup = setup;
    this.#again = again;
    this.#answer = answer;
    if (setup?.dimension !== undefined) this.#embedder = this.#observed(Embedder.ready(setup.config, setup.dimension));
  }

  /** The request's passes, begun at its first. */
  of(message: object): Pass {
    let pass = this.#passes.get(message);
    if (pass === undefined) {
      pass = { round: new EmbeddingRound(this.#state()), deadline: undefined, ms: 0, passes: 0 };
      this.#passes.set(message, pass);
    }
    return pass;
  }

  /** The request is answered: its passes are over (a load's batches still out are called off). */
  done(message: object): Pass | undefined {
    const pass = this.#passes.get(message);
    this.#passes.delete(message);
    pass?.round.load?.stop();
    return pass;
  }

  /** The calls to report with the next answer. */
  calls(): EmbedderCall[] | undefined {
    if (this.#calls.length === 0) return undefined;
    const calls = this.#calls;
    this.#calls = [];
    return calls;
  }

  /** Embeds what the pass wants, with no turn held; then the request runs again, or is answered its refusal. */
  embed(message: Message, pass: Pass, bucket: EmbedBucket | undefined): void {
    pass.passes += 1;
    this.#fill(pass, bucket, message.limits.statementTimeoutMs).then(
      () => this.#again(message),
      (err: unknown) => this.#answer(message, this.#refusalOf(err, pass, message)),
    );
  }

  async #fill(pass: Pass, bucket: EmbedBucket | undefined, limitMs: number): Promise<void> {
    if (pass.round.load !== undefined) return this.#nextChunk(pass, limitMs);
    if (pass.passes > MAX_PASSES)
      throw new FenecError('internal', `the request still wanted texts embedded after ${MAX_PASSES} passes`);
    const left = (pass.deadline ?? Date.now()) - Date.now();
    if (left <= 0) throw timeout();
    const signal = AbortSignal.timeout(left);
    const round = pass.round;
    const embedder = await this.#ready(signal);
    if (round.wantsProbe) round.probed({ model: embedder.model, dimension: embedder.dimension });
    // Queries the cache holds are not calls: only what goes out counts against the tenant's quota.
    const count = round.wanted.filter((w) => !w.query || embedder.cachedQuery(w.text) === undefined).length;
    const wait = bucket?.take(count) ?? 0;
    if (wait > 0) {
      pass.retryAfter = wait;
      pass.quota = 'embed';
      throw new FenecError(
        'quota_exceeded',
        `the statement needs ${count} texts embedded, past the tenant's ${bucket!.rate} a second; nothing was written`,
        { hint: `retry after ${wait} s; send fewer rows at once, or raise the tenant's embedRate (PUT /t/<tenant>)` },
      );
    }
    const documents = round.wanted.filter((w) => !w.query);
    const { batchSize, concurrency } = this.#setup!.config;
    if (round.bulk && documents.length > batchSize && documents.length === round.wanted.length) {
      // Many rows to embed: they are written a chunk at a time while the next chunks are embedded (load.ts).
      round.embedded += count;
      round.load = new EmbeddingLoad(embedder, round, documents, { batchSize, window: concurrency });
      return this.#nextChunk(pass, limitMs);
    }
    await fill(embedder, round, { signal });
    round.embedded += count;
  }

  /**
   * Waits for the next chunk of a load's vectors. Each chunk has the statement's time limit of its own, for its
   * embedding and its write: a load of many rows is not held to the limit of one statement.
   */
  async #nextChunk(pass: Pass, limitMs: number): Promise<void> {
    const load = pass.round.load!;
    pass.round.forget();
    if (pass.passes > MAX_PASSES + LOAD_PASSES)
      throw new FenecError('internal', `the load still wanted texts embedded after ${pass.passes} passes`);
    pass.deadline = undefined;
    const signal = AbortSignal.timeout(limitMs);
    try {
      await load.next(signal);
    } catch (err) {
      throw signal.aborted && err === signal.reason ? timeout(limitMs) : err;
    }
  }

  /** The worker's embedder, for work of its own (a backfill); probed first when the start probe failed. */
  embedder(signal: AbortSignal): Promise<Embedder> {
    return this.#ready(signal);
  }

  /** The embedder, probed first when the start probe failed (--embedder-lazy). */
  #ready(signal: AbortSignal): Promise<Embedder> {
    if (this.#embedder !== undefined) return Promise.resolve(this.#embedder);
    const setup = this.#setup!;
    this.#probing ??= Embedder.start(setup.config, { signal }).then(
      (embedder) => {
        this.#probing = undefined;
        return (this.#embedder = this.#observed(embedder));
      },
      (err: unknown) => {
        this.#probing = undefined;
        throw err;
      },
    );
    return this.#probing;
  }

  #observed(embedder: Embedder): Embedder {
    embedder.observe = (outcome, inputs, seconds) => this.#calls.push({ outcome, inputs, seconds });
    return embedder;
  }

  #state(): EmbedderState {
    if (this.#setup === undefined) return { kind: 'none' };
    if (this.#embedder === undefined) return { kind: 'unprobed', model: this.#setup.config.model };
    return { kind: 'ready', model: this.#embedder.model, dimension: this.#embedder.dimension };
  }

  /** A failed embedding as its refusal: the time limit as statement_timeout, the embedder's Retry-After kept. */
  #refusalOf(err: unknown, pass: Pass, message: Message): unknown {
    if (err instanceof EmbedderError && err.retryAfterSeconds !== undefined) pass.retryAfter = err.retryAfterSeconds;
    const load = pass.round.load;
    // A load refused part way says what it committed before (its refused batch and those after are not written).
    if (load !== undefined) return committedBefore(err, load.committed, 0);
    if (err instanceof FenecError) return err;
    if (pass.deadline !== undefined && Date.now() >= pass.deadline) return timeout(message.limits.statementTimeoutMs);
    return err;
  }
}

function timeout(limitMs?: number): FenecError {
  return new FenecError(
    'statement_timeout',
    `the statement ran past its time limit${limitMs === undefined ? '' : ` of ${limitMs} ms`} while its texts were embedded; nothing was written`,
    { hint: 'retry; a slow embedder, or fewer rows at once, or a longer --statement-timeout' },
  );
}
