/**
 * Vectors as stored and as compared: the BLOB form, the query checks, the `_score` of each metric,
 * and the exact scan that serves `near` on a field without `@hnsw` (and an `@hnsw` field whose
 * index is not ready; see store.ts).
 *
 * Scores (docs/fenecql.md, "Answers"): cosine: the cosine similarity; l2: 1/(1+d), d the Euclidean
 * (not squared) distance; ip: the inner product. Higher is better in all three.
 *
 * What is not a vector: a stored BLOB of another length than the field's, or one holding a NaN or an
 * infinity, is treated as no vector at all, by the exact scan and by the index alike (the codec never
 * writes one; a file written by other means may hold one). A zero vector under cosine has no
 * direction: stored, it is indexed as it is and its similarity to every query is 0; as a query it is
 * refused (`invalid_value`), since it would rank every row equal.
 */
import { endianness } from 'node:os';
import type { Metric } from '../../shared/fenecql/ast.js';
import { FenecError } from '../../shared/errors.js';
import { checkFloat32 } from '../storage/codec.js';

export type { Metric };

/** One answer of a vector search: the row and its `_score`. */
export interface ScoredRow {
  readonly rowId: number;
  readonly score: number;
}

const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * The floats of a stored vector<dims>, or null when the BLOB is not one (another length, a component not finite). May
 * share the BLOB's memory.
 */
export function vectorOf(blob: Uint8Array, dims: number): Float32Array | null {
  if (blob.length !== dims * 4) return null;
  let v: Float32Array;
  if (LITTLE_ENDIAN && blob.byteOffset % 4 === 0) {
    v = new Float32Array(blob.buffer, blob.byteOffset, dims);
  } else {
    v = new Float32Array(dims);
    const view = new DataView(blob.buffer, blob.byteOffset, blob.length);
    for (let i = 0; i < dims; i++) v[i] = view.getFloat32(i * 4, true);
  }
  for (let i = 0; i < dims; i++) if (!Number.isFinite(v[i]!)) return null;
  return v;
}

/** Euclidean length, summed in float64. */
export function norm(v: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  return Math.sqrt(sum);
}

/** Writes v scaled to length 1 into out at offset (a zero vector stays zero). */
export function normaliseInto(v: ArrayLike<number>, out: Float32Array, offset: number): void {
  const n = norm(v);
  const scale = n === 0 ? 0 : 1 / n;
  for (let i = 0; i < v.length; i++) out[offset + i] = v[i]! * scale;
}

/**
 * A `near` query as the index takes it: checked against the field's length (`vector_length`), finite
 * and inside float32's range (`invalid_number`), and for cosine scaled to length 1 (a zero vector is
 * refused, `invalid_value`). A fresh copy.
 */
export function queryVector(query: ArrayLike<number>, dims: number, field: string, metric: Metric): Float32Array {
  if (query.length !== dims) {
    throw new FenecError(
      'vector_length',
      `vector has ${query.length} components; field ${field} takes vector<${dims}>`,
    );
  }
  for (let i = 0; i < dims; i++) {
    if (typeof query[i] !== 'number' || !Number.isFinite(query[i])) {
      throw new FenecError('invalid_number', `component ${i} of the vector near ${field} is not a finite number`);
    }
  }
  const q = Float32Array.from(query);
  checkFloat32(q, query, `the vector near ${field}`);
  if (metric !== 'cosine') return q;
  if (norm(q) === 0) {
    throw new FenecError(
      'invalid_value',
      `a zero vector has no direction: near ${field} (cosine) needs a vector with a nonzero component`,
    );
  }
  normaliseInto(q, q, 0);
  return q;
}

/** The `_score` of what Faiss returns: a squared L2 distance, or an inner product (cosine: of normalised vectors). */
export function scoreOf(metric: Metric, distance: number): number {
  return metric === 'l2' ? 1 / (1 + Math.sqrt(Math.max(distance, 0))) : distance;
}

/** The score of one stored vector against a query already through queryVector, by the formulas above. */
function exactScore(metric: Metric, q: Float32Array, v: Float32Array): number {
  let sum = 0;
  if (metric === 'l2') {
    for (let i = 0; i < q.length; i++) {
      const d = q[i]! - v[i]!;
      sum += d * d;
    }
    return 1 / (1 + Math.sqrt(sum));
  }
  for (let i = 0; i < q.length; i++) sum += q[i]! * v[i]!;
  if (metric === 'ip') return sum;
  const n = norm(v);
  return n === 0 ? 0 : sum / n;
}

/** True when a ranks after b: a lower score, or an equal score and a higher row id. */
function after(aScore: number, aRow: number, bScore: number, bRow: number): boolean {
  return aScore < bScore || (aScore === bScore && aRow > bRow);
}

/**
 * The k best rows by exact comparison with every vector given, best first (ties: lower row id first).
 * For `near` on a field without `@hnsw`: the planner feeds it the rows its filter lets through. The
 * query's length is taken as the field's: check it with queryVector first (for the message); BLOBs of
 * another length are skipped as not vectors. `field` names the field in a refusal of a zero cosine query.
 */
export function exactSearch(
  vectors: Iterable<{ readonly rowId: number; readonly blob: Uint8Array }>,
  query: ArrayLike<number>,
  metric: Metric,
  k: number,
  field = 'the field',
): ScoredRow[] {
  const q = queryVector(query, query.length, field, metric);
  if (k <= 0) return [];
  const dims = q.length;
  // A min-heap of the k best so far: the worst at the root.
  const scores: number[] = [];
  const rows: number[] = [];
  const swap = (i: number, j: number): void => {
    [scores[i], scores[j]] = [scores[j]!, scores[i]!];
    [rows[i], rows[j]] = [rows[j]!, rows[i]!];
  };
  const down = (start: number): void => {
    for (let i = start; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let worst = i;
      if (l < scores.length && after(scores[l]!, rows[l]!, scores[worst]!, rows[worst]!)) worst = l;
      if (r < scores.length && after(scores[r]!, rows[r]!, scores[worst]!, rows[worst]!)) worst = r;
      if (worst === i) return;
      swap(i, worst);
      i = worst;
    }
  };
  for (const { rowId, blob } of vectors) {
    const v = vectorOf(blob, dims);
    if (v === null) continue;
    const score = exactScore(metric, q, v);
    if (scores.length < k) {
      scores.push(score);
      rows.push(rowId);
      for (let i = scores.length - 1; i > 0;) {
        const parent = (i - 1) >> 1;
        if (!after(scores[i]!, rows[i]!, scores[parent]!, rows[parent]!)) break;
        swap(i, parent);
        i = parent;
      }
    } else if (after(scores[0]!, rows[0]!, score, rowId)) {
      scores[0] = score;
      rows[0] = rowId;
      down(0);
    }
  }
  const out = rows.map((rowId, i) => ({ rowId, score: scores[i]! }));
  return out.sort((a, b) => (after(a.score, a.rowId, b.score, b.rowId) ? 1 : -1));
}
