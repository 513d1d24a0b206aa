/**
 * The benches' data, all from one seed: a vocabulary of made-up words, documents of Zipf-distributed
 * words from it, two-word queries drawn the same way, and 384-dim vectors, either clustered (a
 * normalised Gaussian mixture, as embeddings are) or uniform (the worst case for HNSW); and `zipfWorkload`,
 * the rows and queries of make search-bench, make ingest-bench and make isolation-bench made from them.
 * The vector generators are the tests' own (test/helpers/vectors.ts).
 */
import { clusteredVectors, mixtureCentres, normalise, seededRandom, uniformVectors } from '../test/helpers/vectors.js';

export { seededRandom };

/**
 * The shape of make search-bench's workload (its size, seed and mixture are the bench's knobs):
 * 384-dim vectors, a 5 000-word vocabulary drawn by Zipf's law with s = 1, `grp = i % 100` so that
 * `where grp = 7` passes 1 % of the rows, and searches for the top 10.
 */
export const DIMS = 384;
export const VOCABULARY = 5_000;
export const ZIPF_EXPONENT = 1;
export const GROUPS = 100;
export const GROUP = 7;
export const K = 10;

export const grp = (i: number): number => i % GROUPS;
/** Whether row label i passes `where grp = GROUP`. */
export const passesFilter = (label: number): boolean => grp(label) === GROUP;

const CONSONANTS = 'bdfgklmnprstvz';
/** No e or y: words of consonant-vowel syllables ending in a, i, o or u are mostly left alone by Porter stemming. */
const VOWELS = 'aiou';

/** `size` distinct words of 2 to 4 consonant-vowel syllables ("tavoki"). */
export function vocabulary(size: number, random: () => number): string[] {
  const words = new Set<string>();
  while (words.size < size) {
    const syllables = 2 + Math.floor(random() * 3);
    let word = '';
    for (let s = 0; s < syllables; s++) {
      word += CONSONANTS[Math.floor(random() * CONSONANTS.length)]! + VOWELS[Math.floor(random() * VOWELS.length)]!;
    }
    words.add(word);
  }
  return [...words];
}

/** Draws ranks 0 … size-1 with P(rank r) ∝ 1 / (r + 1)^s (Zipf). */
export function zipfSampler(size: number, s: number, random: () => number): () => number {
  const cdf = new Float64Array(size);
  let sum = 0;
  for (let r = 0; r < size; r++) cdf[r] = sum += 1 / Math.pow(r + 1, s);
  for (let r = 0; r < size; r++) cdf[r] = cdf[r]! / sum;
  return () => {
    const u = random();
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** n texts of minWords … maxWords words, each word drawn by `rank` from the vocabulary. */
export function documents(
  n: number,
  vocab: readonly string[],
  rank: () => number,
  random: () => number,
  minWords = 8,
  maxWords = 20,
): string[] {
  const texts: string[] = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const length = minWords + Math.floor(random() * (maxWords - minWords + 1));
    const words: string[] = new Array<string>(length);
    for (let w = 0; w < length; w++) words[w] = vocab[rank()]!;
    texts[i] = words.join(' ');
  }
  return texts;
}

/** n queries of two distinct words, each drawn by `rank` (as the documents' words are). */
export function twoWordQueries(n: number, vocab: readonly string[], rank: () => number): [string, string][] {
  const queries: [string, string][] = [];
  while (queries.length < n) {
    const a = vocab[rank()]!;
    const b = vocab[rank()]!;
    if (a !== b) queries.push([a, b]);
  }
  return queries;
}

export interface VectorData {
  /** rows × dims, each row of length 1. */
  readonly vectors: Float32Array;
  /** queries × dims, drawn as the rows are (not among them), each of length 1. */
  readonly queries: Float32Array;
}

/** Rows and queries around the same `clusters` centres, Gaussian noise of `spread` per component, normalised. */
export function clusteredData(
  rows: number,
  queries: number,
  dims: number,
  clusters: number,
  spread: number,
  random: () => number,
): VectorData {
  const centres = mixtureCentres(clusters, dims, random);
  return {
    vectors: clusteredVectors(rows, centres, dims, spread, random),
    queries: clusteredVectors(queries, centres, dims, spread, random),
  };
}

/** Rows and queries uniform in [-1, 1)^dims, normalised. */
export function uniformData(rows: number, queries: number, dims: number, random: () => number): VectorData {
  return {
    vectors: normalise(uniformVectors(rows, dims, random), dims),
    queries: normalise(uniformVectors(queries, dims, random), dims),
  };
}

/**
 * Row i of x as a FenecQL array literal. Nine significant digits give back the same float32, so the
 * rows the database stores hold exactly the vectors the raw baselines index.
 */
export function vectorLiteral(x: Float32Array, i: number, dims: number): string {
  const parts: string[] = new Array<string>(dims);
  for (let j = 0; j < dims; j++) parts[j] = x[i * dims + j]!.toPrecision(9);
  return `[${parts.join(', ')}]`;
}

/** Row i of x as the plain array a client's JSON params arrive as. */
export function vectorArray(x: Float32Array, i: number, dims: number): number[] {
  return Array.from(x.subarray(i * dims, (i + 1) * dims));
}

/** Row i of x as JSON numbers of nine significant digits, which give back the same float32s: what a client sends. */
export function vectorJson(x: Float32Array, i: number, dims: number): number[] {
  return Array.from(x.subarray(i * dims, (i + 1) * dims), (v) => Number(v.toPrecision(9)));
}

/** Row i of x as the bytes of its float32s (a BLOB column), sharing x's memory. */
export function vectorBlob(x: Float32Array, i: number, dims: number): Buffer {
  return Buffer.from(x.buffer, x.byteOffset + i * dims * 4, dims * 4);
}

export interface WorkloadOptions {
  readonly seed: number;
  readonly rows: number;
  /** Queries of each kind: two-word texts and vectors. */
  readonly queries: number;
  readonly vocabulary: number;
  /** Zipf's s: 1 makes a word of rank r about 1/r as common as the most common. */
  readonly zipfExponent: number;
  /** Words in a row's text: minWords … maxWords. */
  readonly minWords: number;
  readonly maxWords: number;
  readonly dims: number;
  /** Centres of the vectors' Gaussian mixture, and the noise per component around them. */
  readonly clusters: number;
  readonly spread: number;
}

/** Rows of Zipf text and clustered vectors, and queries drawn as they are, from one seed. */
export interface Workload {
  readonly vocabulary: readonly string[];
  /** Row i's text. */
  readonly bodies: readonly string[];
  /** Query q's two words. */
  readonly words: readonly [string, string][];
  /** Rows' vectors and query vectors (VectorData). */
  readonly vectors: Float32Array;
  readonly queries: Float32Array;
  /** The seeded generator, past what was drawn: for whatever a bench draws next. */
  readonly random: () => number;
}

export function zipfWorkload(options: WorkloadOptions): Workload {
  const random = seededRandom(options.seed);
  const vocab = vocabulary(options.vocabulary, random);
  const rank = zipfSampler(options.vocabulary, options.zipfExponent, random);
  const bodies = documents(options.rows, vocab, rank, random, options.minWords, options.maxWords);
  const words = twoWordQueries(options.queries, vocab, rank);
  const { vectors, queries } = clusteredData(
    options.rows,
    options.queries,
    options.dims,
    options.clusters,
    options.spread,
    random,
  );
  return { vocabulary: vocab, bodies, words, vectors, queries, random };
}
