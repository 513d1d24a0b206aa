/**
 * The vector index of one `@hnsw` field: a Faiss HNSW index with its label map, the rows it does
 * not hold yet, and at most one background job.
 *
 * The index that answers searches ("served") holds the vectors of its live labels. A log entry says
 * "look at this row again": taking it tombstones the row's label at once and queues the row; the
 * queued rows are added as they are then (read from the file), so applying an entry twice, or late,
 * changes nothing. A search answers from the served index for the rows it holds and scans exactly
 * the rows it does not hold yet (queued, or in an add still running): right at every moment, and
 * costing in proportion to what is pending, not to the whole field.
 *
 * Work of at most `syncLimit` floats is done on the spot; more runs as a job on Faiss's worker
 * thread, in batches of at most JOB_FLOATS, while searches go on beside it (the addon lets a search
 * wait for at most one part of an add):
 *
 * - `add`: a batch of queued rows into the served index. Rows committed meanwhile queue for the
 *   next batch: a load that runs ahead of the index is added to it, never built again from all rows.
 * - a build from the rows (open without a snapshot, a new field, a failed index) starts a new
 *   empty served index with every row queued: the same adds, one index per load.
 * - a rebuild (compact, tombstones past TOMBSTONE_SHARE) fills a new index in batches beside the
 *   served one, which keeps answering while the rows changed meanwhile queue; at the swap they are
 *   queued for the new index.
 * - `serialize`: a large snapshot's bytes, taken on the worker thread, then written part by part.
 */
import assert from 'node:assert/strict';
import type { VectorEngine, VectorIndex, VectorIndexOptions } from './vector-index.js';
import type { Connection } from '../storage/sqlite.js';
import { isDamagedIndexError } from './faiss.js';
import { LabelMap } from './label-map.js';
import {
  gather,
  searchServed,
  type AddJob,
  type IndexAnswer,
  type Rebuild,
  type SerializeJob,
  type Served,
} from './served-index.js';
import { writeSnapshot, writeSnapshotInParts, type SnapshotData, type StoredSnapshot } from './snapshot.js';
import type { VectorLog } from './vector-log.js';
import {
  DEFAULT_EF_SEARCH,
  DEFAULT_M,
  EF_CONSTRUCTION,
  fieldKey,
  shapeOf,
  TOMBSTONE_SHARE,
  type FieldInfo,
  type FieldState,
  type VectorFieldSpec,
} from './vector-field.js';
import { VectorRows } from './vector-rows.js';

/** When a field's index is stored (store.ts, "Snapshot rule"). */
export interface SnapshotRule {
  /** No snapshot for fewer changed rows than this. */
  readonly minBacklog: number;
  /** Once writes have stopped for quietMs: a snapshot when changed ≥ share × live. */
  readonly share: number;
  readonly quietMs: number;
  /** While writes arrive: a snapshot when changed ≥ loadShare × live. */
  readonly loadShare: number;
}

/** What a field needs from its store. */
export interface FieldContext {
  readonly db: Connection;
  readonly engine: VectorEngine;
  readonly log: VectorLog;
  readonly syncLimit: number;
  readonly readOnly: boolean;
  /** A job ended (after its outcome is recorded): the store settles it when it may touch the log. */
  jobDone(field: FieldIndex): void;
  failed(field: FieldIndex, what: string, error: unknown): void;
  /** A snapshot was stored (bytes), for the log. */
  stored(field: FieldIndex, bytes: number): void;
}

/**
 * Floats one background add takes: 256 K, about 680 vectors of 384 dims (1 MB read from the file to
 * gather them on the serving thread, about a millisecond); the rest waits for the next.
 */
export const JOB_FLOATS = 1 << 18;
/** Index bytes up to which a snapshot is serialized and written on the spot (a few milliseconds). */
export const SYNC_SNAPSHOT_BYTES = 1 << 20;

export class FieldIndex {
  readonly key: string;
  #spec: VectorFieldSpec;
  readonly #ctx: FieldContext;
  readonly #rows: VectorRows;
  #served: Served | null = null;
  /** Every log entry of the field up to seq is taken: applied to the served index, in its add job, or queued. */
  #seq = -1;
  #snapshotSeq = -1;
  /** Rows applied since the snapshot. */
  #changed = 0;
  /** Built from the rows since the snapshot: worth storing now. */
  #rebuilt = false;
  /** When (performance.now()) entries last brought rows. */
  #lastWrite = -Infinity;
  /** Rows whose entries are taken but that no add holds yet; their old labels are dead already. */
  #queued = new Set<number>();
  #job: AddJob | SerializeJob | null = null;
  #rebuild: Rebuild | null = null;
  /** A snapshot being written part by part. */
  #storing: Promise<void> | null = null;
  #failed = false;
  #disposed = false;

  constructor(spec: VectorFieldSpec, ctx: FieldContext) {
    this.key = fieldKey(spec.collection, spec.field);
    this.#spec = spec;
    this.#ctx = ctx;
    this.#rows = new VectorRows(ctx.db, spec.table, spec.field);
  }

  get spec(): VectorFieldSpec {
    return this.#spec;
  }

  /** A new ef (the only annotation that may change without a new index). */
  set spec(spec: VectorFieldSpec) {
    assert(shapeOf(spec) === shapeOf(this.#spec), 'a field of another shape needs a new index');
    this.#spec = spec;
  }

  get rows(): VectorRows {
    return this.#rows;
  }

  get seq(): number {
    return this.#seq;
  }

  /** Takes log entries: it has a served index. */
  get accepting(): boolean {
    return this.#served !== null;
  }

  /** What runs in the background (a job, a snapshot being stored), or undefined. */
  get pending(): Promise<void> | undefined {
    return this.#job?.done ?? this.#storing ?? undefined;
  }

  /** Rows whose vectors the served index does not hold yet. */
  get backlog(): number {
    this.#progress();
    return this.#queued.size + (this.#served?.labels.pendingCount ?? 0);
  }

  info(): FieldInfo {
    const labels = this.#served?.labels;
    const backlog = this.backlog;
    const building = this.#rebuild !== null;
    // A snapshot being stored leaves it ready: the index holds every row, and `schema` (which a loader
    // waits on) must not say that a build runs while the bytes of a finished one are written.
    const state: FieldState = building
      ? 'building'
      : backlog > 0 || this.#job?.kind === 'add'
        ? 'adding'
        : this.#failed
          ? 'failed'
          : 'ready';
    return {
      state,
      serving: this.accepting,
      ntotal: labels?.size ?? 0,
      live: labels?.liveCount ?? 0,
      tombstones: labels?.deadCount ?? 0,
      pending: backlog,
      seq: this.#served === null ? -1 : this.#seq,
      snapshotSeq: this.#snapshotSeq,
    };
  }

  /**
   * Serves a stored snapshot; false (and the caller builds from the rows) when its bytes are damaged or of another
   * shape.
   */
  load(snapshot: StoredSnapshot): boolean {
    let index: VectorIndex;
    try {
      index = this.#ctx.engine.deserialize(snapshot.index);
    } catch (err) {
      if (isDamagedIndexError(err)) return false;
      throw err;
    }
    const fits =
      index.kind === 'hnsw' && index.dims === this.#spec.dims && index.metric === this.#indexOptions().metric;
    const labels = fits ? LabelMap.decode(snapshot.labels, shapeOf(this.#spec), index.ntotal) : null;
    if (labels === null) {
      index.dispose();
      return false;
    }
    this.#serve({ index, labels }, snapshot.seq);
    this.#snapshotSeq = snapshot.seq;
    this.#rebuilt = false;
    return true;
  }

  /**
   * Builds the index from every row. Without a served index: a new empty one is served at once,
   * every row queued (added on the spot when few, else in background batches). With one: a rebuild
   * beside it (see Rebuild). Throws what the engine throws when creating the index (the addon missing).
   */
  build(): void {
    if (this.#rebuild !== null) return; // one runs already, and reads every row
    // The rows read from now on reflect every entry written so far.
    const seq = Math.max(this.#ctx.log.maxSeq(), this.#seq);
    const fresh: Served = { index: this.#ctx.engine.create(this.#indexOptions()), labels: new LabelMap() };
    const rowIds = this.#rows.ids();
    this.#failed = false;
    if (this.#served === null) {
      this.#served = fresh;
      this.#seq = seq;
      this.#queued = new Set(rowIds);
      this.#rebuilt = true;
    } else {
      this.#rebuild = { candidate: fresh, rowIds, next: 0 };
    }
    this.pump();
  }

  /**
   * Builds the served index again from the rows on the spot, when it has nothing in the background
   * and its rows hold at most `syncLimit` floats; false (nothing done) otherwise. The caller has
   * caught up with the log.
   */
  rebuildNow(): boolean {
    if (this.#served === null || this.#job !== null || this.#rebuild !== null || this.#storing !== null) return false;
    const rowIds = this.#rows.ids();
    if (rowIds.length * this.#spec.dims > this.#ctx.syncLimit) return false;
    const fresh: Served = { index: this.#ctx.engine.create(this.#indexOptions()), labels: new LabelMap() };
    this.#serve(fresh, Math.max(this.#ctx.log.maxSeq(), this.#seq));
    this.#queued = new Set();
    this.#applyNow(fresh, rowIds);
    this.#rebuilt = true;
    this.#failed = false;
    return true;
  }

  /** Takes the field's log entries after seq up to upTo: their rows' labels die now, and the rows queue. */
  take(rowIds: ReadonlySet<number>, upTo: number): void {
    if (this.#served === null) return;
    const { labels } = this.#served;
    if (rowIds.size > 0) this.#lastWrite = performance.now();
    for (const rowId of rowIds) {
      labels.tombstone(rowId);
      this.#queued.add(rowId);
    }
    this.#seq = Math.max(this.#seq, upTo);
  }

  /**
   * Starts what is due and may start: the next batch of a rebuild, an add of the queued rows (on the
   * spot when small), a snapshot, a rebuild once tombstones pass their share. Never inside a write
   * transaction (it reads rows as committed).
   */
  pump(): void {
    if (this.#disposed || this.#job !== null) return;
    const rebuild = this.#rebuild;
    if (rebuild !== null && this.#served !== null) {
      const step = this.#jobRows();
      while (this.#job === null && rebuild.next < rebuild.rowIds.length) {
        const rows = rebuild.rowIds.slice(rebuild.next, rebuild.next + step);
        rebuild.next += rows.length;
        this.#startAdd(rebuild.candidate, this.#take(rows));
      }
      if (this.#job !== null) return;
      this.#swap(rebuild);
    }
    while (this.#job === null && this.#served !== null && this.#queued.size > 0) {
      const now = this.#queued.size * this.#spec.dims <= this.#ctx.syncLimit;
      const rows = this.#takeQueued(now ? this.#queued.size : this.#jobRows());
      if (now) this.#applyNow(this.#served, rows);
      else this.#startAdd(this.#served, rows);
    }
    const labels = this.#served?.labels;
    if (this.#job === null && labels !== undefined && labels.deadCount > TOMBSTONE_SHARE * labels.size)
      this.#tryBuild();
  }

  /** Records a finished job's outcome; true when there was one. The store then catches up and pumps. */
  settle(): boolean {
    const job = this.#job;
    if (job === null || job.outcome === undefined) return false;
    this.#job = null;
    if (job.kind === 'serialize') {
      if (job.outcome !== 'ok') this.#ctx.failed(this, 'storing a snapshot', job.outcome);
      else
        this.#store({
          collection: this.#spec.collection,
          field: this.#spec.field,
          seq: job.seq,
          index: job.bytes!,
          labels: job.labels,
          trimTo: job.seq,
        });
      return true;
    }
    if (job.outcome === 'ok') {
      job.target.labels.activate(job.first + job.activated, job.first + job.labels);
      if (job.target === this.#served) this.#changed += job.rows;
    } else if (job.target === this.#served) {
      this.#ctx.failed(this, 'adding vectors', job.outcome);
      this.#queueJobRows(job);
      this.#dropServed();
      this.#tryBuild();
    } else {
      // The rebuild's new index failed: the served one goes on.
      this.#ctx.failed(this, 'building the index', job.outcome);
      this.#rebuild?.candidate.index.dispose();
      this.#rebuild = null;
      this.#failed = true;
    }
    return true;
  }

  /**
   * The k best live rows the served index holds (of `allowed` when given), and the rows it does not
   * hold yet, for the caller to scan; null when there is no served index.
   */
  search(
    query: Float32Array,
    k: number,
    allowed: Iterable<number> | null | undefined,
    efSearch: number | undefined,
  ): IndexAnswer | null {
    if (this.#served === null) return null;
    this.#progress();
    const pending = this.#pendingRows();
    return { found: searchServed(this.#served, this.#spec, query, k, allowed, efSearch), pending };
  }

  /**
   * When a snapshot is due by the store's rule (store.ts): 0 for now; a time (performance.now()) at
   * which it will be if no write comes before; undefined when it is not (or the index is not idle).
   */
  snapshotDueAt(rule: SnapshotRule, now: number): number | undefined {
    if (!this.#idle()) return undefined;
    const live = this.#served!.labels.liveCount;
    if (this.#rebuilt || this.#changed >= Math.max(rule.minBacklog, rule.loadShare * live)) return 0;
    if (this.#changed < Math.max(rule.minBacklog, rule.share * live)) return undefined;
    const quietAt = this.#lastWrite + rule.quietMs;
    return quietAt <= now ? 0 : quietAt;
  }

  /** True when the served index holds anything the stored snapshot does not. */
  get unsaved(): boolean {
    return this.#idle() && (this.#rebuilt || this.#changed > 0 || this.#snapshotSeq < 0);
  }

  /**
   * Stores the served index as of seq: a small one on the spot, a large one serialized on the
   * worker thread and written part by part. The caller holds no transaction and has checked unsaved
   * or snapshotDueAt. `now`: on the spot whatever the size (at close). Answers the bytes stored on the
   * spot, or undefined when it goes on in the background.
   */
  snapshot(now = false): number | undefined {
    assert(this.#idle(), 'no index to store, or one that a job holds');
    const { index, labels } = this.#served!;
    const data = { seq: this.#seq, labels: labels.encode(shapeOf(this.#spec)) };
    const clean = { changed: this.#changed, rebuilt: this.#rebuilt };
    this.#changed = 0;
    this.#rebuilt = false;
    if (now || this.#estimatedBytes() <= SYNC_SNAPSHOT_BYTES) {
      const bytes = index.serialize();
      try {
        writeSnapshot(this.#ctx.db, {
          collection: this.#spec.collection,
          field: this.#spec.field,
          ...data,
          index: bytes,
          trimTo: data.seq,
        });
      } catch (err) {
        this.#changed += clean.changed;
        this.#rebuilt ||= clean.rebuilt;
        throw err;
      }
      this.#snapshotSeq = data.seq;
      return bytes.length;
    }
    const job: SerializeJob = { kind: 'serialize', ...data, done: Promise.resolve() };
    job.done = (async () => {
      try {
        job.bytes = await index.serializeAsync();
        job.outcome = 'ok';
      } catch (err) {
        job.outcome = err;
      }
      if (this.#disposed) {
        this.#job = null;
        index.dispose();
        return;
      }
      this.#ctx.jobDone(this);
    })();
    this.#job = job;
    return undefined;
  }

  /** Frees the indexes now, or (one a job holds) when the job ends. Searches and catch-ups stop. */
  dispose(): void {
    this.#disposed = true;
    const held = this.#job === null ? null : this.#job.kind === 'add' ? this.#job.target : this.#served;
    if (this.#served !== held) this.#dropServed();
    if (this.#rebuild !== null && this.#rebuild.candidate !== held) this.#rebuild.candidate.index.dispose();
    this.#rebuild = null;
  }

  #idle(): boolean {
    return (
      this.#served !== null &&
      this.#job === null &&
      this.#queued.size === 0 &&
      this.#rebuild === null &&
      this.#storing === null
    );
  }

  #indexOptions(): VectorIndexOptions {
    return {
      kind: 'hnsw',
      dims: this.#spec.dims,
      metric: this.#spec.metric === 'l2' ? 'l2' : 'ip',
      m: this.#spec.m ?? DEFAULT_M,
      efConstruction: this.#spec.efConstruction ?? EF_CONSTRUCTION,
      efSearch: this.#spec.ef ?? DEFAULT_EF_SEARCH,
    };
  }

  /** About what the index serializes to: its vectors and its bottom-level links. */
  #estimatedBytes(): number {
    const size = this.#served?.labels.size ?? 0;
    return size * (this.#spec.dims * 4 + 2 * (this.#spec.m ?? DEFAULT_M) * 4);
  }

  #jobRows(): number {
    return Math.max(1, Math.floor(JOB_FLOATS / this.#spec.dims));
  }

  #serve(served: Served, seq: number): void {
    this.#dropServed();
    this.#served = served;
    this.#seq = seq;
  }

  #dropServed(): void {
    this.#served?.index.dispose();
    this.#served = null;
  }

  /** build(), a failure leaving the field to exact scans (a later rebuild tries again). */
  #tryBuild(): void {
    try {
      this.build();
    } catch (err) {
      this.#failed = true;
      this.#ctx.failed(this, 'building the index', err);
    }
  }

  /** Up to n queued rows, in the order they came, out of the queue. */
  #takeQueued(n: number): number[] {
    const rows: number[] = [];
    for (const rowId of this.#queued) {
      if (rows.length >= n) break;
      rows.push(rowId);
    }
    for (const rowId of rows) this.#queued.delete(rowId);
    return rows;
  }

  /** The rows of a rebuild batch that are not queued (those are added after the swap, as they are then). */
  #take(rowIds: readonly number[]): number[] {
    return rowIds.filter((rowId) => !this.#queued.has(rowId));
  }

  /** A failed or abandoned add's rows, back in the queue (their vectors are read again). */
  #queueJobRows(job: AddJob): void {
    for (let label = job.first; label < job.first + job.labels; label++)
      for (const rowId of job.target.labels.rowsOf(label)) this.#queued.add(rowId);
  }

  #applyNow(served: Served, rowIds: readonly number[]): void {
    const expected = served.labels.size;
    const batch = gather(served, this.#rows, this.#spec, rowIds);
    let first = expected;
    try {
      if (batch.count > 0) first = served.index.add(batch.vectors());
    } catch (err) {
      this.#ctx.failed(this, 'adding vectors', err);
      for (const rowId of rowIds) this.#queued.add(rowId);
      this.#dropServed();
      this.#tryBuild();
      return;
    }
    assert(first === expected, `Faiss labelled the batch from ${first}; the map expected ${expected}`);
    served.labels.activate(first, first + batch.count);
    this.#changed += rowIds.length;
  }

  #startAdd(target: Served, rowIds: readonly number[]): void {
    const first = target.labels.size;
    const batch = gather(target, this.#rows, this.#spec, rowIds);
    if (batch.count === 0) {
      if (target === this.#served) this.#changed += rowIds.length;
      return;
    }
    const job: AddJob = {
      kind: 'add',
      target,
      first,
      labels: batch.count,
      rows: rowIds.length,
      activated: 0,
      done: Promise.resolve(),
    };
    job.done = this.#run(job, target.index.addAsync(batch.vectors()), first);
    this.#job = job;
  }

  /** The rebuild's index has every row it read: it is served, and the rows changed meanwhile are queued for it. */
  #swap(rebuild: Rebuild): void {
    this.#rebuild = null;
    const { labels } = rebuild.candidate;
    for (const rowId of this.#queued) labels.tombstone(rowId);
    this.#serve(rebuild.candidate, this.#seq);
    this.#rebuilt = true;
    this.#failed = false;
  }

  /** Makes live the labels of the parts a running add into the served index has added so far. */
  #progress(): void {
    const job = this.#job;
    if (job?.kind !== 'add' || job.target !== this.#served || job.outcome !== undefined) return;
    const added = Math.min(job.labels, job.target.index.ntotal - job.first);
    if (added <= job.activated) return;
    job.target.labels.activate(job.first + job.activated, job.first + added);
    job.activated = added;
  }

  /** Rows the served index does not hold yet: queued, or in the part of a running add not yet added. */
  #pendingRows(): Set<number> {
    const job = this.#job;
    if (job?.kind !== 'add' || job.target !== this.#served || job.activated === job.labels) return this.#queued;
    const pending = new Set(this.#queued);
    for (let label = job.first + job.activated; label < job.first + job.labels; label++)
      for (const rowId of job.target.labels.rowsOf(label)) pending.add(rowId);
    return pending;
  }

  /** Writes a serialized snapshot part by part, then lets the store know. */
  #store(data: SnapshotData): void {
    const storing = (async () => {
      try {
        const stored = await writeSnapshotInParts(this.#ctx.db, data, () => !this.#disposed);
        if (stored) {
          this.#snapshotSeq = data.seq;
          this.#ctx.stored(this, data.index.length);
        }
      } catch (err) {
        this.#ctx.failed(this, 'storing a snapshot', err);
      }
      this.#storing = null;
      if (!this.#disposed) this.#ctx.jobDone(this);
    })();
    this.#storing = storing;
  }

  /** Records the job's outcome, frees what a disposed field no longer needs, and tells the store. */
  async #run(job: AddJob, adding: Promise<number>, expectFirst: number): Promise<void> {
    try {
      const first = await adding;
      job.outcome =
        first === expectFirst
          ? 'ok'
          : new Error(`Faiss labelled the batch from ${first}; the map expected ${expectFirst}`);
    } catch (err) {
      job.outcome = err;
    }
    if (this.#disposed) {
      this.#job = null;
      job.target.index.dispose();
      if (this.#served !== null && this.#served !== job.target) this.#dropServed();
      return;
    }
    this.#ctx.jobDone(this);
  }
}
