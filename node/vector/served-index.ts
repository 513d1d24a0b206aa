/**
 * The index a field serves searches from (field-index.ts): a Faiss index and its label map, the jobs
 * that fill it on Faiss's worker thread, the gathering of rows into a batch for it, and its search.
 */
import type { VectorIndex } from './vector-index.js';
import { scoreOf, type ScoredRow } from './distance.js';
import { vectorDigest, type LabelMap } from './label-map.js';
import { DEFAULT_EF_SEARCH, type VectorFieldSpec } from './vector-field.js';
import { VectorBatch, type VectorRows } from './vector-rows.js';

export interface Served {
  readonly index: VectorIndex;
  readonly labels: LabelMap;
}

export interface JobBase {
  done: Promise<void>;
  /** 'ok', or the error the job ended with; undefined while it runs. */
  outcome?: unknown;
}
export interface AddJob extends JobBase {
  readonly kind: 'add';
  readonly target: Served;
  /** The batch's labels: first … first + labels - 1, one per distinct vector. */
  readonly first: number;
  readonly labels: number;
  /** The rows the batch was gathered for (those gone or without a vector included). */
  readonly rows: number;
  /** How many of the labels are live already (the parts the addon has added, seen at a search). */
  activated: number;
}
export interface SerializeJob extends JobBase {
  readonly kind: 'serialize';
  readonly seq: number;
  readonly labels: Buffer;
  bytes?: Buffer;
}

/** A rebuild beside the served index: the new index, and the rows still to add to it. */
export interface Rebuild {
  readonly candidate: Served;
  readonly rowIds: readonly number[];
  next: number;
}

/** What a search of the served index found, and the rows it does not hold yet (to scan). */
export interface IndexAnswer {
  readonly found: ScoredRow[];
  readonly pending: ReadonlySet<number>;
}

/**
 * The rows' vectors as the file holds them now (rows gone or without a vector are left out), for
 * target's index: a row whose vector the index, or this batch, holds already joins that vector's
 * label; each other vector gets a pending label (from target's size on, in batch order) and goes
 * into the batch.
 */
export function gather(
  target: Served,
  rows: VectorRows,
  spec: VectorFieldSpec,
  rowIds: readonly number[],
): VectorBatch {
  const batch = new VectorBatch(spec.dims, spec.metric === 'cosine');
  for (const { rowId, blob } of rows.gather(rowIds)) {
    const digest = vectorDigest(blob);
    const label = target.labels.shared(digest);
    if (label !== undefined) target.labels.attach(rowId, label);
    else if (batch.push(rowId, blob)) target.labels.append(rowId, digest, true);
  }
  return batch;
}

/** The k best live rows the served index holds (of `allowed` when given), best first, ties by id. */
export function searchServed(
  served: Served,
  spec: VectorFieldSpec,
  query: Float32Array,
  k: number,
  allowed: Iterable<number> | null | undefined,
  efSearch: number | undefined,
): ScoredRow[] {
  const { index, labels } = served;
  let allow: Uint8Array | undefined;
  let candidates = labels.liveLabels;
  if (allowed !== null && allowed !== undefined) ({ bits: allow, count: candidates } = labels.bitmapOf(allowed));
  else if (labels.liveLabels < labels.size) allow = labels.liveBitmap(); // dead or pending labels
  const out: ScoredRow[] = [];
  if (Math.min(k, candidates) > 0) {
    const found = index.search(query, Math.min(k, candidates), {
      efSearch: efSearch ?? spec.ef ?? DEFAULT_EF_SEARCH,
      ...(allow === undefined ? {} : { allow }),
    });
    let only: ReadonlySet<number> | null | undefined;
    for (let i = 0; i < found.labels.length; i++) {
      const label = found.labels[i]!;
      if (label < 0 || !labels.isLive(label)) continue;
      const score = scoreOf(spec.metric, found.distances[i]!);
      // A label of one row is allowed (the bitmap says so); one that rows of equal vectors share
      // answers its k lowest ids the caller may read (a set of them made only then).
      if (labels.rowCount(label) > 1)
        only ??=
          allowed === null || allowed === undefined
            ? null
            : allowed instanceof Set
              ? (allowed as Set<number>)
              : new Set(allowed);
      for (const rowId of labels.lowestRows(label, k, only ?? null)) out.push({ rowId, score });
    }
  }
  // Best first, ties by id as an exact scan orders them; a shared label may have brought more than k.
  out.sort((a, b) => b.score - a.score || a.rowId - b.rowId);
  if (out.length > k) out.length = k;
  return out;
}
