import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { crc32 } from 'node:zlib';
import { FenecError } from '../../../shared/errors.js';
import type { VectorIndex, VectorIndexOptions, VectorMetric } from '../../../node/vector/vector-index.js';
import { faiss, isDamagedIndexError } from '../../../node/vector/faiss.js';
import { tempDir } from '../../helpers/temp.js';
import { clusteredVectors, mixtureCentres, seededRandom, uniformVectors } from '../../helpers/vectors.js';

const MiB = 1024 * 1024;

/** Bitmap allowing exactly `labels`, over n labels. */
function bitmapOf(n: number, labels: Iterable<number>): Uint8Array {
  const bits = new Uint8Array(Math.ceil(n / 8));
  for (const i of labels) bits[i >> 3]! |= 1 << (i & 7);
  return bits;
}

/** `count` distinct labels out of 0 … n-1. */
function sample(n: number, count: number, random: () => number): number[] {
  const labels = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(random() * (n - i));
    [labels[i], labels[j]] = [labels[j]!, labels[i]!];
  }
  return labels.slice(0, count);
}

function isAllowed(bits: Uint8Array, label: number): boolean {
  return ((bits[label >> 3] ?? 0) & (1 << (label & 7))) !== 0;
}

/** Row q of a row-major nq × k label array. */
function rowOf(labels: Int32Array, k: number, q: number): number[] {
  return Array.from(labels.subarray(q * k, (q + 1) * k));
}

/** Mean share of the exact top k that the approximate top k found. */
function recall(approx: Int32Array, exact: Int32Array, k: number): number {
  const nq = exact.length / k;
  let found = 0;
  for (let q = 0; q < nq; q++) {
    const want = new Set(rowOf(exact, k, q));
    found += rowOf(approx, k, q).filter((l) => want.has(l)).length;
  }
  return found / (nq * k);
}

/** serialize()'s envelope around any payload, with a correct checksum: what Faiss itself must refuse. */
function envelope(payload: Uint8Array): Buffer {
  const header = Buffer.alloc(24);
  header.write('FNCFAISS', 0, 'latin1');
  header.writeUInt32LE(1, 8);
  header.writeUInt32LE(crc32(payload), 12);
  header.writeBigUInt64LE(BigInt(payload.length), 16);
  return Buffer.concat([header, payload]);
}

function build(options: VectorIndexOptions, vectors: Float32Array): VectorIndex {
  const index = faiss.create(options);
  index.add(vectors);
  return index;
}

/** Expects `call` to throw a plain JS error of class `type` whose code is `code`. */
function expectRefused(call: () => unknown, type: ErrorConstructor, code: string, message?: RegExp): void {
  expect(call).to.throw(type).with.property('code', code);
  if (message !== undefined) expect(call).to.throw(message);
}

/**
 * In a child process, `rounds` times: a worker thread runs `inWorker` (module code with `faiss` and
 * `parentPort` in scope, which posts a message once under way) and is terminated `afterMessageMs` (an
 * expression) after that message. The child must then end by itself, neither by a signal nor a failure;
 * answers the value of its `report` expression.
 */
function endWorkersInChild(options: {
  inWorker: string;
  rounds: number;
  afterMessageMs: string;
  report: string;
}): unknown {
  const module = new URL('../../../node/vector/faiss.js', import.meta.url).href;
  const inWorker = `const { parentPort } = await import('node:worker_threads');\nconst { faiss } = await import(${JSON.stringify(module)});\n${options.inWorker}`;
  const script = `
    import { Worker } from 'node:worker_threads';
    for (let round = 0; round < ${options.rounds}; round++) {
      const worker = new Worker(${JSON.stringify(inWorker)}, { eval: true, type: 'module' });
      await new Promise((resolve, reject) => { worker.once('message', resolve); worker.once('error', reject); });
      await new Promise((resolve) => setTimeout(resolve, ${options.afterMessageMs}));
      await worker.terminate();
    }
    console.log(JSON.stringify(${options.report}));
  `;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  expect(child.signal, child.stderr).to.equal(null);
  expect(child.status, child.stderr).to.equal(0);
  return JSON.parse(child.stdout);
}
describe('faiss (node/vector/faiss)', () => {
  const open: VectorIndex[] = [];
  const track = (index: VectorIndex): VectorIndex => (open.push(index), index);
  after(() => open.forEach((index) => index.dispose()));

  describe('loading', () => {
    it('says to run make install when the addon is not built', async () => {
      // The compiled wrapper, its finder and the error module, copied where no native/faiss/build exists.
      const temp = tempDir();
      try {
        for (const file of ['node/vector/faiss.js', 'node/native-builds.js', 'shared/errors.js']) {
          mkdirSync(dirname(temp.file(`dist/${file}`)), { recursive: true });
          copyFileSync(new URL(`../../../${file}`, import.meta.url), temp.file(`dist/${file}`));
        }
        const copy = (await import(
          pathToFileURL(temp.file('dist/node/vector/faiss.js')).href
        )) as typeof import('../../../node/vector/faiss.js');
        expect(() => copy.faiss.create({ kind: 'flat', dims: 2, metric: 'l2' }))
          .to.throw(/the Faiss addon is not built \(native\/faiss\/build\/Release\/fenec_faiss.node is missing\)/)
          .with.property('hint')
          .that.matches(/make install/);
      } finally {
        temp.remove();
      }
    });

    it('stays loaded when the worker thread that loaded it ends in the middle of an add on every core', function () {
      this.timeout(60_000);
      // The last worker holding an addon unloads it; its add goes on, on libuv's and OpenMP's threads.
      // The child process must outlive its workers and still map the addon. The worker is ended at once, in the
      // first milliseconds of an add of a second or so; ending it waits for the add (which 20 000 rows made 4 s).
      const report = endWorkersInChild({
        inWorker: `
          const index = faiss.create({ kind: 'hnsw', dims: 64, metric: 'l2', m: 16, efConstruction: 40, efSearch: 16 });
          void index.addAsync(new Float32Array(5000 * 64).map(() => Math.random()));
          parentPort.postMessage('adding');`,
        rounds: 3,
        afterMessageMs: '0',
        report: `(await new Promise((resolve) => setTimeout(resolve, 500)), { mapped: (await import('node:fs')).readFileSync('/proc/self/maps', 'utf8').includes('fenec_faiss.node') })`,
      });
      if (process.platform === 'linux') expect(report).to.deep.equal({ mapped: true });
    });

    it('lets a worker thread be ended in the middle of a call that loads an index, without ending the process', function () {
      this.timeout(60_000);
      // A worker terminated at a statement's time limit while it reads a tenant's index snapshot: the
      // addon's calls into the environment fail, and the error it then could not throw aborted the node.
      const report = endWorkersInChild({
        inWorker: `
          const index = faiss.create({ kind: 'hnsw', dims: 64, metric: 'l2', m: 16, efConstruction: 40, efSearch: 16 });
          index.add(new Float32Array(1000 * 64).map(() => Math.random()));
          const bytes = index.serialize();
          parentPort.postMessage('loading');
          for (;;) faiss.deserialize(bytes).dispose();`,
        rounds: 20,
        afterMessageMs: '1 + Math.random() * 30',
        report: '({ rounds: 20 })',
      });
      expect(report).to.deep.equal({ rounds: 20 });
    });
  });

  describe('add and search', () => {
    for (const kind of ['hnsw', 'flat'] as const) {
      for (const metric of ['l2', 'ip'] as VectorMetric[]) {
        it(`${kind}/${metric}: labels follow the order added, and each vector finds itself`, () => {
          const dims = 16;
          const random = seededRandom(7);
          const first = uniformVectors(300, dims, random);
          const second = uniformVectors(200, dims, random);
          const index = track(faiss.create({ kind, dims, metric }));
          expect([index.kind, index.metric, index.dims, index.ntotal]).to.deep.equal([kind, metric, dims, 0]);
          expect(index.add(first)).to.equal(0);
          expect(index.add(second)).to.equal(300);
          expect(index.ntotal).to.equal(500);

          const { labels, distances } = index.search(second.subarray(0, 5 * dims), 3);
          expect(labels).to.be.instanceOf(Int32Array).with.length(15);
          expect(distances).to.be.instanceOf(Float32Array).with.length(15);
          // l2: the vector itself, at 0. ip on unnormalised vectors: the nearest by inner product need not
          // be itself, so check only the order (larger first).
          for (let q = 0; q < 5; q++) {
            const row = Array.from(distances.subarray(q * 3, q * 3 + 3));
            if (metric === 'l2') {
              expect(labels[q * 3]).to.equal(300 + q);
              expect(row[0]).to.be.closeTo(0, 1e-4);
              expect(row).to.deep.equal([...row].sort((a, b) => a - b));
            } else {
              expect(row).to.deep.equal([...row].sort((a, b) => b - a));
            }
          }
        });
      }
    }

    it('pads with label -1 and an infinite distance when k exceeds what the index holds', () => {
      const l2 = track(
        build({ kind: 'hnsw', dims: 4, metric: 'l2' }, new Float32Array([0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0])),
      );
      const r = l2.search(new Float32Array([0, 0, 0, 1]), 5);
      expect(Array.from(r.labels)).to.deep.equal([0, 1, 2, -1, -1]);
      expect(Array.from(r.distances.subarray(3))).to.deep.equal([Infinity, Infinity]);
      const ip = track(faiss.create({ kind: 'flat', dims: 4, metric: 'ip' }));
      const empty = ip.search(new Float32Array(8), 2);
      expect(Array.from(empty.labels)).to.deep.equal([-1, -1, -1, -1]);
      expect(Array.from(empty.distances)).to.deep.equal([-Infinity, -Infinity, -Infinity, -Infinity]);
    });

    it('round-trips through serialize: same answers, same default efSearch, and adds after', () => {
      const dims = 32;
      const random = seededRandom(3);
      const vectors = uniformVectors(1000, dims, random);
      const queries = uniformVectors(20, dims, random);
      const index = track(build({ kind: 'hnsw', dims, metric: 'l2', m: 8, efSearch: 17 }, vectors));
      const copy = track(faiss.deserialize(index.serialize()));
      expect([copy.kind, copy.metric, copy.dims, copy.ntotal]).to.deep.equal(['hnsw', 'l2', dims, 1000]);
      expect(copy.search(queries, 10)).to.deep.equal(index.search(queries, 10));
      expect(copy.add(vectors.subarray(0, dims))).to.equal(1000);
      const flat = track(build({ kind: 'flat', dims, metric: 'ip' }, vectors));
      expect(track(faiss.deserialize(flat.serialize())).search(queries, 10)).to.deep.equal(flat.search(queries, 10));
    });
  });

  describe('HNSW against exact search', () => {
    it('agrees with flat on the top result for 100 random queries over 2 000 vectors', () => {
      const dims = 32;
      const random = seededRandom(11);
      const vectors = uniformVectors(2000, dims, random);
      const queries = uniformVectors(100, dims, random);
      const hnsw = track(build({ kind: 'hnsw', dims, metric: 'l2' }, vectors));
      const flat = track(build({ kind: 'flat', dims, metric: 'l2' }, vectors));
      const approx = hnsw.search(queries, 1);
      const exact = flat.search(queries, 1);
      // Compare distances, not labels: two vectors at the same distance are both a right answer.
      for (let q = 0; q < 100; q++) expect(approx.distances[q], `query ${q}`).to.be.closeTo(exact.distances[q]!, 1e-4);
    });

    it('reaches recall@10 ≥ 0.95 at a high efSearch on 10 000 × 64 clustered vectors', () => {
      const dims = 64;
      const random = seededRandom(5);
      const centres = mixtureCentres(100, dims, random);
      const vectors = clusteredVectors(10_000, centres, dims, 0.5, random);
      const queries = clusteredVectors(200, centres, dims, 0.5, random);
      const hnsw = track(build({ kind: 'hnsw', dims, metric: 'ip' }, vectors));
      const flat = track(build({ kind: 'flat', dims, metric: 'ip' }, vectors));
      const exact = flat.search(queries, 10).labels;
      expect(recall(hnsw.search(queries, 10, { efSearch: 256 }).labels, exact, 10)).to.be.at.least(0.95);
    });

    // Faiss 1.7.3 sizes the candidate list from the index's efSearch, not the search's: the binding sets both.
    it('widens the search with a per-search efSearch above the index default', () => {
      const dims = 64;
      const random = seededRandom(12);
      const vectors = uniformVectors(5_000, dims, random);
      const queries = uniformVectors(100, dims, random);
      const hnsw = track(build({ kind: 'hnsw', dims, metric: 'l2', m: 8, efSearch: 10 }, vectors));
      const exact = track(build({ kind: 'flat', dims, metric: 'l2' }, vectors)).search(queries, 10).labels;
      const narrow = recall(hnsw.search(queries, 10).labels, exact, 10);
      const wide = recall(hnsw.search(queries, 10, { efSearch: 500 }).labels, exact, 10);
      expect(narrow).to.be.below(0.9);
      expect(wide).to.be.at.least(0.98);
      expect(recall(hnsw.search(queries, 10).labels, exact, 10)).to.equal(narrow); // the default is back
    });
  });

  describe('allow bitmap', () => {
    const dims = 64;
    const n = 10_000;
    const k = 10;
    let vectors: Float32Array;
    let queries: Float32Array;
    let hnsw: VectorIndex;
    let small: VectorIndex;
    let flat: VectorIndex;

    before(() => {
      const random = seededRandom(9);
      const centres = mixtureCentres(100, dims, random);
      vectors = clusteredVectors(n, centres, dims, 0.5, random);
      queries = clusteredVectors(50, centres, dims, 0.5, random);
      hnsw = track(build({ kind: 'hnsw', dims, metric: 'ip' }, vectors));
      // Filtered searches run exactly while allowed² ≤ m·efSearch·ntotal: up to 4 525 allowed labels at
      // m 32, efSearch 64 (the defaults), up to 1 131 at m 8, efSearch 16; above, the graph with a selector.
      small = track(build({ kind: 'hnsw', dims, metric: 'ip', m: 8, efSearch: 16 }, vectors));
      flat = track(build({ kind: 'flat', dims, metric: 'ip' }, vectors));
    });

    /** The k largest inner products among `allowed`, by brute force in JS: the reference. */
    function bruteForce(q: number, allowed: number[]): number[] {
      const x = queries.subarray(q * dims, (q + 1) * dims);
      const score = (label: number): number => {
        let sum = 0;
        for (let j = 0; j < dims; j++) sum += x[j]! * vectors[label * dims + j]!;
        return sum;
      };
      return allowed
        .map((label) => ({ label, s: score(label) }))
        .sort((a, b) => b.s - a.s)
        .slice(0, k)
        .map((e) => e.label);
    }

    for (const share of [0.001, 0.01, 0.05, 0.3]) {
      it(`returns k labels, all allowed, when ${share * 100} % of 10 000 are allowed`, () => {
        const allowed = sample(n, share * n, seededRandom(Math.round(share * 1e4)));
        const allow = bitmapOf(n, allowed);
        for (const index of [hnsw, small, flat]) {
          const { labels } = index.search(queries, k, { allow });
          for (let q = 0; q < queries.length / dims; q++) {
            const row = rowOf(labels, k, q);
            expect(
              row.every((l) => l >= 0 && isAllowed(allow, l)),
              `${index.kind} query ${q}: ${row.join(' ')}`,
            ).to.equal(true);
            expect(new Set(row).size).to.equal(k);
          }
        }
        // Where the search is exact (flat always; HNSW over few allowed labels), it is the brute-force answer.
        const exact = share <= 0.05 ? [hnsw, small, flat] : [hnsw, flat];
        for (let q = 0; q < 5; q++) {
          const want = bruteForce(q, allowed);
          for (const index of exact)
            expect(rowOf(index.search(queries, k, { allow }).labels, k, q)).to.deep.equal(want);
        }
      });
    }

    it('returns each allowed label once, then -1, when fewer than k are allowed', () => {
      const allow = bitmapOf(n, [3, 4_000, 9_999]);
      for (const index of [hnsw, small, flat]) {
        const row = rowOf(index.search(queries.subarray(0, dims), k, { allow }).labels, k, 0);
        expect(row.slice(0, 3).sort((a, b) => a - b)).to.deep.equal([3, 4_000, 9_999]);
        expect(row.slice(3)).to.deep.equal(new Array(k - 3).fill(-1));
      }
      expect(Array.from(hnsw.search(queries.subarray(0, dims), 2, { allow: new Uint8Array(0) }).labels)).to.deep.equal([
        -1, -1,
      ]);
    });
  });

  describe('bad input is a JS error, and the process goes on', () => {
    const dims = 8;
    let index: VectorIndex;
    before(() => {
      index = track(build({ kind: 'hnsw', dims, metric: 'l2', m: 8 }, uniformVectors(1000, dims, seededRandom(1))));
    });

    it('refuses bad create options, naming the option', () => {
      expectRefused(
        () => faiss.create({ kind: 'ivf' as 'flat', dims, metric: 'l2' }),
        TypeError,
        'ERR_INVALID_ARG_TYPE',
        /kind/,
      );
      expectRefused(
        () => faiss.create({ kind: 'flat', dims: 0, metric: 'l2' }),
        RangeError,
        'ERR_OUT_OF_RANGE',
        /dims/,
      );
      expectRefused(
        () => faiss.create({ kind: 'flat', dims: 2.5, metric: 'l2' }),
        RangeError,
        'ERR_OUT_OF_RANGE',
        /dims/,
      );
      expectRefused(
        () => faiss.create({ kind: 'flat', dims, metric: 'cosine' as 'ip' }),
        TypeError,
        'ERR_INVALID_ARG_TYPE',
        /metric/,
      );
      expectRefused(
        () => faiss.create({ kind: 'hnsw', dims, metric: 'ip', m: 1 }),
        RangeError,
        'ERR_OUT_OF_RANGE',
        /\bm\b/,
      );
      expectRefused(
        () => faiss.create({ kind: 'hnsw', dims, metric: 'ip', efSearch: 0 }),
        RangeError,
        'ERR_OUT_OF_RANGE',
        /efSearch/,
      );
      expect(() => faiss.create({ kind: 'hnsw', dims, metric: 'ip', M: 16 } as VectorIndexOptions)).to.throw(
        TypeError,
        /"M" \(did you mean "m"\?\)/,
      );
    });

    it('refuses vectors that are not a Float32Array, not a multiple of dims long, or not finite', () => {
      expectRefused(
        () => index.add([1, 2, 3] as unknown as Float32Array),
        TypeError,
        'ERR_INVALID_ARG_TYPE',
        /Float32Array/,
      );
      expectRefused(
        () => index.add(new Float64Array(dims) as unknown as Float32Array),
        TypeError,
        'ERR_INVALID_ARG_TYPE',
      );
      expectRefused(
        () => index.add(new Float32Array(dims * 2 + 1)),
        RangeError,
        'ERR_OUT_OF_RANGE',
        /17 floats, not a multiple of the index's 8 dims/,
      );
      const nan = new Float32Array(dims * 3);
      nan[2 * dims + 5] = NaN;
      expectRefused(() => index.add(nan), RangeError, 'ERR_OUT_OF_RANGE', /vector 2, component 5/);
      expect(index.ntotal).to.equal(1000);
    });

    it('refuses k ≤ 0, a fractional k, queries of another dims, a bad efSearch or allow', () => {
      const q = new Float32Array(dims);
      expectRefused(() => index.search(q, 0), RangeError, 'ERR_OUT_OF_RANGE', /k must be an integer/);
      expectRefused(() => index.search(q, -3), RangeError, 'ERR_OUT_OF_RANGE');
      expectRefused(() => index.search(q, 1.5), RangeError, 'ERR_OUT_OF_RANGE');
      expectRefused(() => index.search(q, '3' as unknown as number), TypeError, 'ERR_INVALID_ARG_TYPE');
      expectRefused(
        () => index.search(new Float32Array(dims - 1), 1),
        RangeError,
        'ERR_OUT_OF_RANGE',
        /queries holds 7 floats/,
      );
      expectRefused(() => index.search(new Float32Array(dims + 4), 1), RangeError, 'ERR_OUT_OF_RANGE');
      expectRefused(() => index.search(q, 1, { efSearch: 0 }), RangeError, 'ERR_OUT_OF_RANGE', /efSearch/);
      expectRefused(
        () => index.search(q, 1, { allow: [1] as unknown as Uint8Array }),
        TypeError,
        'ERR_INVALID_ARG_TYPE',
        /allow/,
      );
      expectRefused(() => index.search(new Float32Array(dims).fill(Infinity), 1), RangeError, 'ERR_OUT_OF_RANGE');
    });

    it('refuses garbage, truncated and foreign bytes in deserialize as a damaged index', () => {
      const good = index.serialize();
      const bad = [
        Buffer.from('not an index at all'),
        good.subarray(0, good.length - 1),
        Buffer.concat([good, Buffer.alloc(1)]),
        Buffer.from(good).fill(0x55, 100, 110), // damaged: the checksum no longer matches
        envelope(Buffer.from('IxF2 but nothing else')), // checksum right: Faiss's own read_index throws
        envelope(good.subarray(24, good.length - 7)), // a truncated payload behind a right checksum
      ];
      for (const bytes of bad) {
        expect(() => faiss.deserialize(bytes))
          .to.throw(FenecError)
          .with.property('code', 'vector_engine');
        try {
          faiss.deserialize(bytes);
        } catch (err) {
          expect(isDamagedIndexError(err)).to.equal(true);
        }
      }
      expectRefused(() => faiss.deserialize('bytes' as unknown as Uint8Array), TypeError, 'ERR_INVALID_ARG_TYPE');
    });

    it('survives 300 random corruptions of an index behind a right checksum', () => {
      const payload = index.serialize().subarray(24);
      const random = seededRandom(21);
      const q = uniformVectors(30, dims, random);
      let refused = 0;
      for (let t = 0; t < 300; t++) {
        const bytes = Buffer.from(payload);
        for (let i = 0; i < 1 + (t % 4); i++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
        try {
          const copy = faiss.deserialize(envelope(bytes));
          copy.search(q, 5); // a damaged vector only changes answers; a damaged graph was refused
          copy.add(q);
          copy.dispose();
        } catch (err) {
          expect(isDamagedIndexError(err), String(err)).to.equal(true);
          refused++;
        }
      }
      expect(refused).to.be.greaterThan(100);
    });

    it('refuses adds, serializations and dispose while an addAsync runs, and searches beside it', async () => {
      const busy = track(build({ kind: 'hnsw', dims, metric: 'l2' }, uniformVectors(100, dims, seededRandom(2))));
      const adding = busy.addAsync(uniformVectors(5_000, dims, seededRandom(3)));
      expect(busy.busy).to.equal(true);
      const q = new Float32Array(dims);
      expectRefused(() => busy.add(q), Error, 'ERR_FAISS_BUSY', /addAsync or serializeAsync is running/);
      expectRefused(() => busy.serialize(), Error, 'ERR_FAISS_BUSY');
      expectRefused(() => busy.dispose(), Error, 'ERR_FAISS_BUSY');
      let second: unknown;
      await busy.addAsync(q).catch((err: unknown) => (second = err));
      expect(second).to.be.instanceOf(Error).with.property('code', 'ERR_FAISS_BUSY');
      await busy.serializeAsync().catch((err: unknown) => (second = err));
      expect(second).to.be.instanceOf(Error).with.property('code', 'ERR_FAISS_BUSY');
      // Searches go on, over the parts added so far: ntotal grows part by part.
      const seen = new Set<number>();
      while (busy.busy) {
        const ntotal = busy.ntotal;
        seen.add(ntotal);
        // Exactly the labels seen: a part added between reading ntotal and the search is not allowed.
        const allow = new Uint8Array(Math.ceil(ntotal / 8)).fill(0xff);
        if (ntotal % 8 !== 0) allow[allow.length - 1] = (1 << (ntotal % 8)) - 1;
        const found = busy.search(q, 3, { allow });
        for (const label of found.labels) expect(label).to.be.within(0, ntotal - 1);
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(await adding).to.equal(100);
      expect(seen.size, 'ntotal seen growing while the add ran').to.be.greaterThan(1);
      expect([busy.busy, busy.ntotal]).to.deep.equal([false, 5_100]);
      expect(busy.search(q, 1).labels[0]).to.be.at.least(0);
    });

    it('serializes on a worker thread to the bytes serialize gives, searching meanwhile', async () => {
      const q = uniformVectors(1, dims, seededRandom(9));
      const serializing = index.serializeAsync();
      expect(index.busy).to.equal(true);
      const during = index.search(q, 5);
      const bytes = await serializing;
      expect(index.busy).to.equal(false);
      expect(bytes.equals(index.serialize())).to.equal(true);
      const copy = track(faiss.deserialize(bytes));
      expect(copy.search(q, 5)).to.deep.equal(during);
    });

    it('takes a thread count from 1 up, with the same answers at 1 thread', () => {
      const q = uniformVectors(30, dims, seededRandom(8));
      const before = index.search(q, 5);
      try {
        faiss.setThreads(1);
        expect(index.search(q, 5)).to.deep.equal(before);
      } finally {
        faiss.setThreads(availableParallelism());
      }
      expectRefused(() => faiss.setThreads(0), RangeError, 'ERR_OUT_OF_RANGE', /threads/);
    });

    it('refuses calls after dispose, and a second dispose is harmless', () => {
      const gone = faiss.create({ kind: 'flat', dims, metric: 'ip' });
      gone.dispose();
      gone.dispose();
      expectRefused(() => gone.search(new Float32Array(dims), 1), Error, 'ERR_FAISS_DISPOSED');
      expectRefused(() => gone.add(new Float32Array(dims)), Error, 'ERR_FAISS_DISPOSED');
      expect(index.search(new Float32Array(dims), 1).labels[0]).to.be.at.least(0); // and the rest still works
    });
  });

  describe('addAsync', () => {
    it('keeps the event loop turning while it builds a 20 000 × 64 HNSW index', async () => {
      const dims = 64;
      const random = seededRandom(4);
      const vectors = clusteredVectors(20_000, mixtureCentres(50, dims, random), dims, 0.5, random);
      const index = track(faiss.create({ kind: 'hnsw', dims, metric: 'ip' }));
      let ticks = 0;
      let longestGap = 0;
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        longestGap = Math.max(longestGap, now - last);
        last = now;
        ticks++;
      }, 5);
      const started = performance.now();
      await index.addAsync(vectors);
      const took = performance.now() - started;
      clearInterval(timer);
      expect(index.ntotal).to.equal(20_000);
      // The add takes hundreds of milliseconds; the 5 ms timer must have kept firing all along.
      expect(ticks).to.be.at.least(Math.floor(took / 50));
      expect(longestGap).to.be.below(Math.max(100, took / 2));
    });

    // addAsync deals out Faiss's inserts to the threads itself (native/faiss/src/hnsw-add.cc): the graph
    // it builds on every core, in parts, must be as good as one thread's, for either metric.
    for (const metric of ['ip', 'l2'] as const) {
      it(`${metric}: builds in adds of every size, on every core and on one, a graph that finds what one add on one thread finds`, async () => {
        const dims = 64;
        const random = seededRandom(metric === 'ip' ? 21 : 22);
        const centres = mixtureCentres(100, dims, random);
        const vectors = clusteredVectors(20_000, centres, dims, 0.5, random);
        const queries = clusteredVectors(200, centres, dims, 0.5, random);
        const parallel = track(faiss.create({ kind: 'hnsw', dims, metric }));
        faiss.setThreads(Math.max(2, availableParallelism())); // two at least: threads that race
        try {
          // Adds of every size, on every core and on the calling thread (one): what the index keeps from
          // one add to the next (a lock per vertex, a visited table per thread) grows with it.
          const sizes = [5_000, 1, 4, 300, 2, 7_000, 17, 1_000];
          for (let from = 0, i = 0; from < 20_000; i++) {
            const to = Math.min(20_000, from + sizes[i % sizes.length]!);
            const part = vectors.subarray(from * dims, to * dims);
            if (i % 3 === 2) parallel.add(part);
            else await parallel.addAsync(part);
            from = to;
          }
        } finally {
          faiss.setThreads(availableParallelism());
        }
        const serial = track(build({ kind: 'hnsw', dims, metric }, vectors));
        const exact = track(build({ kind: 'flat', dims, metric }, vectors)).search(queries, 10).labels;
        expect(parallel.ntotal).to.equal(20_000);
        const ours = recall(parallel.search(queries, 10).labels, exact, 10);
        expect(ours).to.be.at.least(recall(serial.search(queries, 10).labels, exact, 10) - 0.02);
        expect(ours).to.be.at.least(0.9);
        // Every vector is linked into the graph: each one, searched for, is found.
        const found = parallel.search(vectors.subarray(0, 2_000 * dims), 1).labels;
        expect(found.filter((label, i) => label === i).length).to.be.at.least(1_990);
      });
    }
  });

  describe('memory', () => {
    const dims = 384;
    let bytes: Buffer;
    let queries: Float32Array;
    const temp = tempDir();

    before(function () {
      this.timeout(20_000);
      const random = seededRandom(6);
      const vectors = clusteredVectors(10_000, mixtureCentres(100, dims, random), dims, 0.5, random);
      queries = vectors.slice(0, 10 * dims);
      const source = build({ kind: 'hnsw', dims, metric: 'ip' }, vectors);
      bytes = source.serialize();
      source.dispose();
      expect(bytes.length).to.be.greaterThan(15 * MiB);
    });
    after(() => temp.remove());

    // Method. An index's memory is native (malloc), freed by dispose() itself and not by V8's GC, so
    // the process RSS is what to watch, and it needs no global.gc. The baseline is taken after 10
    // warm-up cycles: during the first ones malloc's arenas and its mmap threshold adapt to the
    // index's allocation sizes and V8 compiles the code paths, which raises RSS once and for all.
    // A leak shows as growth proportional to the cycles: leaking the index once per cycle would add
    // 100 × 18 MiB. When the run has --expose-gc, V8 garbage is collected before each reading too.
    it('loads and drops a 10 000 × 384 HNSW index 100 times within 50 MiB of RSS', function () {
      this.timeout(40_000);
      const gc = (globalThis as { gc?: () => void }).gc;
      const cycle = (): void => {
        const index = faiss.deserialize(bytes);
        index.search(queries, 10);
        index.dispose();
      };
      for (let i = 0; i < 10; i++) cycle();
      gc?.();
      const before = process.memoryUsage.rss();
      for (let i = 0; i < 100; i++) cycle();
      gc?.();
      const growth = process.memoryUsage.rss() - before;
      expect(growth / MiB, 'RSS growth in MiB').to.be.below(50);
    });

    // The same with indexes dropped, not disposed, so that GC finalizers free them: in a child
    // process run with --expose-gc, which collects (and lets finalizers run) after each drop.
    it('frees an index the GC collects without dispose, 60 times within 50 MiB of RSS', function () {
      this.timeout(40_000);
      const file = temp.file('index.bin');
      writeFileSync(file, bytes);
      const module = new URL('../../../node/vector/faiss.js', import.meta.url).href;
      const script = `
        import { readFileSync } from 'node:fs';
        const { faiss } = await import(${JSON.stringify(module)});
        const bytes = readFileSync(${JSON.stringify(file)});
        const settle = async () => { for (let i = 0; i < 2; i++) { gc(); await new Promise((r) => setImmediate(r)); } };
        const drop = async (times) => { for (let i = 0; i < times; i++) { faiss.deserialize(bytes); await settle(); } };
        await drop(10);
        const before = process.memoryUsage.rss();
        await drop(60);
        console.log(JSON.stringify({ growth: process.memoryUsage.rss() - before }));
      `;
      const child = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
        encoding: 'utf8',
      });
      expect(child.status, child.stderr).to.equal(0);
      const { growth } = JSON.parse(child.stdout) as { growth: number };
      expect(growth / MiB, 'RSS growth in MiB').to.be.below(50);
    });
  });
});
