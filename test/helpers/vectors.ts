/** Seeded test vectors: uniform, and clustered (a Gaussian mixture, normalised) as embeddings are. */

/** A seeded generator of floats in [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A standard normal sample (Box–Muller). */
export function gaussian(random: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
}

/** n vectors of dims components, each uniform in [-1, 1). */
export function uniformVectors(n: number, dims: number, random: () => number): Float32Array {
  return Float32Array.from({ length: n * dims }, () => random() * 2 - 1);
}

/** Scales each dims-long row of x to length 1, in place. */
export function normalise(x: Float32Array, dims: number): Float32Array {
  for (let i = 0; i < x.length; i += dims) {
    let sum = 0;
    for (let j = i; j < i + dims; j++) sum += x[j]! * x[j]!;
    const norm = Math.sqrt(sum) || 1;
    for (let j = i; j < i + dims; j++) x[j] = x[j]! / norm;
  }
  return x;
}

/** The centres of a Gaussian mixture; draw points around them with clusteredVectors. */
export function mixtureCentres(clusters: number, dims: number, random: () => number): Float32Array {
  return Float32Array.from({ length: clusters * dims }, () => gaussian(random));
}

/** n normalised vectors, each a random centre plus Gaussian noise of the given spread. */
export function clusteredVectors(
  n: number,
  centres: Float32Array,
  dims: number,
  spread: number,
  random: () => number,
): Float32Array {
  const clusters = centres.length / dims;
  const x = new Float32Array(n * dims);
  for (let i = 0; i < n; i++) {
    const c = Math.floor(random() * clusters);
    for (let j = 0; j < dims; j++) x[i * dims + j] = centres[c * dims + j]! + spread * gaussian(random);
  }
  return normalise(x, dims);
}
