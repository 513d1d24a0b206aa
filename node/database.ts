/**
 * One open `.fenec` file: the door every statement goes through, whatever brought it
 * (/query, MCP, `fenec query --file`, `fenec mcp --file`). One path from statement to rows.
 */
import type { ExplainStmt, Statement } from '../shared/fenecql/ast.js';
import {
  isRowStatement,
  kindOf,
  STATEMENT_KINDS,
  unreachable,
  type RowStatement,
  type SchemaStatement,
  type Size,
} from '../shared/fenecql/kinds.js';
import { checkJsonValue } from '../shared/fenecql/limits.js';
import { parseStatement } from '../shared/fenecql/parser.js';
import { printedOnce, printStatement } from '../shared/fenecql/print.js';
import type { Policy, PolicyRule } from '../shared/auth/policy.js';
import { FenecError } from '../shared/errors.js';
import { Catalog } from './schema/catalog.js';
import { ByteQuota, isStorageFull, type Room } from './storage/byte-quota.js';
import { Deadline } from './storage/deadline.js';
import { acquireLock, type FileLock } from './storage/lock.js';
import { openSnapshot, openWritable, releaseMap, type Connection } from './storage/sqlite.js';
import type { Answer } from '../shared/answer.js';
import { measure, run } from './query/execute/run-plan.js';
import { fromSqliteError } from './query/execute/sqlite-errors.js';
import { StatementCache } from './query/execute/statement-cache.js';
import { deleteExpired } from './query/execute/expiry.js';
import { VectorStore, type VectorFieldSpec, type VectorStoreEvent } from './vector/store.js';
import type { Plan } from './query/plan/plan-types.js';
import { plan } from './query/plan/row-statement.js';
import { runSchemaStatement, type IndexState } from './query/execute/schema-statements.js';
import type { BindContext } from './query/compile/evaluate.js';
import { explainOther, explainPlan, type ExplainedPlan } from './query/execute/explain.js';
import { EmbeddingRound, missing } from './embedder/round.js';
import type { EmbedSpec } from './schema/catalog.js';
import {
  embeddedSet,
  embedRows,
  queryVector,
  rowVector,
  withModels,
  type VectorLookup,
} from './query/execute/embed-rows.js';
import { bulkRows, loadPass } from './query/execute/load-rows.js';
import { Backfilling } from './query/execute/backfill.js';

export type { Answer };

export interface DatabaseOptions {
  /** Path of the `.fenec` file; created when missing unless readOnly. */
  readonly file: string;
  /** Take no lock, write nothing, read the file as it stood when opened. */
  readonly readOnly: boolean;
  /** Named in the lock file, so that a refused second writer learns who holds it. */
  readonly program: string;
  /**
   * How often expired rows are deleted, in milliseconds; 0 never (reads leave them out either way).
   * Default 10 000. A read-only database never sweeps.
   */
  readonly sweepIntervalMs?: number;
  /** Told when a vector index is found damaged, stored, or fails (searches then scan the rows): for the log. */
  readonly onVectorEvent?: (event: VectorStoreEvent) => void;
  /**
   * Largest size of the file in bytes (a tenant's quota): a write that would grow it further fails
   * whole (`storage_full`, 507) and nothing written is lost, while writes that free space still run
   * (storage/byte-quota.ts). Default: none.
   */
  readonly maxBytes?: number;
  /**
   * This process holds the file's lock already: a server's serving thread takes it for the worker
   * thread that opens the file, so that a worker replaced after a time limit opens it again. Default false.
   */
  readonly lockHeld?: boolean;
  /** Its commits are shipped from its write-ahead log (storage/wal-tail.ts): only `checkpoint` checkpoints. */
  readonly replicated?: boolean;
  /**
   * How long a write waits in all for a lock another program holds on the file, in milliseconds, before it
   * fails `file_busy` (503). Default 5 000 (storage/sqlite.ts).
   */
  readonly busyTimeoutMs?: number;
}

export const DEFAULT_SWEEP_INTERVAL_MS = 10_000;

export interface ExecuteOptions {
  /** Refuse statements that write (the server's --http-read-only). */
  readonly readOnly?: boolean;
  /** The caller's verified token claims, for `$jwt.NAME`. */
  readonly jwt?: Readonly<Record<string, unknown>>;
  /**
   * The policy a JSON Web Token is held to: it reaches only the collections the policy names, with
   * their grants, its condition ANDed into every statement, and never a schema change or compact.
   * Absent for the server token, which reaches everything.
   */
  readonly policy?: Policy;
  /**
   * Serialize a read's rows as they are read and refuse it (`answer_too_large`) past this many bytes
   * (`/query`'s answer cap): the answer then carries its JSON, for answerText. Default: no cap.
   */
  readonly maxAnswerBytes?: number;
}

/** A statement parsed once, and its plan for the schema version it was made under. */
interface Prepared {
  readonly statement: Statement;
  plan: Plan | undefined;
  version: number;
  /** Plans under a token's policy, by the rule they were made under. */
  readonly scoped: WeakMap<PolicyRule, { plan: Plan; version: number }>;
}

/** Parsed statements kept per text; agents and apps send the same few statements again and again. */
const PREPARED_LIMIT = 2000;
/**
 * Longer statements are parsed each time rather than kept: a bulk insert written out as literals is
 * seldom sent twice, and kept it would hold its whole tree (megabytes for rows of vectors).
 */
const PREPARED_MAX_TEXT = 8 * 1024;

/** The room a statement has at a byte quota, by how it may change the file's size (storage/byte-quota.ts). */
const ROOM: Readonly<Record<Size, Room>> = { none: 'quota', grows: 'quota', frees: 'freeing', copies: 'compact' };

export class FenecDatabase {
  readonly file: string;
  readonly readOnly: boolean;
  readonly #db: Connection;
  readonly #catalog: Catalog;
  readonly #lock: FileLock | undefined;
  readonly #statements: StatementCache;
  readonly #prepared = new Map<string, Prepared>();
  /**
   * The last statement parsed that was too long to keep, until it runs: statementOf then execute of
   * the same text (the request runner's paging and audit, a tenant's quotas) parse it once.
   */
  #handedOver: { readonly text: string; readonly prepared: Prepared } | undefined;
  #cacheVersion: number;
  readonly #sweeper: NodeJS.Timeout | undefined;
  /** The Faiss indexes of the `@hnsw` fields, repaired from the rows' change log at open and after each write. */
  readonly #vectors: VectorStore;
  /** Rebuilds that compact started, until they end (idle waits for them). */
  readonly #rebuilds = new Set<Promise<void>>();
  /** The byte quota (maxBytes), or undefined: no cap. */
  readonly #quota: ByteQuota | undefined;
  /** The time limit a request's statements are held to (within). */
  readonly #deadline: Deadline;
  /** The embeddings of the request under way (embedding); undefined: the server has no embedder. */
  #round: EmbeddingRound | undefined;
  /** The backfills of vectors (alter … embed) the file records, for the server's worker to run. */
  readonly backfill: Backfilling;

  private constructor(options: DatabaseOptions, db: Connection, lock: FileLock | undefined) {
    this.file = options.file;
    this.#quota =
      options.maxBytes !== undefined && options.maxBytes > 0 && !options.readOnly
        ? new ByteQuota(db, options.maxBytes)
        : undefined;
    this.readOnly = options.readOnly;
    this.#db = db;
    this.#lock = lock;
    this.#catalog = new Catalog(db);
    // A file from before vectors were kept in tables of their own is moved to that layout once
    // (catalog.ts); its vectors are held twice until their columns are dropped: compact's room.
    if (!options.readOnly) this.#room('compact', () => db.transaction(() => this.#catalog.upgradeLayout())());
    this.#statements = new StatementCache(db);
    this.#deadline = new Deadline(db);
    this.#cacheVersion = this.#catalog.version;
    this.#vectors = VectorStore.open(db, this.#catalog.vectorFields(), {
      readOnly: options.readOnly,
      onEvent: (event) => {
        // An index stored has read its rows through the map: off the stack of the statement that led to it.
        if (event.kind === 'snapshot_written') setImmediate(() => this.#releaseMap());
        options.onVectorEvent?.(event);
      },
    });
    // The open read each index's snapshot back through the map.
    this.#releaseMap();
    this.backfill = new Backfilling(db, this.#catalog, options.readOnly, {
      setVector: (change, params) => this.#runTree(change, { params, now: Date.now(), jwt: undefined }, undefined),
      grow: (work) => this.#room('quota', work),
      catchUp: () => this.#vectors.catchUp(),
    });
    const interval = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
    if (!options.readOnly && interval > 0) {
      // unref: a sweep that is due never keeps the process alive on its own.
      this.#sweeper = setInterval(() => {
        try {
          this.sweepExpired();
        } catch {
          // Reads leave expired rows out whether or not they are deleted; the next sweep tries again.
        }
      }, interval).unref();
    }
  }

  /** Drops the pages the file's memory map holds (storage/sqlite.ts, releaseMap), unless the file is closed. */
  #releaseMap(): void {
    if (this.#db.open) releaseMap(this.#db);
  }

  /** Deletes the rows past their `@ttl`, with their index entries, in one transaction; answers how many. */
  sweepExpired(): number {
    if (this.readOnly || !this.#db.open) return 0;
    const deleted = this.#room('freeing', () =>
      this.#db.transaction(() => deleteExpired(this.#db, this.#catalog.list(), Date.now()))(),
    );
    if (deleted > 0) this.#vectors.catchUp();
    return deleted;
  }

  /** Resolves when the vector indexes have no work left in the background (a build, a rebuild). */
  async idle(): Promise<void> {
    await Promise.all(this.#rebuilds);
    await this.#vectors.idle();
  }

  /** Opens the file: a writer takes `F.lock` first (refused while a live process holds it). */
  static open(options: DatabaseOptions): FenecDatabase {
    if (options.readOnly) return new FenecDatabase(options, openSnapshot(options.file), undefined);
    const lock = options.lockHeld === true ? undefined : acquireLock(options.file, options.program);
    try {
      return new FenecDatabase(
        options,
        openWritable(options.file, options.replicated === true, options.busyTimeoutMs),
        lock,
      );
    } catch (err) {
      lock?.release();
      throw err;
    }
  }

  /**
   * Runs `work` — a request's statements — with SQLite stopping any of them at `at` (epoch ms): one
   * stopped fails `statement_timeout` (its limit `limitMs`), and changes nothing.
   */
  within<T>(at: number, limitMs: number, work: () => T): T {
    return this.#deadline.hold(at, limitMs, work);
  }

  /**
   * Runs `work` — a request's statements — with the vectors `round` holds: a statement that needs texts embedded
   * that the round lacks notes them and stops, having written nothing (node/embedder/round.ts).
   */
  embedding<T>(round: EmbeddingRound, work: () => T): T {
    const outer = this.#round;
    this.#round = round;
    try {
      return work();
    } finally {
      this.#round = outer;
    }
  }

  /**
   * The server's embedder, for a statement built to make a field with `@embed` (the memory collection): its model
   * and dimension. Refused without one; a pass stops when it is not probed yet (node/embedder/round.ts).
   */
  embedder(what: string): { readonly model: string; readonly dimension: number } {
    if (this.#round === undefined) throw missing(what);
    return this.#round.embedder(what);
  }

  /** Parses (or finds parsed) and runs one statement. Throws FenecError; a refused statement changes nothing. */
  execute(text: string, params: readonly unknown[] = [], options: ExecuteOptions = {}): Answer {
    const prepared = this.#prepare(text);
    if (this.#handedOver?.prepared === prepared) this.#handedOver = undefined;
    return this.#execute(prepared, params, options);
  }

  /**
   * The tree of a statement's text, parsed once and kept as `execute` keeps it (a long one until it
   * runs): what a caller reads to page, count or audit the statement it then executes. Throws its parse error.
   */
  statementOf(text: string): Statement {
    return this.#prepare(text).statement;
  }

  /**
   * Runs a statement given as a tree (what the MCP tools build: a filter embedded as the condition it
   * parsed to, never as text). Its plan is kept under the tree's canonical text.
   */
  executeStatement(statement: Statement, params: readonly unknown[] = [], options: ExecuteOptions = {}): Answer {
    // The key is the tree's canonical text, and it is only ever a key: the tree runs as given, never
    // parsed again. It must say what the tree is, not which object it is (a tool builds a new tree for
    // each write, page and listing); print.ts is one text per tree (it parses back to the same tree,
    // print.test.ts), so two trees share a plan only when they are the same statement; and it is the
    // key /query's text of the same statement has, so a tool's read and /query's share one plan.
    return this.#execute(this.#preparedTree(statement), params, options);
  }

  #preparedTree(statement: Statement): Prepared {
    const key = printedOnce(statement);
    let prepared = this.#prepared.get(key);
    if (prepared === undefined) {
      prepared = { statement, plan: undefined, version: -1, scoped: new WeakMap() };
      this.#remember(key, prepared);
    }
    return prepared;
  }

  #execute(prepared: Prepared, params: readonly unknown[], options: ExecuteOptions): Answer {
    const { statement } = prepared;
    const kind = kindOf(statement);
    if (kind.writes && (options.readOnly === true || this.readOnly)) {
      throw new FenecError(
        'read_only',
        this.readOnly
          ? `${this.file} is open read-only; the statement writes`
          : 'this server is read-only; the statement writes',
        {
          hint: this.readOnly
            ? 'open the file without --read-only to write'
            : 'send writes to a server without --http-read-only',
        },
      );
    }
    params.forEach((value, i) => checkJsonValue(value, `$${i + 1}`));
    let ctx: BindContext = { params, now: Date.now(), jwt: options.jwt };
    try {
      if (statement.kind === 'Explain') return this.#explain(statement.statement, options.policy);
      if (!isRowStatement(statement))
        return this.#room(ROOM[kind.size], () => this.#runSchemaStatement(statement, ctx, options.policy));
      let rowPlan = this.#planFor(prepared, statement, options.policy);
      if (kind.embeds === 'near') ctx = { ...ctx, embedQuery: this.#queryLookup };
      else if (kind.embeds === 'rows' && (statement.kind === 'Insert' || statement.kind === 'Put')) {
        const list = bulkRows(statement, params);
        if (list !== undefined && this.#round?.load?.writing === false)
          return loadPass(this.#round, list, this.#catalog.require(statement.collection), (part) =>
            this.#execute(prepared, part, options),
          );
        // Planned as written first: a write refused for what it says is refused before anything is embedded.
        const filled = embedRows(statement, params, this.#catalog.require(statement.collection), ctx, this.#rowLookup);
        if (list !== undefined && this.#round !== undefined) this.#round.bulk = true;
        this.#round?.stop();
        if (filled !== undefined) {
          ctx = { ...ctx, params: filled.params };
          rowPlan = this.#planFor(this.#preparedTree(filled.statement), filled.statement, options.policy);
        }
      } else if (kind.embeds === 'changes' && statement.kind === 'Set') {
        const answer = embeddedSet(
          statement,
          this.#catalog.require(statement.collection),
          ctx,
          this.#rowLookup,
          this.#round,
          {
            read: (read) => (this.#runTree(read, ctx, options.policy) as { rows: Record<string, unknown>[] }).rows,
            write: (change, params) => this.#runTree(change, { ...ctx, params }, undefined),
            transaction: (work) => this.#db.transaction(work)(),
          },
          () => this.#runRows(rowPlan, 'grows', ctx, undefined),
        );
        if (answer !== undefined) {
          this.#deadline.release();
          this.#vectors.catchUp();
          return answer;
        }
      }
      const answer = this.#runRows(rowPlan, kind.size, ctx, options.maxAnswerBytes);
      if (kind.writes) {
        // The write has committed: the vector indexes apply what its triggers logged, whatever the time.
        // catchUp does not throw for a log it cannot read (the answer must say the write happened).
        this.#deadline.release();
        this.#vectors.catchUp();
      }
      return answer;
    } catch (err) {
      // A schema change stopped half-way was rolled back; the catalogue is read again from the file.
      if (this.#deadline.stopped(err)) this.#catalog.reload();
      throw fromSqliteError(this.#deadline.refusal(err));
    } finally {
      if (this.#cacheVersion !== this.#catalog.version) {
        this.#statements.clear();
        this.#cacheVersion = this.#catalog.version;
      }
    }
  }

  /**
   * Runs a row statement's plan. At a byte quota a `del` may take the headroom; a `set` refused for
   * want of a page runs again with it when its rows do not grow (its new values take no more bytes
   * than the old), so that only a write that grows the data is refused.
   */
  #runRows(rowPlan: Plan, size: Size, ctx: BindContext, maxAnswerBytes: number | undefined): Answer {
    const go = (): Answer => run(rowPlan, ctx, this.#statements, this.#db, this.#vectors, maxAnswerBytes);
    if (this.#quota === undefined || rowPlan.kind !== 'change') return go();
    if (ROOM[size] !== 'quota') return this.#quota.within(ROOM[size], go);
    try {
      return go();
    } catch (err) {
      if (!isStorageFull(err) || rowPlan.growth === undefined || measure(rowPlan.growth, ctx, this.#statements) > 0)
        throw err;
      return this.#quota.within('freeing', go);
    }
  }

  /** A row's vector from the request's round (undefined: none, so the write that needs one is refused). */
  readonly #rowLookup: VectorLookup = (field, spec, text, label) => rowVector(this.#round, field, spec, text, label);
  /** The vector of a `near`'s words, embedded as a query. */
  readonly #queryLookup = (field: string, spec: EmbedSpec | undefined, text: string): Float32Array =>
    queryVector(this.#round, field, spec, text);

  /** A tree run as planned (under `policy`, its rule's plan), outside the statement cache's text keys. */
  #runTree(statement: RowStatement, ctx: BindContext, policy: Policy | undefined): Answer {
    return run(
      this.#planFor(this.#preparedTree(statement), statement, policy),
      ctx,
      this.#statements,
      this.#db,
      this.#vectors,
    );
  }

  #room<T>(room: Room, work: () => T): T {
    return this.#quota === undefined ? work() : this.#quota.within(room, work);
  }

  /** The statement's plan, made again only when the schema changed; under a policy, the rule's own. */
  #planFor(prepared: Prepared, statement: RowStatement, policy: Policy | undefined): Plan {
    const version = this.#catalog.version;
    if (policy === undefined) {
      if (prepared.plan === undefined || prepared.version !== version) {
        prepared.plan = plan(statement, this.#catalog);
        prepared.version = version;
      }
      return prepared.plan;
    }
    const rule = this.#ruleFor(statement, policy);
    let scoped = prepared.scoped.get(rule);
    if (scoped === undefined || scoped.version !== version) {
      scoped = { plan: plan(statement, this.#catalog, rule.where), version };
      prepared.scoped.set(rule, scoped);
    }
    return scoped.plan;
  }

  /**
   * The policy rule a token's statement runs under: a collection the policy does not name is as unknown as one that
   * does not exist.
   */
  #ruleFor(statement: RowStatement, policy: Policy): PolicyRule {
    const rule = policy.rules.get(statement.collection);
    if (rule === undefined || this.#catalog.get(statement.collection) === undefined) {
      throw this.#catalog.unknown(statement.collection, (name) => policy.rules.has(name));
    }
    const { writes } = STATEMENT_KINDS[statement.kind];
    if (writes ? !rule.write : !rule.read) {
      throw new FenecError(
        'forbidden',
        `this token may not ${writes ? 'write' : 'read'} ${statement.collection}: its policy grants ${[rule.read && 'read', rule.write && 'write'].filter(Boolean).join(' and ')} only`,
        {
          hint: `the grant comes from ${rule.source}`,
        },
      );
    }
    return rule;
  }

  /** Refuses a statement only the server's token runs (a schema change, compact) to a JSON Web Token. */
  #serverOnly(statement: Statement, policy: Policy | undefined): void {
    if (policy !== undefined && STATEMENT_KINDS[statement.kind].serverOnly) {
      throw new FenecError(
        'forbidden',
        'schema changes and compact are for the server token; a JSON Web Token runs reads and writes of rows',
        {
          hint: 'run it with the server token (--http-token)',
        },
      );
    }
  }

  /** `explain`: the plan the statement would run under the same rules (the token's policy), without running it. */
  #explain(statement: ExplainStmt['statement'], policy: Policy | undefined): Answer {
    this.#serverOnly(statement, policy);
    const text = printStatement(statement);
    if (!isRowStatement(statement)) return explainOther(text, statement);
    const where = policy === undefined ? undefined : this.#ruleFor(statement, policy).where;
    return explainPlan(text, plan(statement, this.#catalog, where), this.#db);
  }

  #runSchemaStatement(statement: SchemaStatement, ctx: BindContext, policy: Policy | undefined): Answer {
    this.#serverOnly(statement, policy);
    const visible = policy === undefined ? undefined : (name: string) => policy.rules.get(name)?.read === true;
    // The index state counts rows, the policy's or not: for the server token only.
    const indexes =
      policy === undefined ? (collection: string, field: string) => this.#indexState(collection, field) : undefined;
    if (statement.kind === 'AlterEmbed') return this.backfill.start(statement, this.#round);
    const later = statement.kind === 'Compact' ? this.#rebuildSmallIndexes(statement.collection) : [];
    const answer = runSchemaStatement(
      withModels(statement, this.#round),
      this.#catalog,
      this.#db,
      ctx,
      visible,
      indexes,
    );
    switch (statement.kind) {
      case 'Compact': {
        for (const spec of later) {
          const rebuild = this.#vectors.rebuild(spec.collection, spec.field).catch(() => undefined);
          this.#rebuilds.add(rebuild);
          void rebuild.then(() => this.#rebuilds.delete(rebuild));
        }
        break;
      }
      case 'CreateCollection':
      case 'DropCollection':
      case 'AlterAdd':
      case 'AlterDrop':
        // The vector indexes follow the fields there are now; a backfill of a field gone ends.
        this.backfill.forget(statement);
        this.#vectors.sync(this.#catalog.vectorFields());
        break;
      case 'Schema':
        break;
      default:
        unreachable(statement);
    }
    return answer;
  }

  /**
   * Before compact: the vector indexes of the collection (or of all) built again and stored on the
   * spot when small, so that compact leaves the file as it answers; the large ones, to rebuild in the
   * background after (searches stay right meanwhile, and failures reach onVectorEvent).
   */
  #rebuildSmallIndexes(collection: string | undefined): VectorFieldSpec[] {
    return this.#catalog
      .vectorFields()
      .filter(
        (spec) =>
          (collection === undefined || spec.collection === collection) &&
          !this.#vectors.rebuildNow(spec.collection, spec.field),
      );
  }

  /** A vector index's state as `schema` shows it, and a backfill's progress; undefined for a field without one. */
  #indexState(collection: string, field: string): IndexState | undefined {
    const info = this.#vectors.info(collection, field);
    if (info === undefined) return undefined;
    const building = info.state === 'adding' || info.state === 'building';
    return { rows: info.live, pending: info.pending, building, ...this.backfill.progress(collection, field) };
  }

  /** The statement a text holds, parsed at most once while it stays among the recent ones. */
  #prepare(text: string): Prepared {
    let prepared = this.#prepared.get(text);
    if (prepared === undefined) {
      if (this.#handedOver?.text === text) return this.#handedOver.prepared;
      prepared = { statement: parseStatement(text), plan: undefined, version: -1, scoped: new WeakMap() };
      if (text.length > PREPARED_MAX_TEXT) this.#handedOver = { text, prepared };
      this.#remember(text, prepared);
    }
    return prepared;
  }

  #remember(key: string, prepared: Prepared): void {
    if (key.length > PREPARED_MAX_TEXT) return;
    if (this.#prepared.size >= PREPARED_LIMIT) this.#prepared.delete(this.#prepared.keys().next().value!);
    this.#prepared.set(key, prepared);
  }

  /** SQLite's plan of a read's last step (what `explain` answers of it), for tests. */
  explain(text: string): string[] {
    const statement = this.#prepare(text).statement;
    if (statement.kind !== 'Get') throw new FenecError('invalid_statement', 'only get statements are explained');
    const { steps } = (explainPlan(text, plan(statement, this.#catalog), this.#db) as { plan: ExplainedPlan }).plan;
    return [...steps[steps.length - 1]!.sqlite];
  }

  /**
   * Moves the write-ahead log into the file and empties it (a replicated file, once its commits are shipped);
   * false when a reader kept part of it from the file (the log is then left as it was).
   */
  checkpoint(): boolean {
    const [result] = this.#db.pragma('wal_checkpoint(TRUNCATE)') as {
      busy: number;
      log: number;
      checkpointed: number;
    }[];
    return result !== undefined && result.busy === 0 && result.log === result.checkpointed;
  }

  close(): void {
    clearInterval(this.#sweeper);
    this.#vectors.close();
    if (this.#db.open) {
      if (this.#db.inTransaction) this.#db.exec('ROLLBACK');
      this.#db.close();
    }
    this.#lock?.release();
  }
}
