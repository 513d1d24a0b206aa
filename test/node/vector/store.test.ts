import { expect } from 'chai';
import { FenecError } from '../../../shared/errors.js';
import type { Metric } from '../../../shared/fenecql/ast.js';
import { openWritable, type Connection } from '../../../node/storage/sqlite.js';
import {
  VectorStore,
  vectorFieldSql,
  type VectorFieldSpec,
  type VectorStoreOptions,
} from '../../../node/vector/store.js';
import { tempDir } from '../../helpers/temp.js';
import { seededRandom } from '../../helpers/vectors.js';
import { blob, bruteForce, createCollection, expectSameAnswer, randomVector } from '../../helpers/vector-table.js';

/** A fresh file with one collection, and a store over its @hnsw fields. */
class Setup {
  readonly temp = tempDir();
  readonly db: Connection;
  readonly specs: VectorFieldSpec[];
  store: VectorStore | undefined;

  constructor(definition: string) {
    this.db = openWritable(this.temp.file('v.fenec'));
    this.specs = createCollection(this.db, definition);
  }

  open(options: Partial<VectorStoreOptions> = {}): VectorStore {
    this.store = VectorStore.open(this.db, this.specs, { readOnly: false, ...options });
    return this.store;
  }

  /** Inserts rows with these vectors into `field` in one transaction; their ids, in order. */
  insert(field: string, vectors: readonly (ArrayLike<number> | null)[]): number[] {
    const insert = this.db.prepare(`INSERT INTO c_docs ("${field}") VALUES (?)`);
    const ids = this.db.transaction(() =>
      vectors.map((v) => Number(insert.run(v === null ? null : blob(v)).lastInsertRowid)),
    )();
    this.store?.catchUp();
    return ids;
  }

  remove(): void {
    this.store?.close();
    this.db.close();
    this.temp.remove();
  }
}

/** Forgets the dropped table's last id, so that the new one hands out the same ids again. */
function forgetLastId(db: Connection): void {
  db.prepare("DELETE FROM sqlite_sequence WHERE name = 'c_docs'").run();
}

function vectors(n: number, dims: number, random: () => number): Float32Array[] {
  return Array.from({ length: n }, () => randomVector(dims, random));
}

describe('VectorStore (node/vector/store)', function () {
  // Builds of a few thousand vectors in the background: seconds on a busy machine.
  this.timeout(120_000);
  let setup: Setup;
  afterEach(() => setup?.remove());

  describe('vectorFieldSql', () => {
    const log = (db: Connection): [string, number][] =>
      db.prepare('SELECT field, row_id FROM _fenec_vector_log ORDER BY seq').raw().all() as [string, number][];

    it('logs a row when its vector is set, changed, cleared or deleted, and not otherwise', () => {
      setup = new Setup('docs (vec vector<2> @hnsw(l2), tag int)');
      const { db } = setup;
      const v = (x: number): Buffer => blob([x, x]);
      db.prepare('INSERT INTO c_docs (vec, tag) VALUES (?, 1)').run(v(1)); // 1: logged
      db.prepare('INSERT INTO c_docs (vec, tag) VALUES (NULL, 2)').run(); // 2: no vector, not logged
      db.prepare('UPDATE c_docs SET tag = 5').run(); // another field: not logged
      db.prepare('UPDATE c_docs SET vec = ? WHERE id = 1').run(v(1)); // the same vector: not logged
      db.prepare('UPDATE c_docs SET vec = ? WHERE id = 2').run(v(2)); // set: logged
      db.prepare('INSERT INTO c_docs (id, vec) VALUES (1, ?) ON CONFLICT ("id") DO UPDATE SET vec = excluded.vec').run(
        v(3),
      ); // put: logged
      db.prepare('UPDATE c_docs SET vec = NULL WHERE id = 1').run(); // cleared: logged
      db.prepare('UPDATE c_docs SET id = 7 WHERE id = 2').run(); // a new id: both logged
      db.prepare('DELETE FROM c_docs WHERE id = 1').run(); // no vector: not logged
      db.prepare('DELETE FROM c_docs WHERE id = 7').run(); // logged
      expect(log(db)).to.deep.equal([
        ['vec', 1],
        ['vec', 2],
        ['vec', 1],
        ['vec', 1],
        ['vec', 2],
        ['vec', 7],
        ['vec', 7],
      ]);
    });

    it('drops the triggers, the log entries and the snapshot, so that the column can be dropped', () => {
      setup = new Setup('docs (vec vector<2> @hnsw(l2), other vector<2> @hnsw(ip))');
      setup.insert('vec', [
        [1, 2],
        [3, 4],
      ]);
      setup.insert('other', [[1, 2]]);
      setup.open().close(); // stores both snapshots
      const { db } = setup;
      db.prepare('INSERT INTO c_docs (vec, other) VALUES (?, ?)').run(blob([5, 6]), blob([7, 8]));
      const { drop } = vectorFieldSql('docs', 'vec', '"c_docs"');
      db.transaction(() => {
        drop.forEach((sql) => db.exec(sql));
        db.exec('ALTER TABLE c_docs DROP COLUMN vec');
      })();
      expect(log(db)).to.deep.equal([['other', 4]]);
      expect(db.prepare('SELECT field FROM _fenec_vector_index').pluck().all()).to.deep.equal(['other']);
      expect(db.prepare('SELECT DISTINCT field FROM _fenec_vector_index_part').pluck().all()).to.deep.equal(['other']);
      expect(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger'").pluck().all()).to.have.members([
        'v.docs.other.insert',
        'v.docs.other.update',
        'v.docs.other.delete',
      ]);
    });
    it('forgets what a dropped collection left when one of the same name is made again', () => {
      setup = new Setup('docs (vec vector<4> @hnsw(l2))');
      const random = seededRandom(4);
      setup.insert('vec', vectors(300, 4, random));
      setup.open().close(); // a snapshot of the old rows
      setup.store = undefined;
      const { db } = setup;
      db.exec('DROP TABLE c_docs'); // takes the triggers, not the snapshot
      forgetLastId(db);
      createCollection(db, 'docs (vec vector<4> @hnsw(l2))');
      setup.insert('vec', vectors(30, 4, random)); // ids 1… again, other vectors (too few to set off a rebuild)
      const store = setup.open();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 30, live: 30 });
      const q = randomVector(4, random);
      expectSameAnswer(store.search('docs', 'vec', q, 10), bruteForce(db, 'docs', 'vec', q, 'l2', 10), 'the new rows');
    });
  });

  describe('search', () => {
    for (const metric of ['cosine', 'l2', 'ip'] as Metric[]) {
      it(`${metric}: agrees with an exact scan on the top result for 100 random queries over 2 000 rows`, async () => {
        setup = new Setup(`docs (vec vector<32> @hnsw(${metric}))`);
        const random = seededRandom(metric.length);
        setup.insert('vec', vectors(2000, 32, random));
        const store = setup.open();
        await store.idle(); // built in the background: the index alone answers from here
        expect(store.info('docs', 'vec')).to.include({
          state: 'ready',
          serving: true,
          ntotal: 2000,
          live: 2000,
          tombstones: 0,
        });
        for (let i = 0; i < 100; i++) {
          const q = randomVector(32, random);
          const [top] = store.search('docs', 'vec', q, 1);
          const [want] = bruteForce(setup.db, 'docs', 'vec', q, metric, 1);
          expect(top!.score, `query ${i}`).to.be.closeTo(want!.score, 1e-4); // a tie may name either row
          if (top!.rowId !== want!.rowId) expect(Math.abs(top!.score - want!.score)).to.be.below(1e-5);
        }
      });
    }

    it('scores as fenecql.md says: cosine similarity, 1/(1+d) for l2, the inner product for ip', () => {
      setup = new Setup('docs (c vector<3> @hnsw(cosine), e vector<3> @hnsw(l2), p vector<3> @hnsw(ip))');
      const rows = [
        [2, 0, 0],
        [0, 3, 0],
        [1, 1, 0],
        [0, 0, 0],
      ];
      const l2Rows = [
        [1, 2, 0],
        [1, 0, 0],
        [4, 0, 0],
        [0, 0, 0],
      ]; // at distances 2, 0, 3, 1 from the query
      const insert = setup.db.prepare('INSERT INTO c_docs (c, e, p) VALUES (?, ?, ?)');
      rows.forEach((v, i) => insert.run(blob(v), blob(l2Rows[i]!), blob(v)));
      const store = setup.open();
      const q = [1, 0, 0];
      const scores = (field: string): number[][] =>
        store.search('docs', field, q, 4).map((r) => [r.rowId, Number(r.score.toFixed(5))]);
      expect(scores('c')).to.deep.equal([
        [1, 1],
        [3, 0.70711],
        [2, 0],
        [4, 0],
      ]); // a zero vector's similarity is 0
      expect(scores('e')).to.deep.equal([
        [2, 1],
        [4, 0.5],
        [1, 0.33333],
        [3, 0.25],
      ]);
      expect(scores('p')).to.deep.equal([
        [1, 2],
        [3, 1],
        [2, 0],
        [4, 0],
      ]);
    });

    for (const share of [0.01, 0.001]) {
      it(`returns k rows, all allowed, when ${share * 100} % of 10 000 rows are allowed`, () => {
        setup = new Setup('docs (vec vector<16> @hnsw(cosine))');
        const random = seededRandom(77);
        const ids = setup.insert(
          'vec',
          Array.from({ length: 10_000 }, (_, i) => (i % 50 === 7 ? null : randomVector(16, random))),
        );
        const store = setup.open();
        const withVector = ids.filter((_, i) => i % 50 !== 7);
        const k = share === 0.01 ? 10 : 5;
        for (let i = 0; i < 20; i++) {
          const allowed = new Set<number>();
          while (allowed.size < share * 10_000) allowed.add(withVector[Math.floor(random() * withVector.length)]!);
          const q = randomVector(16, random);
          // unknown ids and a row without a vector are ignored
          const got = store.search('docs', 'vec', q, k, [...allowed, -5, 10_000_000, ids[7]!]);
          expect(got).to.have.length(k);
          expect(got.every((r) => allowed.has(r.rowId))).to.equal(true);
          expectSameAnswer(got, bruteForce(setup.db, 'docs', 'vec', q, 'cosine', k, allowed), `query ${i}`);
        }
      });
    }

    it('returns every allowed row when fewer than k are allowed or exist', () => {
      setup = new Setup('docs (vec vector<4> @hnsw(l2))');
      const ids = setup.insert('vec', vectors(30, 4, seededRandom(1)));
      const store = setup.open();
      const q = [0, 0, 0, 0];
      expect(store.search('docs', 'vec', q, 100)).to.have.length(30);
      expect(
        store
          .search('docs', 'vec', q, 10, [ids[3]!, ids[9]!])
          .map((r) => r.rowId)
          .sort(),
      ).to.deep.equal([ids[3], ids[9]].sort());
      expect(store.search('docs', 'vec', q, 10, [])).to.deep.equal([]);
      expect(store.search('docs', 'vec', q, 0)).to.deep.equal([]);
    });

    it('never returns a deleted row, nor an updated one under its old vector', async () => {
      setup = new Setup('docs (vec vector<16> @hnsw(cosine))');
      const random = seededRandom(5);
      const old = vectors(2000, 16, random);
      const ids = setup.insert('vec', old);
      const store = setup.open();
      await store.idle();
      const { db } = setup;
      const deleted = ids.slice(0, 100);
      const updated = ids.slice(100, 200);
      const cleared = ids.slice(200, 250);
      db.transaction(() => {
        for (const id of deleted) db.prepare('DELETE FROM c_docs WHERE id = ?').run(id);
        for (const id of updated)
          db.prepare('UPDATE c_docs SET vec = ? WHERE id = ?').run(blob(randomVector(16, random)), id);
        for (const id of cleared) db.prepare('UPDATE c_docs SET vec = NULL WHERE id = ?').run(id);
      })();
      store.catchUp();
      expect(store.info('docs', 'vec')).to.include({ serving: true, ntotal: 2100, live: 1850, tombstones: 250 });
      const gone = new Set([...deleted, ...cleared]);
      for (let i = 0; i < 250; i++) {
        const q = old[i]!; // each changed row's old vector: it would be its own nearest
        const got = store.search('docs', 'vec', q, 5, null, 400);
        expect(
          got.some((r) => gone.has(r.rowId)),
          `old vector of row ${ids[i]}`,
        ).to.equal(false);
        expectSameAnswer(got, bruteForce(db, 'docs', 'vec', q, 'cosine', 5), `old vector of row ${ids[i]}`);
      }
    });

    it("refuses a query of another length, naming the field's, and a zero query on a cosine field", () => {
      setup = new Setup('docs (vec vector<3> @hnsw(cosine), d vector<3> @hnsw(l2))');
      setup.insert('vec', [[1, 2, 3]]);
      const store = setup.open();
      expect(() => store.search('docs', 'vec', [1, 2, 3, 4, 5], 3))
        .to.throw(FenecError, 'vector has 5 components; field vec takes vector<3>')
        .with.property('code', 'vector_length');
      expect(() => store.search('docs', 'vec', [0, 0, 0], 3))
        .to.throw(FenecError, /zero vector/)
        .with.property('code', 'invalid_value');
      expect(() => store.search('docs', 'vec', [0, NaN, 0], 3))
        .to.throw(FenecError)
        .with.property('code', 'invalid_number');
      expect(() => store.search('docs', 'vec', [0, 1e39, 0], 3))
        .to.throw(FenecError, /float32/)
        .with.property('code', 'invalid_number');
      expect(store.search('docs', 'd', [0, 0, 0], 3)).to.deep.equal([]); // l2 takes a zero vector; d holds none
    });
  });

  describe('rows of equal vectors', () => {
    /** `copies` rows of each of `shared` vectors and `singles` rows of their own, shuffled; their ids by vector. */
    function insertWithCopies(
      dims: number,
      shared: number,
      copies: number,
      singles: number,
      random: () => number,
    ): Float32Array[] {
      const common = vectors(shared, dims, random);
      const all = [
        ...vectors(singles, dims, random),
        ...Array.from({ length: shared * copies }, (_, i) => common[i % shared]!),
      ];
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [all[i], all[j]] = [all[j]!, all[i]!];
      }
      setup.insert('vec', all);
      return common;
    }

    it('hold one label per vector, so that copies leave the graph whole: near finds what an exact scan finds, ties in id order', async () => {
      // 50 vectors held by 200 rows each beside 5 000 rows of their own: a graph of a node per row found
      // 0.40 of the true 10 nearest at the default ef (raw Faiss, the same rows), 1.0 with the copies as one.
      setup = new Setup('docs (vec vector<8> @hnsw(cosine))');
      const random = seededRandom(41);
      const common = insertWithCopies(8, 50, 200, 5000, random);
      const store = setup.open();
      await store.idle();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 5050, live: 15_000, tombstones: 0 });
      for (let i = 0; i < 100; i++) {
        const q = i % 4 === 0 ? common[i % 50]! : randomVector(8, random);
        const want = bruteForce(setup.db, 'docs', 'vec', q, 'cosine', 10);
        expect(
          store.search('docs', 'vec', q, 10).map((r) => r.rowId),
          `query ${i}`,
        ).to.deep.equal(want.map((r) => r.rowId));
      }
    });

    it('answer the lowest ids of a vector thousands of rows hold, of those allowed', async () => {
      setup = new Setup('docs (vec vector<4> @hnsw(cosine))');
      const random = seededRandom(8);
      const common = [0.5, -0.5, 0.5, 0.5];
      const all = [...Array.from({ length: 20_000 }, () => common), ...vectors(500, 4, random)];
      for (let i = all.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [all[i], all[j]] = [all[j]!, all[i]!];
      }
      const ids = setup.insert('vec', all);
      const holders = ids.filter((_, i) => all[i] === common);
      const store = setup.open();
      await store.idle();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 501, live: 20_500 });
      expect(store.search('docs', 'vec', common, 10).map((r) => r.rowId)).to.deep.equal(holders.slice(0, 10));
      const allowed = holders.filter((_, i) => i % 7 === 3);
      expect(store.search('docs', 'vec', common, 5, allowed).map((r) => r.rowId)).to.deep.equal(allowed.slice(0, 5));
      expect(store.search('docs', 'vec', common, 5, new Set(allowed.slice(-2))).map((r) => r.rowId)).to.deep.equal(
        allowed.slice(-2),
      );
    });

    it('keep a vector while one row holds it: a change moves the row to its new vector, and the last row to go leaves a tombstone', () => {
      setup = new Setup('docs (vec vector<3> @hnsw(l2))');
      const [a, b, c] = [
        [1, 0, 0],
        [0, 1, 0],
        [0, 0, 1],
      ];
      // Ten more vectors keep the one tombstone under the share that starts a rebuild.
      const ids = setup.insert('vec', [a, a, a, b, ...vectors(10, 3, seededRandom(3))]);
      const store = setup.open();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 12, live: 14, tombstones: 0 });
      const near = (q: number[], allowed?: number[]): number[] =>
        store
          .search('docs', 'vec', q, 10, allowed)
          .filter((r) => r.score === 1)
          .map((r) => r.rowId);
      expect(near(a)).to.deep.equal(ids.slice(0, 3));
      setup.db.prepare('UPDATE c_docs SET vec = ? WHERE id = ?').run(blob(c), ids[0]);
      store.catchUp();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 13, live: 14, tombstones: 0 });
      expect(near(a)).to.deep.equal(ids.slice(1, 3));
      expect(near(c)).to.deep.equal([ids[0]]);
      expect(near(a, [ids[2]!, ids[3]!]), 'only the allowed rows of a shared vector').to.deep.equal([ids[2]]);
      setup.db.prepare('DELETE FROM c_docs WHERE id IN (?, ?)').run(ids[1], ids[2]);
      store.catchUp();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 13, live: 12, tombstones: 1 });
      expect(near(a)).to.deep.equal([]);
      const [again] = setup.insert('vec', [a]);
      expect(store.info('docs', 'vec')).to.include({ ntotal: 14, live: 13, tombstones: 1 });
      expect(near(a)).to.deep.equal([again]);
    });
  });

  describe('sync', () => {
    it('indexes a new field from the rows it holds, and forgets a dropped one', () => {
      setup = new Setup('docs (vec vector<8> @hnsw(l2), extra vector<4>)');
      const random = seededRandom(9);
      setup.insert('vec', vectors(100, 8, random));
      const store = setup.open();
      const { db } = setup;
      const update = db.prepare('UPDATE c_docs SET extra = ? WHERE id = ?');
      db.transaction(() => {
        for (let id = 1; id <= 100; id += 2) update.run(blob(randomVector(4, random)), id);
      })();
      // The lead's alter: the triggers in the schema transaction, then sync with the fields now.
      db.transaction(() => vectorFieldSql('docs', 'extra', '"c_docs"').create.forEach((sql) => db.exec(sql)))();
      const extra: VectorFieldSpec = { collection: 'docs', field: 'extra', table: '"c_docs"', dims: 4, metric: 'ip' };
      store.sync([...setup.specs, extra]);
      expect(store.info('docs', 'extra')).to.include({ serving: true, live: 50 });
      const q = randomVector(4, random);
      expectSameAnswer(store.search('docs', 'extra', q, 7), bruteForce(db, 'docs', 'extra', q, 'ip', 7), 'new field');
      db.transaction(() => vectorFieldSql('docs', 'vec', '"c_docs"').drop.forEach((sql) => db.exec(sql)))();
      store.sync([extra]);
      expect(store.info('docs', 'vec')).to.equal(undefined);
      expect(() => store.search('docs', 'vec', randomVector(8, random), 1)).to.throw(/not an @hnsw field/);
    });
  });
});
