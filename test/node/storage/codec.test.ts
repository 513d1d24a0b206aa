import { expect } from 'chai';
import { blobToVector, shortestFloat32 } from '../../../node/storage/codec.js';
import { seededRandom } from '../../helpers/vectors.js';

/** The definition: the first precision whose decimal reads back as the same float32 (what the codec did before). */
function byPrecision(x: number): number {
  for (let digits = 1; digits < 9; digits++) {
    const candidate = Number(x.toPrecision(digits));
    if (Math.fround(candidate) === x) return candidate;
  }
  return Number(x.toPrecision(9));
}

/** Significant digits of a number as JSON prints it. */
function digits(x: number): number {
  const mantissa = Math.abs(x).toExponential().split('e')[0]!.replace('.', '');
  return mantissa.length;
}

describe('a vector read back (node/storage/codec)', () => {
  it('answers each component as the shortest decimal that reads back as the same float32', () => {
    const random = seededRandom(7);
    const samples: number[] = [
      0, -0, 0.1, -0.1, 0.5, 1, -1, 1000, 999.9999, 1e-7, 3.4028234663852886e38, 1.401298464324817e-45, 1e-38,
      123456789,
    ];
    for (let i = 0; i < 100_000; i++) {
      // Every scale a float32 holds, and the embeddings' own (−1 … 1).
      const scale = i % 2 === 0 ? 1 : 10 ** Math.floor(random() * 76 - 38);
      samples.push(Math.fround((random() * 2 - 1) * scale));
    }
    for (const sample of samples) {
      const x = Math.fround(sample);
      const answered = shortestFloat32(x);
      const expected = byPrecision(x);
      expect(Math.fround(answered), `${x} reads back`).to.equal(x === 0 ? 0 : x);
      expect(digits(answered), `${x}: ${answered} against ${expected}`).to.equal(digits(expected));
    }
  });

  it('reads a 384-dim vector of arbitrary float32s back whole', () => {
    const random = seededRandom(8);
    const floats = Float32Array.from({ length: 384 }, () => random() - 0.5);
    const vector = blobToVector(Buffer.from(floats.buffer));
    expect(vector).to.have.length(384);
    expect(Float32Array.from(vector)).to.deep.equal(floats);
    expect(JSON.stringify(blobToVector(Buffer.from(Float32Array.from([0.1, 0.25, -3]).buffer)))).to.equal(
      '[0.1,0.25,-3]',
    );
  });
});
