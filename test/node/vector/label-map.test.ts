import { expect } from 'chai';
import { crc32 } from 'node:zlib';
import { LabelMap, vectorDigest } from '../../../node/vector/label-map.js';
import { blob } from '../../helpers/vector-table.js';

const SHAPE = 'hnsw/3/l2/m32';

/** A map of format 1, as files written before rows shared labels hold it: a row per label, -1 dead. */
function formatOne(rows: number[]): Buffer {
  const shape = Buffer.from(SHAPE);
  const out = Buffer.alloc(20 + shape.length + 4 + rows.length * 8);
  out.write('FNCLABEL', 0, 'latin1');
  out.writeUInt32LE(1, 8);
  out.writeUInt32LE(shape.length, 16);
  shape.copy(out, 20);
  out.writeUInt32LE(rows.length, 20 + shape.length);
  rows.forEach((row, i) => out.writeDoubleLE(row, 24 + shape.length + i * 8));
  out.writeUInt32LE(crc32(out.subarray(16)), 12);
  return out;
}

describe('LabelMap (node/vector/label-map)', () => {
  const a = vectorDigest(blob([1, 0, 0]));
  const b = vectorDigest(blob([0, 1, 0]));

  it('stores shared rows and digests in a snapshot: decoded, a copy of a stored vector finds its label', () => {
    const map = new LabelMap();
    const la = map.append(10, a);
    map.attach(11, la);
    map.attach(12, la);
    const lb = map.append(20, b);
    map.tombstone(20);
    expect([map.size, map.liveLabels, map.liveCount, map.deadCount]).to.deep.equal([2, 1, 3, 1]);
    const back = LabelMap.decode(map.encode(SHAPE), SHAPE, 2)!;
    expect(back.rowsOf(la).sort()).to.deep.equal([10, 11, 12]);
    expect(back.isLive(lb)).to.equal(false);
    expect(back.shared(a)).to.equal(la);
    expect(back.shared(b), 'a dead vector is not shared').to.equal(undefined);
    back.tombstone(10);
    expect(back.rowsOf(la).sort(), 'another row takes the first place').to.deep.equal([11, 12]);
    expect([back.liveLabels, back.liveCount]).to.deep.equal([1, 2]);
  });

  it('reads format 1: every label live with its row, none shared', () => {
    const map = LabelMap.decode(formatOne([5, -1, 7]), SHAPE, 3)!;
    expect([map.size, map.liveLabels, map.liveCount, map.deadCount]).to.deep.equal([3, 2, 2, 1]);
    expect(map.rowsOf(2)).to.deep.equal([7]);
    expect(map.shared(a)).to.equal(undefined);
    expect(LabelMap.decode(formatOne([5, 5]), SHAPE, 2), 'a row under two labels').to.equal(null);
  });

  it('refuses damaged bytes, another shape and another size', () => {
    const map = new LabelMap();
    map.attach(2, map.append(1, a));
    const bytes = map.encode(SHAPE);
    expect(LabelMap.decode(bytes, SHAPE, 1)).to.not.equal(null);
    expect(LabelMap.decode(bytes, 'hnsw/3/ip/m32', 1)).to.equal(null);
    expect(LabelMap.decode(bytes, SHAPE, 2)).to.equal(null);
    const flipped = Buffer.from(bytes);
    flipped[flipped.length - 1]! ^= 1;
    expect(LabelMap.decode(flipped, SHAPE, 1)).to.equal(null);
    expect(LabelMap.decode(bytes.subarray(0, bytes.length - 1), SHAPE, 1)).to.equal(null);
  });
});
