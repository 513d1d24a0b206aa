/**
 * The database's vector indexes: one Faiss HNSW index per `@hnsw` field, kept equal to what the
 * rows say, through crashes.
 *
 * The rows are the truth; an index is a cache repaired from a log. Triggers (vector-log.ts) write a
 * log entry in the writing transaction for every row whose vector may have changed; catchUp(), after
 * each write commits, applies the entries it has not seen by reading those rows as they are now
 * (field-index.ts). A snapshot (snapshot.ts) stores an index with its label map as of log seq S; at
 * open the store loads it and applies the entries after S, or builds the index from the rows when
 * there is none or its bytes are damaged. However a crash falls (mid-transaction, mid-snapshot,
 * mid-build), the rows, the log and the snapshot the file holds are consistent with one another, and
 * replaying by the rows' current state is idempotent: the index comes back equal to the rows.
 *
 * Snapshot rule, for an index with no work pending: after every build from the rows, and at close;
 * when the rows applied since the last snapshot reach max(1 000, 10 % of the live vectors) and no
 * write has brought rows for a second; and, while writes keep coming, when they reach max(1 000,
 * 50 % of the live vectors). Writing a snapshot costs about the index's size (18 MB at 10 000 × 384)
 * whatever changed; replaying costs one HNSW add per entry. Tying the backlog to a share of the
 * index keeps the snapshot cost per write constant; the floor of 1 000 keeps small indexes from
 * being rewritten every few writes (1 000 adds replay in about 0.3 s at 384 dims). The 10 % share
 * bounds the replay at open to a tenth of a full build once writes pause; during a load it would
 * store the index at each 10 % of growth, writing about ten times the final index (measured: 1.2 s
 * of the 3 s the tenant's thread spent on a 5 000-row load). While writes come the share is 50 %:
 * a growing index is stored each time it has doubled, the snapshots of a load add up to at most
 * twice the final index, and a crash mid-load replays at most the rows since the last, no more than
 * a build of what the load added. A timer applies the 10 % rule a second after the last write.
 *
 * Searches of a field whose index cannot answer right now (being built with no older one to serve,
 * busy with a large add, behind the log inside an open transaction, failed, its log unreadable) scan
 * its rows exactly: slower, never wrong.
 *
 * Transactions: catchUp, sync, rebuild and the end of background jobs read the log, and must not see
 * a write transaction's uncommitted entries (a rollback would hand their seqs out again). A writable
 * store refuses these calls inside a transaction; a job that ends during one waits for the next
 * catchUp or search. A read-only store reads the snapshot its connection holds open and never writes.
 */
import assert from 'node:assert/strict';
import type { VectorEngine } from './vector-index.js';
import type { Connection } from '../storage/sqlite.js';
import { exactSearch, queryVector, type ScoredRow } from './distance.js';
import type { StoredVector } from './vector-rows.js';
import { faiss } from './faiss.js';
import { FieldIndex, type FieldContext, type SnapshotRule } from './field-index.js';
import { readSnapshot } from './snapshot.js';
import { fieldKey, shapeOf, type FieldInfo, type VectorFieldSpec } from './vector-field.js';
import { VECTOR_TABLES_SQL, VectorLog, vectorFieldSql } from './vector-log.js';

export { exactSearch, queryVector, type ScoredRow } from './distance.js';
export {
  DEFAULT_EF_SEARCH,
  DEFAULT_M,
  EF_CONSTRUCTION,
  TOMBSTONE_SHARE,
  type FieldInfo,
  type FieldState,
  type VectorFieldSpec,
} from './vector-field.js';
export { vectorFieldSql, type VectorFieldSql } from './vector-log.js';

export interface VectorStoreOptions {
  /** Write nothing (no tables, triggers or snapshots); read the file as the connection's transaction shows it. */
  readonly readOnly: boolean;
  /** Default: the Faiss addon. */
  readonly engine?: VectorEngine;
  /**
   * Work of at most this many floats (vectors × dims) is done on the spot; more runs on Faiss's
   * worker thread while searches of the field scan the rows it does not hold yet. Default 16 384:
   * about 40 vectors of 384 dims, a few milliseconds of HNSW adds on one core.
   */
  readonly syncLimit?: number;
  /**
   * Snapshot when the entries applied since the last reach max(snapshotMinBacklog, snapshotShare ×
   * live) and no write came for snapshotQuietMs, or max(snapshotMinBacklog, SNAPSHOT_LOAD_SHARE ×
   * live) while writes come. Defaults 1 000, 0.1 and 1 000 ms (0: the share rule at once).
   */
  readonly snapshotMinBacklog?: number;
  readonly snapshotShare?: number;
  readonly snapshotQuietMs?: number;
  /** Told of damaged snapshots, snapshots written, builds and failures (for the server's log). */
  readonly onEvent?: (event: VectorStoreEvent) => void;
}

export interface VectorStoreEvent {
  readonly kind: 'snapshot_damaged' | 'triggers_missing' | 'snapshot_written' | 'failed';
  readonly collection: string;
  readonly field: string;
  readonly message: string;
  readonly error?: unknown;
}

export const DEFAULT_SYNC_LIMIT = 16 * 1024;
export const SNAPSHOT_MIN_BACKLOG = 1000;
export const SNAPSHOT_SHARE = 0.1;
export const SNAPSHOT_QUIET_MS = 1000;
export const SNAPSHOT_LOAD_SHARE = 0.5;
/** Up to this many allowed rows, a scan reads them by id; past it, it reads the column through. */
const POINT_READS = 2048;

export class VectorStore {
  readonly #db: Connection;
  readonly #readOnly: boolean;
  readonly #options: VectorStoreOptions;
  readonly #log: VectorLog;
  readonly #fields = new Map<string, FieldIndex>();
  readonly #ctx: FieldContext;
  /** The log's last seq as of the last catchUp. */
  #seen = -1;
  /** Something other than new log entries calls for a catchUp (a job ended, a field failed, a read failed). */
  #dirty = false;
  /** The last catchUp could not read the log: the indexes may lack committed changes, and searches scan the rows. */
  #behind = false;
  #closed = false;
  readonly #snapshotRule: SnapshotRule;
  /** Set while a snapshot waits for writes to pause: a catchUp when they have. */
  #quietTimer: NodeJS.Timeout | undefined;

  private constructor(db: Connection, options: VectorStoreOptions) {
    this.#db = db;
    this.#readOnly = options.readOnly;
    this.#options = options;
    this.#log = new VectorLog(db);
    this.#snapshotRule = {
      minBacklog: options.snapshotMinBacklog ?? SNAPSHOT_MIN_BACKLOG,
      share: options.snapshotShare ?? SNAPSHOT_SHARE,
      quietMs: options.snapshotQuietMs ?? SNAPSHOT_QUIET_MS,
      loadShare: Math.max(options.snapshotShare ?? SNAPSHOT_SHARE, SNAPSHOT_LOAD_SHARE),
    };
    this.#ctx = {
      db,
      engine: options.engine ?? faiss,
      log: this.#log,
      syncLimit: options.syncLimit ?? DEFAULT_SYNC_LIMIT,
      readOnly: options.readOnly,
      jobDone: (field) => this.#jobDone(field),
      failed: (field, what, error) => this.#failed(field, what, error),
      stored: (field, bytes) => this.#stored(field, bytes),
    };
  }

  /**
   * Opens the indexes of `fields`: each from its snapshot and the log after it, or built from the
   * rows. A writable store creates its tables, and the triggers of a field that lacks them (a file
   * from before; its index is then built from the rows). Large builds and replays go on in the
   * background (idle() awaits them); searches are right meanwhile. Throws `vector_engine` when the
   * Faiss addon is missing.
   */
  static open(db: Connection, fields: readonly VectorFieldSpec[], options: VectorStoreOptions): VectorStore {
    const store = new VectorStore(db, options);
    try {
      if (!store.#readOnly) {
        store.#assertOutsideTransaction('open');
        db.transaction(() => VECTOR_TABLES_SQL.forEach((sql) => db.exec(sql)))();
        store.#log.created();
      }
      store.sync(fields);
    } catch (err) {
      store.#dispose();
      throw err;
    }
    return store;
  }

  /**
   * After a schema change has committed: the `@hnsw` fields now. New ones get an index (from the
   * rows they hold), dropped ones are freed, one whose dims, metric or m changed is built again; a
   * changed ef only changes the default of later searches.
   */
  sync(fields: readonly VectorFieldSpec[]): void {
    this.#assertOpen();
    this.#assertOutsideTransaction('sync');
    const wanted = new Map(fields.map((spec) => [fieldKey(spec.collection, spec.field), spec]));
    for (const [key, field] of this.#fields) {
      const spec = wanted.get(key);
      if (spec !== undefined && shapeOf(spec) === shapeOf(field.spec)) {
        field.spec = spec;
        continue;
      }
      field.dispose();
      this.#fields.delete(key);
    }
    for (const [key, spec] of wanted) if (!this.#fields.has(key)) this.#fields.set(key, this.#openField(spec));
    this.#dirty = true;
    this.catchUp();
  }

  /**
   * Applies the log entries written since the last call: call it after every write statement commits
   * (not inside a transaction). One indexed read when nothing changed. May write a snapshot. Never
   * throws for a log it cannot read: the write it follows has committed, and must be answered as
   * done. The failure is told (once, until a catch-up succeeds), searches scan the rows meanwhile, and
   * the next catch-up (a write, a search, idle) reads the log again from where the indexes stand.
   */
  catchUp(): void {
    if (this.#closed) return;
    this.#assertOutsideTransaction('catchUp');
    try {
      this.#takeLog();
    } catch (err) {
      if (!this.#behind)
        this.#event({
          kind: 'failed',
          collection: '',
          field: '',
          message: `reading the vector log failed: ${err instanceof Error ? err.message : String(err)}; searches scan the rows until it reads again`,
          error: err,
        });
      this.#behind = true;
      this.#dirty = true;
      return;
    }
    this.#behind = false;
    for (const field of this.#fields.values()) {
      try {
        field.pump();
      } catch (err) {
        this.#failed(field, 'adding vectors', err); // the field's searches scan the rows it does not hold
      }
    }
    if (this.#readOnly) return;
    const now = performance.now();
    let wake = Infinity;
    for (const field of this.#fields.values()) {
      const due = field.snapshotDueAt(this.#snapshotRule, now);
      if (due === 0) this.#snapshot(field);
      else if (due !== undefined) wake = Math.min(wake, due);
    }
    this.#wakeAt(wake, now);
  }

  /** Settles ended jobs and takes the log's new entries into the fields (catchUp); throws what SQLite throws. */
  #takeLog(): void {
    for (const field of this.#fields.values()) if (field.settle()) this.#dirty = true;
    const max = this.#log.maxSeq();
    if (max === this.#seen && !this.#dirty) return;
    this.#dirty = false;
    const accepting = [...this.#fields.values()].filter((f) => f.accepting);
    if (accepting.length > 0) {
      const from = Math.min(...accepting.map((f) => f.seq));
      const rows = new Map<FieldIndex, Set<number>>();
      if (from < max) {
        for (const entry of this.#log.entries(from, max)) {
          const field = this.#fields.get(fieldKey(entry.collection, entry.field));
          if (field === undefined || entry.seq <= field.seq) continue;
          let ids = rows.get(field);
          if (ids === undefined) rows.set(field, (ids = new Set()));
          ids.add(entry.row_id);
        }
      }
      for (const field of accepting) field.take(rows.get(field) ?? new Set(), max);
    }
    this.#seen = max;
  }

  /**
   * The k nearest rows to `query` by the field's metric, best first, with `_score` (cosine: the
   * similarity; l2: 1/(1+d); ip: the inner product). `allowedRowIds`: only these rows (ids without a
   * vector are ignored); null or undefined: every row. Returns min(k, rows allowed) rows, never a
   * deleted one or one under a vector it no longer has. Refuses a query of another length
   * (`vector_length`) and a zero query on a cosine field (`invalid_value`).
   */
  search(
    collection: string,
    field: string,
    query: ArrayLike<number>,
    k: number,
    allowedRowIds?: Iterable<number> | null,
    efSearch?: number,
  ): ScoredRow[] {
    this.#assertOpen();
    const index = this.#fields.get(fieldKey(collection, field));
    assert(index !== undefined, `${collection}.${field} is not an @hnsw field of this store`);
    assert(Number.isInteger(k) && k >= 0, `k must be a whole number ≥ 0, not ${k}`);
    const { dims, metric } = index.spec;
    const q = queryVector(query, dims, field, metric);
    if (k === 0) return [];
    // Read at most once whichever way the search goes: a generator would be spent by the first.
    const allowed =
      allowedRowIds === null ||
      allowedRowIds === undefined ||
      Array.isArray(allowedRowIds) ||
      allowedRowIds instanceof Set
        ? allowedRowIds
        : [...allowedRowIds];
    const mayCatchUp = this.#readOnly || !this.#db.inTransaction;
    if (mayCatchUp) this.catchUp();
    // Inside a write transaction the log may hold entries not taken yet: the rows are the answer.
    const behind = this.#behind || (!mayCatchUp && index.seq < this.#log.maxSeqOf(collection, field));
    const answer = behind ? null : index.search(q, k, allowed, efSearch);
    if (answer !== null && answer.pending.size === 0) return answer.found;
    let rows: Iterable<StoredVector>;
    if (answer !== null) {
      // The index answers for the rows it holds; the rows it does not hold yet are scanned, and only those.
      const set =
        allowed === null || allowed === undefined
          ? null
          : allowed instanceof Set
            ? (allowed as Set<number>)
            : new Set(allowed);
      rows = index.rows.only(set === null ? answer.pending : filter(answer.pending, (rowId) => set.has(rowId)));
      return best([...answer.found, ...exactSearch(rows, q, metric, k, field)], k);
    }
    rows = index.rows.scan();
    if (allowed !== null && allowed !== undefined) {
      const set = allowed instanceof Set ? (allowed as Set<number>) : new Set(allowed);
      rows = set.size <= POINT_READS ? index.rows.only(set) : filter(rows, (r) => set.has(r.rowId));
    }
    return exactSearch(rows, q, metric, k, field);
  }

  /**
   * Builds the field's index again from the rows, without tombstones (compact). Resolves once the
   * new index serves (and, writable, is stored). Not inside a transaction.
   */
  async rebuild(collection: string, field: string): Promise<void> {
    this.#assertOpen();
    const index = this.#fields.get(fieldKey(collection, field));
    assert(index !== undefined, `${collection}.${field} is not an @hnsw field of this store`);
    await this.#settled(index);
    if (this.#closed || this.#fields.get(index.key) !== index) return; // closed, or the field dropped, meanwhile
    index.build();
    this.#dirty = true;
    await this.#settled(index);
    this.catchUp(); // applies what came meanwhile, and stores the new index
  }

  /**
   * rebuild() on the spot, the new index stored before it returns, for an index of at most syncLimit
   * floats with nothing in the background; false (nothing done) otherwise. Not inside a transaction.
   */
  rebuildNow(collection: string, field: string): boolean {
    this.#assertOpen();
    const index = this.#fields.get(fieldKey(collection, field));
    assert(index !== undefined, `${collection}.${field} is not an @hnsw field of this store`);
    this.catchUp();
    if (!index.rebuildNow()) return false;
    this.catchUp(); // stores the new index
    return true;
  }

  /** Resolves when no background job runs (each has been settled). Not inside a write transaction. */
  async idle(): Promise<void> {
    // A catch-up may start work (the snapshot due once a build ends): idle only when one started none.
    while (!this.#closed) {
      this.catchUp();
      const jobs = [...this.#fields.values()].flatMap((f) => (f.pending === undefined ? [] : [f.pending]));
      if (jobs.length === 0) return;
      await Promise.all(jobs);
    }
  }

  info(collection: string, field: string): FieldInfo | undefined {
    return this.#fields.get(fieldKey(collection, field))?.info();
  }

  /**
   * Applies what the log holds, stores every index that changed (writable), and frees them all. Before the connection
   * closes.
   */
  close(): void {
    if (this.#closed) return;
    if (!this.#readOnly && !this.#db.inTransaction && this.#db.open) {
      try {
        this.catchUp();
        for (const field of this.#fields.values()) if (field.unsaved) this.#snapshot(field, true);
      } catch (err) {
        this.#event({
          kind: 'failed',
          collection: '',
          field: '',
          message: `storing vector indexes at close: ${String(err)}`,
          error: err,
        });
      }
    }
    this.#dispose();
  }

  #openField(spec: VectorFieldSpec): FieldIndex {
    const field = new FieldIndex(spec, this.#ctx);
    let trusted = this.#log.exists;
    if (!this.#log.hasTriggers(spec.collection, spec.field)) {
      trusted = false;
      if (!this.#readOnly) {
        this.#event({
          ...names(spec),
          kind: 'triggers_missing',
          message: `${spec.collection}.${spec.field} had no vector log triggers; created, and the index built from the rows`,
        });
        const { create } = vectorFieldSql(spec.collection, spec.field, spec.table);
        this.#db.transaction(() => create.forEach((sql) => this.#db.exec(sql)))();
      }
    }
    const snapshot = trusted ? readSnapshot(this.#db, spec.collection, spec.field) : undefined;
    if (snapshot !== undefined && !field.load(snapshot)) {
      this.#event({
        ...names(spec),
        kind: 'snapshot_damaged',
        message: `the stored index of ${spec.collection}.${spec.field} is damaged; building it from the rows`,
      });
    }
    if (field.info().seq < 0) {
      try {
        field.build();
      } catch (err) {
        field.dispose();
        throw err;
      }
    }
    return field;
  }

  /** Stores the field's index: on the spot (now, or when small), else in the background (see FieldIndex.snapshot). */
  #snapshot(field: FieldIndex, now = false): void {
    try {
      const bytes = field.snapshot(now);
      if (bytes !== undefined) this.#stored(field, bytes);
    } catch (err) {
      this.#failed(field, 'storing a snapshot', err);
    }
  }

  #stored(field: FieldIndex, bytes: number): void {
    this.#event({
      ...names(field.spec),
      kind: 'snapshot_written',
      message: `stored the index of ${field.spec.collection}.${field.spec.field} at seq ${field.info().snapshotSeq}: ${bytes} bytes`,
    });
  }

  /** Waits until the field has no job, settling each. */
  async #settled(field: FieldIndex): Promise<void> {
    for (let pending = field.pending; pending !== undefined && !this.#closed; pending = field.pending) {
      await pending;
      this.catchUp();
    }
  }

  /**
   * Runs a catchUp at `at` (performance.now()), when a snapshot waits for writes to pause; a later catchUp sets it
   * again.
   */
  #wakeAt(at: number, now: number): void {
    clearTimeout(this.#quietTimer);
    this.#quietTimer = undefined;
    if (at === Infinity) return;
    this.#quietTimer = setTimeout(
      () => {
        this.#quietTimer = undefined;
        if (this.#closed || this.#db.inTransaction || !this.#db.open) return; // the next catchUp looks again
        try {
          this.catchUp();
        } catch (err) {
          this.#event({
            kind: 'failed',
            collection: '',
            field: '',
            message: `storing vector indexes after writes paused: ${String(err)}`,
            error: err,
          });
        }
      },
      Math.max(0, at - now),
    );
    this.#quietTimer.unref();
  }

  #jobDone(field: FieldIndex): void {
    this.#dirty = true;
    if (this.#closed || this.#fields.get(field.key) !== field) return;
    if (!this.#readOnly && this.#db.inTransaction) return; // settled by the next catchUp or search
    try {
      this.catchUp();
    } catch (err) {
      this.#failed(field, 'settling a background job', err);
    }
  }

  #failed(field: FieldIndex, what: string, error: unknown): void {
    this.#dirty = true;
    const reason = error instanceof Error ? error.message : String(error);
    this.#event({
      ...names(field.spec),
      kind: 'failed',
      message: `${what} for ${field.spec.collection}.${field.spec.field} failed: ${reason}`,
      error,
    });
  }

  #event(event: VectorStoreEvent): void {
    try {
      this.#options.onEvent?.(event);
    } catch {
      // a listener's fault is not the store's
    }
  }

  #dispose(): void {
    this.#closed = true;
    clearTimeout(this.#quietTimer);
    this.#quietTimer = undefined;
    for (const field of this.#fields.values()) field.dispose();
    this.#fields.clear();
  }

  #assertOpen(): void {
    assert(!this.#closed, 'the vector store is closed');
  }

  #assertOutsideTransaction(what: string): void {
    assert(
      this.#readOnly || !this.#db.inTransaction,
      `VectorStore.${what} inside a write transaction would read uncommitted log entries`,
    );
  }
}

function names(spec: VectorFieldSpec): { collection: string; field: string } {
  return { collection: spec.collection, field: spec.field };
}

function* filter<T>(items: Iterable<T>, keep: (item: T) => boolean): IterableIterator<T> {
  for (const item of items) if (keep(item)) yield item;
}

/** The k best of rows scored on one scale, best first (ties by row id, as an exact scan orders them). */
function best(rows: ScoredRow[], k: number): ScoredRow[] {
  return rows.sort((a, b) => b.score - a.score || a.rowId - b.rowId).slice(0, k);
}
