/**
 * The vector index as the database sees it: a narrow structural interface that node/vector/faiss.ts
 * implements over our Faiss addon, and that a test may implement with a fake.
 *
 * Labels are the index's own sequential ids, 0 … ntotal-1 in the order vectors were added. The
 * database keeps its label → row-id map and its tombstones; a search passes the labels it may
 * return as a bitmap (`allow`), so deleted, expired and filtered-out rows are never returned.
 */

export type VectorIndexKind = 'hnsw' | 'flat';

/**
 * 'l2': squared Euclidean distance, nearer is smaller. 'ip': inner product, nearer is larger (cosine on normalised
 * vectors).
 */
export type VectorMetric = 'l2' | 'ip';

export interface VectorIndexOptions {
  /** 'hnsw': approximate graph search (Faiss IndexHNSWFlat). 'flat': exact search (IndexFlatL2 / IndexFlatIP). */
  readonly kind: VectorIndexKind;
  /** Components per vector, 1 … 65536. */
  readonly dims: number;
  readonly metric: VectorMetric;
  /** HNSW links per node (2·m on the bottom level), 2 … 512. Default 32. */
  readonly m?: number;
  /** HNSW candidate list size while adding, 1 … 65536. Default 40. */
  readonly efConstruction?: number;
  /** HNSW candidate list size of a search that does not name one, 1 … 65536. Default 64. Serialized with the index. */
  readonly efSearch?: number;
}

export interface VectorSearchOptions {
  /** HNSW candidate list size for this search, 1 … 65536 (at least k is used). Ignored by flat indexes. */
  readonly efSearch?: number;
  /**
   * Only these labels may be returned: bit i (least significant first) of byte ⌊i/8⌋ allows label i;
   * labels past the end are not allowed. A search still returns min(k, allowed) labels, however few
   * are allowed: an HNSW index searches exactly over the allowed vectors when they are few.
   */
  readonly allow?: Uint8Array;
}

/**
 * nq × k results, row-major, each row nearest first. A label of -1 (fewer than k vectors exist or
 * are allowed) comes with distance +Infinity (l2) or -Infinity (ip).
 */
export interface VectorSearchResult {
  readonly distances: Float32Array;
  readonly labels: Int32Array;
}

export interface VectorIndex {
  readonly kind: VectorIndexKind;
  readonly metric: VectorMetric;
  readonly dims: number;
  /**
   * Vectors the index holds now: while an addAsync runs, those of the parts it has added so far
   * (labels first … ntotal-1 of its batch are searchable).
   */
  readonly ntotal: number;
  /**
   * True while an addAsync or serializeAsync runs: add, serialize and dispose are refused until it ends; search is not.
   */
  readonly busy: boolean;
  /**
   * Adds n vectors (n × dims floats, read in place) on the calling thread; returns the first one's label (the others
   * follow in order).
   */
  add(vectors: Float32Array): number;
  /**
   * add on a worker thread (the vectors are copied first), in parts of a few milliseconds each, so
   * that a search beside it waits at most for one part; the index is searchable throughout.
   */
  addAsync(vectors: Float32Array): Promise<number>;
  /**
   * The k nearest labels of each of the nq queries (nq × dims floats), on the calling thread alone (no OpenMP team).
   */
  search(queries: Float32Array, k: number, options?: VectorSearchOptions): VectorSearchResult;
  /** The whole index as bytes (a checksummed envelope around Faiss's own format). */
  serialize(): Buffer;
  /** serialize on a worker thread: searches go on meanwhile. */
  serializeAsync(): Promise<Buffer>;
  /** Frees the native memory now; later calls are refused. Twice is harmless. */
  dispose(): void;
}

export interface VectorEngine {
  create(options: VectorIndexOptions): VectorIndex;
  /** An index from serialize()'s bytes; damaged bytes are refused (see isDamagedIndexError), never half-read. */
  deserialize(bytes: Uint8Array): VectorIndex;
  /** Threads the background work (addAsync, serializeAsync) may use; searches and add use the calling thread alone. */
  setThreads(threads: number): void;
}
