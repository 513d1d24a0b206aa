import { expect } from 'chai';
import { FenecError } from '../../../shared/errors.js';
import { exactSearch, queryVector, scoreOf, vectorOf } from '../../../node/vector/distance.js';
import { blob } from '../../helpers/vector-table.js';

const rows = (vectors: (number[] | Buffer)[]): { rowId: number; blob: Buffer }[] =>
  vectors.map((v, i) => ({ rowId: i + 1, blob: Buffer.isBuffer(v) ? v : blob(v) }));

const rounded = (answer: { rowId: number; score: number }[]): [number, number][] =>
  answer.map((r) => [r.rowId, Number(r.score.toFixed(5))]);

describe('distance (node/vector/distance)', () => {
  describe('exactSearch', () => {
    const data = rows([
      [2, 0, 0],
      [0, 3, 0],
      [1, 1, 0],
      [0, 0, 0],
      [-1, 0, 0],
    ]);

    it('scores cosine as the similarity (0 for a zero vector), best first', () => {
      expect(rounded(exactSearch(data, [3, 0, 0], 'cosine', 5))).to.deep.equal([
        [1, 1],
        [3, 0.70711],
        [2, 0],
        [4, 0],
        [5, -1],
      ]);
    });

    it('scores l2 as 1/(1+d), d the Euclidean distance', () => {
      expect(rounded(exactSearch(data, [1, 0, 0], 'l2', 3))).to.deep.equal([
        [1, 0.5],
        [3, 0.5],
        [4, 0.5],
      ]); // ties by row id
      expect(rounded(exactSearch(data, [1, 0, 0], 'l2', 5)).slice(3)).to.deep.equal([
        [5, 0.33333],
        [2, Number((1 / (1 + Math.sqrt(10))).toFixed(5))],
      ]);
    });

    it('scores ip as the inner product', () => {
      expect(rounded(exactSearch(data, [1, 2, 0], 'ip', 2))).to.deep.equal([
        [2, 6],
        [3, 3],
      ]);
    });

    it('keeps the k best of many, as a full sort would', () => {
      const many = rows(Array.from({ length: 500 }, (_, i) => [Math.sin(i), Math.cos(i * 7), i % 5]));
      const all = exactSearch(many, [0.3, -0.2, 1], 'l2', 500);
      expect(exactSearch(many, [0.3, -0.2, 1], 'l2', 17)).to.deep.equal(all.slice(0, 17));
      for (let i = 1; i < all.length; i++) expect(all[i - 1]!.score).to.be.at.least(all[i]!.score);
    });

    it("skips what is not a vector of the query's length: another length, NaN, infinity", () => {
      const odd = rows([
        [1, 0, 0],
        [1, 0],
        Buffer.from(new Float32Array([NaN, 0, 0]).buffer),
        Buffer.from(new Float32Array([Infinity, 0, 0]).buffer),
        [0, 1, 0],
      ]);
      expect(exactSearch(odd, [1, 0, 0], 'ip', 10).map((r) => r.rowId)).to.deep.equal([1, 5]);
    });

    it('answers nothing for k = 0, and refuses a zero query under cosine', () => {
      expect(exactSearch(data, [1, 0, 0], 'cosine', 0)).to.deep.equal([]);
      expect(() => exactSearch(data, [0, 0, 0], 'cosine', 3, 'emb'))
        .to.throw(FenecError, /near emb/)
        .with.property('code', 'invalid_value');
    });
  });

  it("queryVector refuses another length naming the field's, and normalises for cosine only", () => {
    expect(() => queryVector([1, 2], 3, 'vec', 'l2'))
      .to.throw(FenecError, 'vector has 2 components; field vec takes vector<3>')
      .with.property('code', 'vector_length');
    expect(Array.from(queryVector([3, 4], 2, 'vec', 'cosine'))).to.deep.equal([Math.fround(0.6), Math.fround(0.8)]);
    expect(Array.from(queryVector([3, 4], 2, 'vec', 'ip'))).to.deep.equal([3, 4]);
  });

  it('vectorOf reads little-endian float32 at any byte offset, and refuses other lengths', () => {
    const bytes = Buffer.concat([Buffer.alloc(1), blob([1.5, -2])]).subarray(1);
    expect(bytes.byteOffset % 4).to.not.equal(0);
    expect(Array.from(vectorOf(bytes, 2)!)).to.deep.equal([1.5, -2]);
    expect(vectorOf(bytes, 3)).to.equal(null);
  });

  it('scoreOf turns Faiss distances into scores', () => {
    expect(scoreOf('l2', 9)).to.equal(0.25); // squared distance 9: d = 3
    expect(scoreOf('ip', -2)).to.equal(-2);
    expect(scoreOf('cosine', 0.5)).to.equal(0.5);
  });
});
