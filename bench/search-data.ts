/**
 * The data of `make search-bench`, all from one seed: a vocabulary of made-up words, documents of
 * Zipf-distributed words from it, two-word queries drawn the same way, and 384-dim vectors, either
 * clustered (a normalised Gaussian mixture, as embeddings are) or uniform (the worst case for HNSW).
 * The vector generators are the tests' own (test/helpers/vectors.ts).
 */
import { clusteredVectors, mixtureCentres, normalise, seededRandom, uniformVectors } from '../test/helpers/vectors.js';

export { seededRandom };

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
export function documents(n: number, vocab: readonly string[], rank: () => number, random: () => number, minWords = 8, maxWords = 20): string[] {
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
export function clusteredData(rows: number, queries: number, dims: number, clusters: number, spread: number, random: () => number): VectorData {
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
