/**
 * The serving thread's side of the worker threads: which worker owns which tenant's file, the
 * requests handed to each and not yet answered, and the watchdog that stops a request past its
 * time limit.
 *
 * SQLite stops a request's statements at its deadline itself (node/storage/deadline.ts), and the
 * worker answers `statement_timeout`. What runs on past the deadline outside SQLite (JavaScript, a
 * Faiss call) cannot be interrupted: a worker still inside its request WATCHDOG_GRACE_MS after the
 * deadline is terminated and a new one takes its place: the request is answered `statement_timeout`
 * at once, SQLite rolls back what it had begun as its connection goes, and the requests that worker
 * had not begun yet — of any of its tenants — are handed to the new worker, which opens their files
 * again at their first request. The worker runs one request at a time, so the one in its running
 * slot is the only one begun.
 */
import { Worker } from 'node:worker_threads';
import { FenecError, type ErrorCode } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { ServerConfig } from '../config.js';
import { nativeBuildsInUse } from '../native-builds.js';
import { statementTimeout } from '../storage/deadline.js';
import { InlineThread, type InlineParts } from './inline-thread.js';
import {
  ONE_FILE,
  RunningSlot,
  type TenantLimits,
  type ToWorker,
  type WorkerEmbedder,
  type WorkerReply,
  type WorkerSetup,
  type WorkRequest,
} from './protocol.js';

export interface PoolOptions {
  /** Worker threads (`--workers`), all started with the pool. */
  readonly workers: number;
  readonly setup: Omit<WorkerSetup, 'slot'>;
  readonly logger: Logger;
  /**
   * Takes a reply's change (a replicated tenant's commits) as the reply arrives, before anything awaits it: the
   * changes of one tenant reach it in the order the worker committed them, whatever awaits each reply after.
   */
  readonly changed?: (tenant: string, change: Uint8Array) => Promise<number>;
  /** The most a worker's V8 heap (its old generation) may hold, in MiB (workerHeapMb); undefined: V8's default. */
  readonly maxHeapMb?: number;
  /**
   * The statements run on the serving thread (a one-file server's `--workers 0`: inline-thread.ts), with what a worker
   * thread would make for itself; `workers` is then 1. Undefined: worker threads.
   */
  readonly inline?: InlineParts;
}

/** A worker's young generation, in MiB: V8's own default (three 16 MiB semi-spaces); resourceLimits needs one. */
const YOUNG_GENERATION_MB = 48;
/** What a worker's heap holds besides the answers it builds: the open files' catalogues, plans, parse trees. */
const HEAP_BASE_MB = 512;
/**
 * A worker's heap bound for answers of up to `maxAnswerBytes` (--max-answer): the base, and room for four of the
 * largest answer, as an answer is built (its rows' JSON and then the joined text, two bytes a character at
 * worst). V8 collects harder as the heap nears the bound instead of growing: without one, a worker's heap grew
 * with every burst of large answers or bodies and stayed at its high-water mark (issue 29: a fuzzing round
 * lifted RSS from 91 to 841 MB). A statement that needs more than the bound ends its worker, as a fault does: it
 * is answered `internal` (500) and another worker takes the queued requests.
 */
export function workerHeapMb(maxAnswerBytes: number): number {
  return HEAP_BASE_MB + Math.ceil((4 * maxAnswerBytes) / 2 ** 20);
}

interface Pending {
  readonly message: ToWorker;
  readonly resolve: (reply: WorkerReply) => void;
}

/** Where a slot's messages run: a worker thread, or the serving thread itself. */
type Thread = Pick<Worker, 'postMessage' | 'terminate'> | InlineThread;

interface Slot {
  worker: Thread;
  running: RunningSlot;
  readonly pending: Map<number, Pending>;
  /** Messages of this turn of the event loop, posted together once it ends (see #post). */
  outbox: ToWorker[];
  /** Tenants it owns now (their files open there, or to be opened), to place the next one on the least loaded. */
  tenants: number;
}

/**
 * How the workers open files, from the server's config: the one file of a one-file server, or the
 * tenants' files under a tenant node's data directory (held to the tenants' quotas; serverConfig
 * refuses --read-only on a tenant node).
 */
export function workerSetup(
  config: ServerConfig,
  embedder?: WorkerEmbedder,
  workers = config.workers,
): Omit<WorkerSetup, 'slot'> {
  const where = config.where;
  return {
    file: where.kind === 'file' ? where.file : undefined,
    dataDir: where.kind === 'dataDir' ? where.dataDir : undefined,
    tenantQuotas: where.kind === 'dataDir',
    replicated: where.kind === 'dataDir' && config.nats !== undefined,
    readOnly: config.readOnly,
    httpReadOnly: config.httpReadOnly,
    sweepIntervalMs: config.sweepIntervalMs,
    busyTimeoutMs: config.busyTimeoutMs,
    policy: config.policy,
    mcp: config.mcp,
    audit: config.audit,
    otel: config.otel,
    cursorSecret: config.cursorSecret,
    nativeBuilds: nativeBuildsInUse(),
    // Each worker calls the embedder itself: --embedder-concurrency is shared among them (one each at least).
    embedder:
      embedder === undefined
        ? undefined
        : {
            ...embedder,
            config: { ...embedder.config, concurrency: Math.max(1, Math.floor(embedder.config.concurrency / workers)) },
          },
  };
}

/** A worker's refusal (a reply that is not 200), as the error it was. */
export function replyError(reply: WorkerReply): FenecError {
  const text = typeof reply.body === 'string' ? reply.body : new TextDecoder().decode(reply.body);
  const { error } = JSON.parse(text) as { error: { code: ErrorCode; message: string; hint?: string } };
  return new FenecError(error.code, error.message, { hint: error.hint });
}

const WORKER_SCRIPT = new URL('./worker-main.js', import.meta.url);
/** How often the watchdog looks at the running slots: a worker is ended at most this long after WATCHDOG_GRACE_MS. */
const WATCHDOG_MS = 25;
/**
 * How long past its deadline a request may still run before its worker is terminated. SQLite stops
 * the statements at the deadline, and the worker answers within a few milliseconds; only work outside
 * SQLite (JavaScript, a Faiss call) is still running this late.
 */
const WATCHDOG_GRACE_MS = 500;

export class WorkerPool {
  readonly #options: PoolOptions;
  readonly #slots: Slot[];
  /**
   * The worker of each tenant it owns, and the id of the last message sent for the tenant: a tenant is
   * forgotten (and its worker's count goes down) when its close is answered with nothing sent after it.
   * A message sent after the close (the file opened again before its worker closed it) keeps it on the
   * same worker, which runs the two in order: one file is never open on two workers.
   */
  readonly #owner = new Map<string, { readonly index: number; last: number }>();
  /** Each reply's change as `changed` took it: resolved once it is logged (see PoolOptions.changed). */
  readonly #logged = new WeakMap<WorkerReply, Promise<number>>();
  /** Armed while a request is handed over and not answered: an idle node wakes for nothing. */
  #watchdog: NodeJS.Timeout | undefined;
  #nextId = 1;
  /** No work taken any more (stopping). */
  #stopped = false;
  /** The workers are being terminated on purpose: an exit is no fault. */
  #ended = false;

  constructor(options: PoolOptions) {
    if (!Number.isSafeInteger(options.workers) || options.workers < 1)
      throw new FenecError('invalid_option', `--workers takes a whole number ≥ 1, not ${options.workers}`);
    if (options.inline !== undefined && options.workers !== 1)
      throw new FenecError('invalid_option', 'statements on the serving thread take one slot, not more');
    this.#options = options;
    // Every worker starts now, beside the serving thread's own start: a tenant's first request would
    // otherwise wait for a thread to start and load the storage modules (seconds on a busy machine).
    this.#slots = Array.from({ length: options.workers }, (_, index) => this.#start(index));
  }

  /** Requests handed over and not answered yet. */
  get pending(): number {
    let n = 0;
    for (const slot of this.#slots) n += slot.pending.size;
    return n;
  }

  /** Runs a request's work in the worker that owns the tenant's file. */
  run(tenant: string, limits: TenantLimits, work: WorkRequest): Promise<WorkerReply> {
    return this.#send({ kind: 'run', id: this.#nextId++, tenant, limits, ...work, body: exact(work.body) });
  }

  /** Opens the tenant's file now: a reply with status 200, or the refusal (a damaged file, a lock). */
  open(tenant: string, limits: TenantLimits): Promise<WorkerReply> {
    return this.#send({ kind: 'open', id: this.#nextId++, tenant, limits });
  }

  /** The logging of a reply's change (undefined: it had none), resolved with its sequence in the log. */
  logged(reply: WorkerReply): Promise<number> | undefined {
    return this.#logged.get(reply);
  }

  /** Copies a replicated tenant's file to `to` once the requests before are answered (a snapshot: protocol.ts). */
  snapshot(tenant: string, limits: TenantLimits, to: string): Promise<WorkerReply> {
    return this.#send({ kind: 'snapshot', id: this.#nextId++, tenant, limits, to });
  }

  /** Whether the tenant's file may be open on a worker (a message for it sent since its last close was answered). */
  holds(tenant: string): boolean {
    return this.#owner.has(tenant);
  }

  /**
   * Closes the tenant's file once the requests queued for it are answered; resolves to its last commits' logging
   * (boxed: a promise resolved with a promise would wait for it, and its failure is the caller's to read).
   */
  async close(tenant: string): Promise<{ readonly logged: Promise<number> | undefined }> {
    if (!this.#owner.has(tenant)) return { logged: undefined };
    const id = this.#nextId++;
    const reply = await this.#send({ kind: 'close', id, tenant });
    const owner = this.#owner.get(tenant);
    if (owner !== undefined && owner.last === id) {
      this.#owner.delete(tenant);
      this.#slots[owner.index]!.tenants -= 1;
    }
    return { logged: this.logged(reply) };
  }

  /**
   * Takes no more work, lets the requests under way end (each within its time limit), closes every file and ends the
   * workers.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    const closing = [...this.#owner].map(([tenant, { index }]) => {
      return this.#post(this.#slots[index]!, { kind: 'close', id: this.#nextId++, tenant });
    });
    await Promise.all(closing);
    // The spans a worker batched would go with it.
    if (this.#options.setup.otel !== undefined) {
      await Promise.all(
        this.#slots.map((slot) => this.#post(slot, { kind: 'flush', id: this.#nextId++, tenant: ONE_FILE })),
      );
    }
    clearInterval(this.#watchdog);
    this.#watchdog = undefined;
    this.#ended = true;
    await Promise.all(this.#slots.map((slot) => slot.worker.terminate()));
  }

  #send(message: ToWorker): Promise<WorkerReply> {
    if (this.#stopped)
      return Promise.reject(
        new FenecError('unavailable', 'the server is stopping', { hint: 'retry on another node, or once it is back' }),
      );
    return this.#post(this.#slotOf(message.tenant, message.id), message);
  }

  /**
   * Queues a message for the slot's worker. To a worker with nothing to do it crosses at once: waiting
   * for the turn's end would only add a pass of the event loop to the request. To a busy worker, the
   * messages of one turn of the event loop — the requests of every socket that was readable — cross in
   * one postMessage after it: a message costs the worker a wake-up and the serving thread a write to wake
   * it, and those are most of a cheap request's cost.
   */
  #post(slot: Slot, message: ToWorker): Promise<WorkerReply> {
    return new Promise<WorkerReply>((resolve) => {
      const idle = slot.pending.size === 0;
      slot.pending.set(message.id, { message, resolve });
      if (idle) slot.worker.postMessage([message]);
      else if (slot.outbox.push(message) === 1) setImmediate(this.#flush, slot);
      // unref: a watchdog never keeps the process alive on its own. The serving thread cannot be ended: no watchdog.
      if (this.#options.inline === undefined) this.#watchdog ??= setInterval(this.#check, WATCHDOG_MS).unref();
    });
  }

  readonly #flush = (slot: Slot): void => {
    const messages = slot.outbox;
    // Emptied by #replace since: its messages went to the new worker.
    if (messages.length === 0) return;
    slot.outbox = [];
    slot.worker.postMessage(messages);
  };

  /** The tenant's worker for message `id`: the one that owns it, or the one with the fewest tenants. */
  #slotOf(tenant: string, id: number): Slot {
    const owner = this.#owner.get(tenant);
    if (owner !== undefined) {
      owner.last = id;
      return this.#slots[owner.index]!;
    }
    let index = 0;
    for (let i = 1; i < this.#slots.length; i++) {
      if (this.#slots[i]!.tenants < this.#slots[index]!.tenants) index = i;
    }
    this.#owner.set(tenant, { index, last: id });
    const slot = this.#slots[index]!;
    slot.tenants += 1;
    return slot;
  }

  #start(index: number): Slot {
    const running = new RunningSlot();
    return { worker: this.#spawn(index, running), running, pending: new Map(), outbox: [], tenants: 0 };
  }

  #spawn(index: number, running: RunningSlot): Thread {
    const setup: WorkerSetup = { ...this.#options.setup, slot: running.buffer };
    const inline = this.#options.inline;
    if (inline !== undefined) {
      const thread: InlineThread = new InlineThread(setup, this.#options.logger, inline, (replies) =>
        this.#receive(index, thread, replies),
      );
      return thread;
    }
    const heap = this.#options.maxHeapMb;
    const worker = new Worker(WORKER_SCRIPT, {
      workerData: setup,
      // The young generation as V8 sizes it for a heap without a bound: derived from a bound, it is smaller, and
      // a load's statements (parse trees, rows) cost more collections.
      ...(heap === undefined
        ? {}
        : { resourceLimits: { maxOldGenerationSizeMb: heap, maxYoungGenerationSizeMb: YOUNG_GENERATION_MB } }),
    });
    worker.on('message', (replies: WorkerReply[]) => this.#receive(index, worker, replies));
    worker.on('error', (err) => this.#options.logger.error({ err, worker: index }, 'a worker thread failed'));
    worker.on('exit', (code) => {
      const slot = this.#slots[index]!;
      if (slot.worker !== worker || this.#ended) return;
      // Not replaced by the watchdog, not stopped: it died (an uncaught fault). Its running request is
      // answered as failed, the others go to a new worker.
      this.#options.logger.error({ worker: index, code }, 'a worker thread exited; starting another');
      this.#replace(index, slot, slot.running.running, internalFailure);
    });
    return worker;
  }

  /** A thread's replies: each resolves its request (a reply of a thread since replaced is no one's). */
  #receive(index: number, thread: Thread, replies: readonly WorkerReply[]): void {
    const slot = this.#slots[index]!;
    if (slot.worker !== thread) return;
    for (const reply of replies) {
      const pending = slot.pending.get(reply.id);
      if (pending === undefined) continue;
      slot.pending.delete(reply.id);
      const changed = this.#options.changed;
      if (reply.change !== undefined && changed !== undefined)
        this.#logged.set(reply, changed(pending.message.tenant, reply.change));
      pending.resolve(reply);
    }
  }

  readonly #check = (): void => {
    if (this.pending === 0) {
      clearInterval(this.#watchdog);
      this.#watchdog = undefined;
      return;
    }
    const now = Date.now();
    for (let i = 0; i < this.#slots.length; i++) {
      const slot = this.#slots[i]!;
      const overdue = slot.running.overdue(now - WATCHDOG_GRACE_MS);
      if (overdue !== 0) this.#replace(i, slot, overdue, timedOut);
    }
  };

  /** Ends a worker and starts another in its place: `culprit` answered by `answer`, the rest handed over. */
  #replace(index: number, slot: Slot, culprit: number, answer: (message: ToWorker) => WorkerReply): void {
    const old = slot.worker;
    slot.running = new RunningSlot();
    slot.worker = this.#spawn(index, slot.running);
    void old.terminate();
    const stopped = slot.pending.get(culprit);
    if (stopped !== undefined) {
      slot.pending.delete(culprit);
      stopped.resolve(answer(stopped.message));
    }
    // Every message not answered, those of the outbox among them: the outbox is the old worker's.
    slot.outbox = [];
    slot.worker.postMessage([...slot.pending.values()].map((pending) => pending.message));
  }
}

/**
 * The body as the message should hold it. Shared memory crosses as it is; a view of a larger buffer
 * (Buffer.concat's pool) is copied to its own, which a clone would copy whole.
 */
function exact(body: Uint8Array): Uint8Array {
  return body.buffer instanceof SharedArrayBuffer || body.byteLength === body.buffer.byteLength
    ? body
    : new Uint8Array(body);
}

function timedOut(message: ToWorker): WorkerReply {
  const limit = 'limits' in message ? message.limits.statementTimeoutMs : 0;
  const error = statementTimeout(limit);
  return { id: message.id, status: error.status, body: JSON.stringify(error.toJSON()), ms: limit };
}

function internalFailure(message: ToWorker): WorkerReply {
  const error = new FenecError('internal', 'the worker thread running the request failed; the request changed nothing');
  return { id: message.id, status: error.status, body: JSON.stringify(error.toJSON()), ms: 0 };
}
