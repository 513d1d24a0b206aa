/**
 * The vector index of one `@hnsw` field: a Faiss HNSW index with its label map, the log seq it is in
 * step with, and at most one background job.
 *
 * The index that answers searches ("served") reflects every log entry of its field up to `seq`. Log
 * entries are applied by reading the row as it is now (tombstone the old label, add the new vector),
 * so applying one again, or late, changes nothing. Work of at most `syncLimit` floats is done on the
 * spot; more runs as a job on Faiss's worker thread (addAsync), so that a bulk write or a rebuild does
 * not stall the event loop:
 *
 * - `add`: the served index takes a large batch; it is busy until the job ends, and searches scan
 *   the rows exactly meanwhile.
 * - `build`: a new index from every row, as of log seq S; the served index (if any) keeps answering
 *   and taking small batches. When the job ends the new index is served at S and catches up with the
 *   log after S (the store keeps those entries until then).
 *
 * A field without a usable served index is answered by an exact scan of its rows (store.ts): slower,
 * never wrong.
 */
import assert from 'node:assert/strict';
import type { VectorEngine, VectorIndex, VectorIndexOptions } from '../../shared/vector-index.js';
import type { Connection } from '../storage/sqlite.js';
import { isDamagedIndexError } from './faiss.js';
import { scoreOf, type ScoredRow } from './distance.js';
import { LabelMap } from './label-map.js';
import { writeSnapshot, type StoredSnapshot } from './snapshot.js';
import type { VectorLog } from './vector-log.js';
import { DEFAULT_EF_SEARCH, DEFAULT_M, EF_CONSTRUCTION, fieldKey, shapeOf, TOMBSTONE_SHARE, type FieldInfo, type FieldState, type VectorFieldSpec } from './vector-field.js';
import { VectorBatch, VectorRows } from './vector-rows.js';

/** What a field needs from its store. */
export interface FieldContext {
  readonly db: Connection;
  readonly engine: VectorEngine;
  readonly log: VectorLog;
  readonly syncLimit: number;
  /** A job ended (after its outcome is recorded): the store settles it when it may touch the log. */
  jobDone(field: FieldIndex): void;
  failed(field: FieldIndex, what: string, error: unknown): void;
}

interface Served {
  readonly index: VectorIndex;
  readonly labels: LabelMap;
}

interface JobBase {
  done: Promise<void>;
  /** 'ok', or the error the job ended with; undefined while it runs. */
  outcome?: unknown;
}
interface AddJob extends JobBase {
  readonly kind: 'add';
  readonly upTo: number;
  readonly first: number;
  readonly count: number;
  readonly applied: number;
}
interface BuildJob extends JobBase {
  readonly kind: 'build';
  readonly fromSeq: number;
  readonly candidate: Served;
}

export class FieldIndex {
  readonly key: string;
  #spec: VectorFieldSpec;
  readonly #ctx: FieldContext;
  readonly #rows: VectorRows;
  #served: Served | null = null;
  #seq = -1;
  #snapshotSeq = -1;
  /** Rows applied since the snapshot. */
  #changed = 0;
  /** Built from the rows since the snapshot: worth storing now. */
  #rebuilt = false;
  #job: AddJob | BuildJob | null = null;
  #failed = false;
  #disposed = false;

  constructor(spec: VectorFieldSpec, ctx: FieldContext) {
    this.key = fieldKey(spec.collection, spec.field);
    this.#spec = spec;
    this.#ctx = ctx;
    this.#rows = new VectorRows(ctx.db, spec.collection, spec.field);
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

  /** Takes log entries now: it has a served index that no job holds. */
  get accepting(): boolean {
    return this.#served !== null && this.#job?.kind !== 'add';
  }

  /** The running job's end (settled by the store), or undefined. */
  get pending(): Promise<void> | undefined {
    return this.#job?.done;
  }

  info(): FieldInfo {
    const labels = this.#served?.labels;
    const state: FieldState = this.#job !== null ? (this.#job.kind === 'add' ? 'adding' : 'building') : this.#failed ? 'failed' : 'ready';
    return {
      state,
      serving: this.accepting,
      ntotal: labels?.size ?? 0,
      live: labels?.liveCount ?? 0,
      tombstones: labels?.deadCount ?? 0,
      seq: this.#served === null ? -1 : this.#seq,
      snapshotSeq: this.#snapshotSeq,
    };
  }

  /** Serves a stored snapshot; false (and the caller builds from the rows) when its bytes are damaged or of another shape. */
  load(snapshot: StoredSnapshot): boolean {
    let index: VectorIndex;
    try {
      index = this.#ctx.engine.deserialize(snapshot.index);
    } catch (err) {
      if (isDamagedIndexError(err)) return false;
      throw err;
    }
    const fits = index.kind === 'hnsw' && index.dims === this.#spec.dims && index.metric === this.#indexOptions().metric;
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
   * Builds a new index from every row: on the spot when small, else as a job while the served index
   * (if any) keeps answering. Throws what the engine throws on the spot (the addon missing).
   */
  build(): void {
    assert(this.#job === null, 'one job per field at a time');
    // The rows read now reflect every entry written so far: the last one left in the log, and any a
    // snapshot trimmed (up to the served index's seq).
    const fromSeq = Math.max(this.#ctx.log.maxSeq(), this.#seq);
    const batch = this.#batch();
    for (const { rowId, blob } of this.#rows.scan()) batch.push(rowId, blob);
    const index = this.#ctx.engine.create(this.#indexOptions());
    const labels = new LabelMap();
    const vectors = batch.vectors();
    if (vectors.length <= this.#ctx.syncLimit) {
      try {
        if (batch.count > 0) index.add(vectors);
      } catch (err) {
        index.dispose();
        throw err;
      }
      for (const rowId of batch.rowIds) labels.append(rowId);
      this.#failed = false;
      this.#serve({ index, labels }, fromSeq);
      this.#rebuilt = true;
      return;
    }
    for (const rowId of batch.rowIds) labels.append(rowId);
    const job: BuildJob = { kind: 'build', fromSeq, candidate: { index, labels }, done: Promise.resolve() };
    job.done = this.#run(job, index.addAsync(vectors));
    this.#job = job;
  }

  /** Applies the field's log entries after seq up to upTo: the rows they name, looked at as they are now. */
  catchUp(rowIds: ReadonlySet<number>, upTo: number): void {
    if (!this.accepting) return; // a job, or the build that replaces the index, catches up itself
    const served = this.#served!;
    if (rowIds.size === 0) {
      this.#seq = Math.max(this.#seq, upTo);
    } else if (rowIds.size * this.#spec.dims <= this.#ctx.syncLimit) {
      this.#applyNow(served, rowIds, upTo);
    } else if (this.#job !== null) {
      this.#dropServed(); // too far behind: the running build catches up at its swap
    } else if (rowIds.size >= served.labels.liveCount / 2) {
      this.#dropServed(); // mostly new rows: a build costs little more than adding them
      this.#tryBuild();
    } else {
      this.#startAdd(served, rowIds, upTo);
    }
    const labels = this.#served?.labels;
    if (labels !== undefined && this.#job === null && labels.deadCount > TOMBSTONE_SHARE * labels.size) this.#tryBuild();
  }

  /** Records a finished job's outcome; true when there was one. The store then catches up. */
  settle(): boolean {
    const job = this.#job;
    if (job === null || job.outcome === undefined) return false;
    this.#job = null;
    if (job.kind === 'add') {
      const served = this.#served!;
      if (job.outcome === 'ok') {
        served.labels.activate(job.first, job.first + job.count);
        this.#seq = Math.max(this.#seq, job.upTo);
        this.#changed += job.applied;
      } else {
        this.#ctx.failed(this, 'adding vectors', job.outcome);
        this.#dropServed();
        this.#tryBuild();
      }
    } else if (job.outcome === 'ok') {
      this.#failed = false;
      this.#serve(job.candidate, job.fromSeq);
      this.#rebuilt = true;
    } else {
      job.candidate.index.dispose();
      this.#failed = true;
      this.#ctx.failed(this, 'building the index', job.outcome);
    }
    return true;
  }

  /** The k best live rows (of `allowed` when given), or null when the served index cannot answer now. */
  search(query: Float32Array, k: number, allowed: Iterable<number> | null | undefined, efSearch: number | undefined): ScoredRow[] | null {
    if (!this.accepting) return null;
    const { index, labels } = this.#served!;
    let allow: Uint8Array | undefined;
    let candidates = labels.liveCount;
    if (allowed !== null && allowed !== undefined) ({ bits: allow, count: candidates } = labels.bitmapOf(allowed));
    else if (labels.deadCount > 0) allow = labels.liveBitmap();
    if (Math.min(k, candidates) === 0) return [];
    const found = index.search(query, Math.min(k, candidates), { efSearch: efSearch ?? this.#spec.ef ?? DEFAULT_EF_SEARCH, ...(allow === undefined ? {} : { allow }) });
    const out: ScoredRow[] = [];
    for (let i = 0; i < found.labels.length; i++) {
      const label = found.labels[i]!;
      if (label < 0 || !labels.isLive(label)) continue;
      out.push({ rowId: labels.rowOf(label), score: scoreOf(this.#spec.metric, found.distances[i]!) });
    }
    return out;
  }

  /** True when a snapshot is due: built from the rows since the last, or `changed` ≥ max(minBacklog, share × live). */
  snapshotDue(minBacklog: number, share: number): boolean {
    if (!this.accepting) return false;
    return this.#rebuilt || this.#changed >= Math.max(minBacklog, share * this.#served!.labels.liveCount);
  }

  /** True when the served index holds anything the stored snapshot does not. */
  get unsaved(): boolean {
    return this.accepting && (this.#rebuilt || this.#changed > 0 || this.#snapshotSeq < 0);
  }

  /** Stores the served index as of seq; keeps the log entries a running build will need. The caller holds no transaction. */
  writeSnapshot(): number {
    assert(this.accepting, 'no index to store');
    const { index, labels } = this.#served!;
    const bytes = index.serialize();
    const trimTo = this.#job?.kind === 'build' ? Math.min(this.#seq, this.#job.fromSeq) : this.#seq;
    writeSnapshot(this.#ctx.db, this.#spec.collection, this.#spec.field, this.#seq, bytes, labels.encode(shapeOf(this.#spec)), trimTo);
    this.#snapshotSeq = this.#seq;
    this.#changed = 0;
    this.#rebuilt = false;
    return bytes.length;
  }

  /** Frees the indexes now, or (one held by a job) when the job ends. Searches and catch-ups stop. */
  dispose(): void {
    this.#disposed = true;
    if (this.#job?.kind !== 'add') this.#dropServed(); // else the add job's end frees the index it holds
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

  #batch(): VectorBatch {
    return new VectorBatch(this.#spec.dims, this.#spec.metric === 'cosine');
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

  /** Tombstones the rows' labels and gathers their vectors as the rows hold them now. */
  #gather(labels: LabelMap, rowIds: ReadonlySet<number>): VectorBatch {
    const batch = this.#batch();
    for (const rowId of rowIds) {
      labels.tombstone(rowId);
      const blob = this.#rows.blob(rowId);
      if (blob !== null) batch.push(rowId, blob);
    }
    return batch;
  }

  #applyNow(served: Served, rowIds: ReadonlySet<number>, upTo: number): void {
    const batch = this.#gather(served.labels, rowIds);
    let first = served.labels.size;
    try {
      if (batch.count > 0) first = served.index.add(batch.vectors());
    } catch (err) {
      this.#ctx.failed(this, 'adding vectors', err);
      this.#dropServed();
      this.#tryBuild();
      return;
    }
    assert(first === served.labels.size, `Faiss labelled the batch from ${first}; the map expected ${served.labels.size}`);
    for (const rowId of batch.rowIds) served.labels.append(rowId);
    this.#seq = Math.max(this.#seq, upTo);
    this.#changed += rowIds.size;
  }

  #startAdd(served: Served, rowIds: ReadonlySet<number>, upTo: number): void {
    const batch = this.#gather(served.labels, rowIds);
    if (batch.count === 0) {
      this.#seq = Math.max(this.#seq, upTo);
      this.#changed += rowIds.size;
      return;
    }
    const first = served.labels.size;
    for (const rowId of batch.rowIds) served.labels.append(rowId, true);
    const job: AddJob = { kind: 'add', upTo, first, count: batch.count, applied: rowIds.size, done: Promise.resolve() };
    job.done = this.#run(job, served.index.addAsync(batch.vectors()), first);
    this.#job = job;
  }

  /** Records the job's outcome, frees what a disposed field no longer needs, and tells the store. */
  async #run(job: AddJob | BuildJob, adding: Promise<number>, expectFirst = 0): Promise<void> {
    try {
      const first = await adding;
      job.outcome = first === expectFirst ? 'ok' : new Error(`Faiss labelled the batch from ${first}; the map expected ${expectFirst}`);
    } catch (err) {
      job.outcome = err;
    }
    if (this.#disposed) {
      this.#job = null;
      if (job.kind === 'build') job.candidate.index.dispose();
      this.#dropServed();
      return;
    }
    this.#ctx.jobDone(this);
  }
}
