/**
 * A worker thread's side: the files it owns (one per tenant, opened at the tenant's first request,
 * with its Faiss indexes), and the requests it was handed, taken from a fair queue one at a time.
 *
 * Before each request it writes the request's id and, once the tenant's file is open, its deadline
 * into the running slot; SQLite stops the request's statements at the deadline, and the serving
 * thread reads the slot to terminate this thread if the request runs on well past it.
 */
import * as fs from 'node:fs';
import { context, propagation, ROOT_CONTEXT } from '@opentelemetry/api';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Audit } from '../../shared/audit.js';
import { parsePolicy } from '../../shared/auth/policy.js';
import type { Logger } from '../../shared/logger.js';
import { FenecDatabase } from '../database.js';
import type { mcpEndpoint } from '../mcp/serve-mcp.js';
import { Revocations } from '../storage/revocations.js';
import { WalTail } from '../storage/wal-tail.js';
import { QuotaExecutor } from './quota-executor.js';
import { FairQueue } from './fair-queue.js';
import type { QuotaKind, TenantLimits, ToolOutcomeLabel, ToWorker, WorkerReply, WorkerSetup } from './protocol.js';
import { RunningSlot } from './protocol.js';
import { refusal, RequestRunner, type Answered } from './request-runner.js';
import { EmbedBucket, EmbeddingPasses, type Pass } from './embedding-passes.js';
import { Backfills } from './backfills.js';
import { IdleCollector } from './idle-collect.js';

interface OpenTenant {
  readonly db: FenecDatabase;
  /** The file's revoked tokens (its own connection, beside the database's). */
  readonly revocations: Revocations;
  readonly runner: RequestRunner;
  /** Tool calls of the request under way, reported with its answer. */
  readonly tools: [string, ToolOutcomeLabel][];
  /** Quota refusals of the request under way, reported with its answer. */
  readonly refusals: QuotaKind[];
  /** The tenant's texts embedded a second (its embedRate quota). */
  readonly embeds: EmbedBucket;
  /** Its commits, taken after each message (a replicated tenant). */
  readonly tail: WalTail | undefined;
}

/** What is queued for a tenant: everything but a flush, which is the thread's. */
export type TenantMessage = Exclude<ToWorker, { kind: 'flush' }>;

/** How long a turn of the queue lasts at most before messages that came meanwhile join it. */
const TURN_MS = 1;

/** Answers past this size cross to the serving thread as bytes moved, not copied. */
const TRANSFER_BYTES = 64 * 1024;

/** A replicated file's write-ahead log is checkpointed once this much of it was taken. */
const CHECKPOINT_BYTES = 4 * 1024 * 1024;

export class TenantWorker {
  readonly #setup: WorkerSetup;
  readonly #logger: Logger;
  readonly #audit: Audit;
  readonly #post: (replies: WorkerReply[], transfer: ArrayBuffer[]) => void;
  /** The MCP endpoint's maker, loaded only by a server with --mcp. */
  readonly #mcpEndpoint: typeof mcpEndpoint | undefined;
  readonly #slot: RunningSlot;
  readonly #open = new Map<string, OpenTenant>();
  readonly #queue = new FairQueue<TenantMessage>();
  #scheduled = false;
  /** Requests whose statements want texts embedded: their calls are out while the queue serves the others. */
  readonly #passes: EmbeddingPasses;
  /** The backfills of vectors (alter … embed) of the files open here; none without an embedder. */
  readonly #backfills: Backfills | undefined;
  /** Gives back what a burst of work made the heap hold, once the thread is quiet. */
  readonly #collector = new IdleCollector();

  constructor(
    setup: WorkerSetup,
    logger: Logger,
    audit: Audit,
    post: (replies: WorkerReply[], transfer: ArrayBuffer[]) => void,
    endpoint?: typeof mcpEndpoint,
  ) {
    this.#setup = setup;
    this.#mcpEndpoint = endpoint;
    this.#logger = logger;
    this.#audit = audit;
    this.#post = post;
    this.#slot = new RunningSlot(setup.slot);
    this.#passes = new EmbeddingPasses(
      setup.embedder,
      (message) => this.take([message]),
      (message, err) => {
        const tenant = this.#open.get(message.tenant);
        const answered =
          tenant === undefined || message.kind !== 'run'
            ? refusal(err, this.#logger, 'embed')
            : tenant.runner.refused(
                message,
                Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength),
                err,
              );
        this.#reply(message, answered, undefined, tenant?.refusals.splice(0), undefined);
      },
    );
    const embedder = setup.embedder;
    this.#backfills =
      embedder === undefined || setup.readOnly
        ? undefined
        : new Backfills((signal) => this.#passes.embedder(signal), logger, {
            batchSize: embedder.config.batchSize,
            window: embedder.config.concurrency,
          });
  }

  /**
   * Queues the messages of one postMessage. The queue is served in turns, each as long as TURN_MS at
   * most (past it, the message under way is the last): messages that come meanwhile join the queue
   * between two turns, in their tenant's place. An idle worker serves its first turn at once: a turn
   * waited for in setImmediate costs a request another pass of the event loop for nothing.
   */
  take(messages: readonly TenantMessage[]): void {
    this.#collector.busy();
    for (const message of messages) this.#queue.push(message.tenant, message);
    if (!this.#scheduled) this.#serveTurn();
  }

  #schedule(): void {
    if (this.#scheduled || this.#queue.size === 0) return;
    this.#scheduled = true;
    setImmediate(this.#serveTurn);
  }

  readonly #serveTurn = (): void => {
    this.#scheduled = false;
    const started = performance.now();
    let message: TenantMessage | undefined;
    while ((message = this.#queue.shift()) !== undefined) {
      this.#serve(message);
      if (performance.now() - started >= TURN_MS) break;
    }
    this.#schedule();
  };

  #serve(message: TenantMessage): void {
    const started = performance.now();
    let answered: Answered;
    let tools: [string, ToolOutcomeLabel][] | undefined;
    let quotas: QuotaKind[] | undefined;
    let change: Uint8Array | undefined;
    if (message.kind === 'close') {
      change = this.#changeOf(message.tenant);
      this.#close(message.tenant);
      answered = { status: 200, json: undefined };
    } else if (message.kind === 'snapshot') {
      this.#slot.start(message.id, Infinity);
      try {
        answered = this.#snapshot(message);
        change = this.#changeOf(message.tenant);
        if (answered.status === 200 && !this.#copy(message)) answered = { status: 503, json: undefined };
      } finally {
        this.#slot.end();
      }
    } else {
      const pass = this.#passes.of(message);
      // Opening the tenant's file (its index snapshots read back: seconds for large ones) is not the
      // statement: the time limit starts once it is open (#run). A limit shorter than the open would
      // otherwise end the worker at every attempt, and the tenant could never be opened.
      this.#slot.start(message.id, Infinity);
      try {
        answered = this.#run(message, pass);
        const open = this.#open.get(message.tenant);
        if (open !== undefined && open.tools.length > 0) tools = open.tools.splice(0);
        if (open !== undefined && open.refusals.length > 0) quotas = open.refusals.splice(0);
        // A pass that stops for embeddings wrote nothing of its own; the commits taken wait for the pass that answers.
        if (!pass.round.wants) change = this.#changeOf(message.tenant);
      } finally {
        this.#slot.end();
        pass.ms += performance.now() - started;
      }
      // The pass stopped for texts to embed, having written nothing: the call goes out, and the turn goes on.
      if (pass.round.wants) return this.#passes.embed(message, pass, this.#open.get(message.tenant)?.embeds);
    }
    this.#reply(message, answered, tools, quotas, change, performance.now() - started);
  }

  #reply(
    message: TenantMessage,
    answered: Answered,
    tools: [string, ToolOutcomeLabel][] | undefined,
    quotas: QuotaKind[] | undefined,
    change: Uint8Array | undefined,
    closeMs = 0,
  ): void {
    const pass = this.#passes.done(message);
    const ms = pass?.ms ?? closeMs;
    const json = answered.json;
    const moved: ArrayBuffer[] = change === undefined ? [] : [change.buffer as ArrayBuffer];
    // A large answer crosses as bytes whose buffer is moved, not copied; a small one as the string.
    const body = json !== undefined && json.length > TRANSFER_BYTES ? new TextEncoder().encode(json) : json;
    if (body instanceof Uint8Array) moved.push(body.buffer as ArrayBuffer);
    // Every reply of one shape, what a request did not use left undefined: no object spread per answer.
    const reply: WorkerReply = {
      id: message.id,
      status: answered.status,
      body,
      ms,
      tools,
      quotas: pass?.quota === undefined ? quotas : [...(quotas ?? []), pass.quota],
      scope: answered.scope,
      retryAfter: pass?.retryAfter,
      embedder: this.#passes.calls(),
      change,
    };
    this.#post([reply], moved);
  }

  /** A replicated tenant's commits since its last message; its log checkpointed past CHECKPOINT_BYTES. */
  #changeOf(name: string): Uint8Array | undefined {
    const open = this.#open.get(name);
    if (open?.tail === undefined) return undefined;
    const change = open.tail.take();
    if (open.tail.taken > CHECKPOINT_BYTES && open.db.checkpoint()) open.tail.checkpointed();
    return change;
  }

  /** Opens the tenant for a snapshot (its file made the log's head first, by the serving thread). */
  #snapshot(message: Extract<ToWorker, { kind: 'snapshot' }>): Answered {
    try {
      this.#tenant(message.tenant, message.limits);
      return { status: 200, json: undefined };
    } catch (err) {
      return refusal(err, this.#logger, 'open');
    }
  }

  /** The file copied with every commit taken (#changeOf) checkpointed into it; a partial checkpoint copies nothing. */
  #copy(message: Extract<ToWorker, { kind: 'snapshot' }>): boolean {
    const open = this.#open.get(message.tenant)!;
    if (!open.db.checkpoint()) return false;
    open.tail?.checkpointed();
    fs.copyFileSync(
      path.join(this.#setup.dataDir!, `${message.tenant}.fenec`),
      message.to,
      fs.constants.COPYFILE_FICLONE,
    );
    return true;
  }

  #run(message: Extract<ToWorker, { kind: 'run' | 'open' }>, pass: Pass): Answered {
    let tenant: OpenTenant;
    try {
      tenant = this.#tenant(message.tenant, message.limits);
    } catch (err) {
      return refusal(err, this.#logger, message.kind === 'open' ? 'open' : message.route);
    }
    if (message.kind === 'open') return { status: 200, json: undefined };
    // A request run again once its texts are embedded keeps its first pass's deadline: the embedder's time counts.
    const deadline = (pass.deadline ??= Date.now() + message.limits.statementTimeoutMs);
    this.#slot.start(message.id, deadline);
    const body = Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
    // SQLite stops the request's statements at the deadline; the watchdog, only what overruns outside it.
    const run = (): Answered =>
      tenant.db.embedding(pass.round, () =>
        tenant.db.within(deadline, message.limits.statementTimeoutMs, () =>
          tenant.runner.run(message, body, message.limits.maxAnswerBytes),
        ),
      );
    if (message.trace === undefined) return run();
    return context.with(propagation.extract(ROOT_CONTEXT, message.trace), run);
  }

  #tenant(name: string, limits: TenantLimits): OpenTenant {
    const open = this.#open.get(name);
    if (open !== undefined) return open;
    const setup = this.#setup;
    const file = setup.file ?? path.join(setup.dataDir!, `${name}.fenec`);
    const db = FenecDatabase.open({
      file,
      readOnly: setup.readOnly,
      program: 'fenec-server',
      lockHeld: true,
      replicated: setup.replicated,
      sweepIntervalMs: setup.sweepIntervalMs,
      busyTimeoutMs: setup.busyTimeoutMs,
      maxBytes: limits.maxBytes > 0 ? limits.maxBytes : undefined,
      onVectorEvent: (event) => {
        const fields = {
          tenant: setup.dataDir === undefined ? undefined : name,
          collection: event.collection,
          field: event.field,
          err: event.error,
        };
        if (event.kind === 'snapshot_written') {
          this.#logger.debug(fields, event.message);
          this.#collector.dropped();
        } else this.#logger.warn(fields, event.message);
      },
    });
    let revocations: Revocations | undefined;
    try {
      // Opened once the database made the file and its catalogue: the revocations live in the same file.
      revocations = Revocations.open(file, setup.readOnly, setup.replicated);
      const policy = this.#policyOf(name);
      const tenant = setup.dataDir === undefined ? null : name;
      const tools: [string, ToolOutcomeLabel][] = [];
      const refusals: QuotaKind[] = [];
      const executor = setup.tenantQuotas ? new QuotaExecutor(db, limits, (quota) => refusals.push(quota)) : db;
      const mcp =
        setup.mcp === undefined
          ? undefined
          : this.#mcpEndpoint!(executor, {
              write: setup.mcp.write,
              memory: setup.mcp.memory,
              ...(setup.embedder === undefined ? {} : { embedder: (what: string) => db.embedder(what) }),
              ...(setup.mcp.memoryMerge === undefined ? {} : { memoryMerge: setup.mcp.memoryMerge }),
              readOnly: setup.httpReadOnly || setup.readOnly,
              audit: this.#audit,
              logger: this.#logger,
              tenant,
              cursorSecret: setup.cursorSecret,
              count: (tool, outcome) => tools.push([tool, outcome]),
            });
      const runner = new RequestRunner(
        { httpReadOnly: setup.httpReadOnly, policy, cursorSecret: setup.cursorSecret, tenant },
        executor,
        revocations,
        this.#logger,
        this.#audit,
        mcp,
      );
      const embedRate = setup.tenantQuotas ? (limits.embedRate ?? 0) : 0;
      const tail = setup.replicated ? new WalTail(file) : undefined;
      const opened: OpenTenant = {
        db,
        revocations,
        runner,
        tools,
        refusals,
        embeds: new EmbedBucket(embedRate),
        tail,
      };
      this.#open.set(name, opened);
      // The backfills the file records go on (after a restart too), and those a statement records start.
      const backfills = this.#backfills;
      if (backfills !== undefined) {
        db.backfill.onStart = () => backfills.resume(name, db);
        backfills.resume(name, db);
      }
      return opened;
    } catch (err) {
      revocations?.close();
      db.close();
      throw err;
    }
  }

  /** A tenant's own policy file, else the server's --policy. */
  #policyOf(name: string): WorkerSetup['policy'] {
    if (this.#setup.dataDir === undefined) return this.#setup.policy;
    const file = path.join(this.#setup.dataDir, `${name}.policy`);
    return fs.existsSync(file) ? parsePolicy(fs.readFileSync(file, 'utf8'), file) : this.#setup.policy;
  }

  #close(name: string): void {
    const open = this.#open.get(name);
    if (open === undefined) return;
    this.#open.delete(name);
    this.#backfills?.stop(name);
    try {
      open.revocations.close();
      open.db.close();
    } catch (err) {
      this.#logger.error({ err, tenant: name }, 'closing a tenant failed');
    }
  }
}
