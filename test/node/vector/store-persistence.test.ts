import { expect } from 'chai';
import { openSnapshot, openWritable, type Connection } from '../../../node/storage/sqlite.js';
import {
  VectorStore,
  type VectorFieldSpec,
  type VectorStoreEvent,
  type VectorStoreOptions,
} from '../../../node/vector/store.js';
import { tempDir } from '../../helpers/temp.js';
import { seededRandom } from '../../helpers/vectors.js';
import { blob, bruteForce, createCollection, expectSameAnswer, randomVector } from '../../helpers/vector-table.js';

const DIMS = 16;
const SPEC: VectorFieldSpec = { collection: 'docs', field: 'vec', table: '"c_docs"', dims: DIMS, metric: 'cosine' };
/** Exact on these sizes: at least every node of the graph is visited. */
const EF_EXACT = 8192;

/** A file with `docs (vec vector<16> @hnsw(cosine))`, its writes, and stores opened over it. */
class Fixture {
  readonly temp = tempDir();
  readonly file = this.temp.file('v.fenec');
  db: Connection;
  store: VectorStore | undefined;
  readonly events: VectorStoreEvent[] = [];
  readonly random = seededRandom(31);

  constructor() {
    this.db = openWritable(this.file);
    createCollection(this.db, 'docs (vec vector<16> @hnsw(cosine))');
  }

  open(options: Partial<VectorStoreOptions> = {}): VectorStore {
    this.store = VectorStore.open(this.db, [SPEC], {
      readOnly: false,
      onEvent: (e) => this.events.push(e),
      ...options,
    });
    return this.store;
  }

  reopen(options: Partial<VectorStoreOptions> = {}): VectorStore {
    this.store?.close();
    this.events.length = 0;
    return this.open(options);
  }

  /** n inserts (a share of them without a vector), in one transaction, then catchUp. */
  insert(n: number, withoutVector = 0.05): number[] {
    const insert = this.db.prepare('INSERT INTO c_docs (vec) VALUES (?)');
    const ids = this.db.transaction(() =>
      Array.from({ length: n }, () =>
        Number(
          insert.run(this.random() < withoutVector ? null : blob(randomVector(DIMS, this.random))).lastInsertRowid,
        ),
      ),
    )();
    this.store?.catchUp();
    return ids;
  }

  /** Random updates, clears and deletes of existing rows, in one transaction, then catchUp. */
  churn(n: number): void {
    const max = this.db.prepare('SELECT max(id) FROM c_docs').pluck().get() as number;
    this.db.transaction(() => {
      for (let i = 0; i < n; i++) {
        const id = 1 + Math.floor(this.random() * max);
        const r = this.random();
        if (r < 0.5)
          this.db.prepare('UPDATE c_docs SET vec = ? WHERE id = ?').run(blob(randomVector(DIMS, this.random)), id);
        else if (r < 0.6) this.db.prepare('UPDATE c_docs SET vec = NULL WHERE id = ?').run(id);
        else this.db.prepare('DELETE FROM c_docs WHERE id = ?').run(id);
      }
    })();
    this.store?.catchUp();
  }

  /** `queries` searches, each equal to the brute-force answer. */
  check(queries: number, context: string, store = this.store!, db = this.db): void {
    for (let i = 0; i < queries; i++) {
      const q = randomVector(DIMS, this.random);
      expectSameAnswer(
        store.search('docs', 'vec', q, 10, null, EF_EXACT),
        bruteForce(db, 'docs', 'vec', q, 'cosine', 10),
        `${context} query ${i}`,
      );
    }
  }

  snapshotRow(): { seq: number; parts: number } | undefined {
    return this.db
      .prepare("SELECT seq, parts FROM _fenec_vector_index WHERE collection = 'docs' AND field = 'vec'")
      .get() as { seq: number; parts: number } | undefined;
  }

  logCount(): number {
    return this.db.prepare('SELECT count(*) FROM _fenec_vector_log').pluck().get() as number;
  }

  remove(): void {
    this.store?.close();
    if (this.db.open) this.db.close();
    this.temp.remove();
  }
}

describe('VectorStore persistence (node/vector/store)', () => {
  let f: Fixture;
  beforeEach(() => (f = new Fixture()));
  afterEach(() => f.remove());

  describe('snapshots', () => {
    it('rebuilds a small index on the spot and stores it before returning (compact); a large one is left to the background', async () => {
      f.insert(300); // 300 × 16 floats: under the store's syncLimit
      const store = f.open();
      await store.idle();
      f.churn(20); // tombstones, under the share that starts a rebuild by itself
      expect(store.info('docs', 'vec')!.tombstones).to.be.above(0);
      expect(store.rebuildNow('docs', 'vec')).to.equal(true);
      const info = store.info('docs', 'vec')!;
      expect(info).to.include({ state: 'ready', tombstones: 0, pending: 0, snapshotSeq: info.seq });
      expect(f.snapshotRow()!.seq, 'stored in the file').to.equal(info.seq);
      f.check(20, 'after the rebuild');
      f.insert(2000);
      expect(store.rebuildNow('docs', 'vec'), 'past syncLimit').to.equal(false);
    });

    it('keeps rows of equal vectors under one label through a snapshot: a copy written later joins it', async () => {
      const common = Array.from({ length: 10 }, () => randomVector(DIMS, f.random));
      const insert = f.db.prepare('INSERT INTO c_docs (vec) VALUES (?)');
      const write = (n: number): void =>
        f.db.transaction(() => {
          for (let i = 0; i < n; i++) insert.run(blob(common[i % 10]!));
        })();
      write(100);
      await f.open().idle();
      f.store!.close();
      const store = f.open();
      expect(store.info('docs', 'vec')).to.include({ snapshotSeq: f.snapshotRow()!.seq, ntotal: 10, live: 100 });
      write(30);
      store.catchUp();
      expect(store.info('docs', 'vec')).to.include({ ntotal: 10, live: 130, pending: 0 });
      f.check(20, 'after the copies joined');
    });

    it('stores the index at close; reopened, it loads it and replays the log after it', async () => {
      f.insert(3000);
      await f.open().idle();
      f.churn(200);
      f.store!.close();
      const stored = f.snapshotRow()!;
      expect(f.logCount(), 'the snapshot took the log with it').to.equal(0);
      // Writes with no store open: only the triggers see them.
      f.store = undefined;
      f.insert(300);
      f.churn(300);
      const store = f.open();
      const info = store.info('docs', 'vec')!;
      expect(info).to.include({ serving: true, snapshotSeq: stored.seq });
      expect(info.seq).to.be.greaterThan(stored.seq);
      expect(f.events.filter((e) => e.kind !== 'snapshot_written')).to.deep.equal([]);
      f.check(50, 'after replay');
    });

    it('writes a snapshot once the backlog reaches max(minimum, share × live), trimming the log', async () => {
      f.insert(2000, 0);
      await f.open({ snapshotMinBacklog: 100, snapshotShare: 0.1, snapshotQuietMs: 0 }).idle();
      const live = f.store!.info('docs', 'vec')!.live; // due at 10 % of it: 200
      const first = f.snapshotRow()!.seq; // the build from the rows is stored at once
      const update = f.db.prepare('UPDATE c_docs SET vec = ? WHERE id = ?');
      let id = 1;
      const updateNext = (): void => {
        update.run(blob(randomVector(DIMS, f.random)), id++);
        f.store!.catchUp();
      };
      while (id < Math.ceil(0.1 * live)) updateNext();
      expect(f.snapshotRow()!.seq, `not yet: ${id - 1} rows changed`).to.equal(first);
      expect(f.logCount()).to.equal(id - 1);
      updateNext();
      expect(f.snapshotRow()!.seq, `due at ${id - 1} rows changed`).to.be.greaterThan(first);
      expect(f.logCount()).to.equal(0);
      f.check(10, 'after the snapshot');
    });

    it('while writes come, stores a growing index each time it doubles; a pause of snapshotQuietMs applies the share rule', async () => {
      f.insert(2000, 0);
      const quietMs = 1000;
      await f.open({ snapshotMinBacklog: 100, snapshotShare: 0.1, snapshotQuietMs: quietMs }).idle();
      const first = f.snapshotRow()!.seq; // the build from the rows is stored at once
      const live = (): number => f.store!.info('docs', 'vec')!.live;
      // Past 10 % of the index, within the quiet time of each other: no snapshot yet, the log keeps the rows.
      const started = performance.now();
      while (f.logCount() < 0.2 * live()) {
        f.insert(50, 0);
        await f.store!.idle();
      }
      const elapsed = performance.now() - started;
      if (elapsed < quietMs)
        expect(f.snapshotRow()!.seq, `${f.logCount()} rows added in ${elapsed.toFixed(0)} ms`).to.equal(first);
      // The writes pause: the timer stores the index without another call.
      await new Promise((resolve) => setTimeout(resolve, 3 * quietMs));
      const paused = f.snapshotRow()!.seq;
      expect(paused, 'stored once writes paused').to.be.greaterThan(first);
      expect(f.logCount()).to.equal(0);
      // A load: the index doubles (changed ≥ half of live) and is stored while the writes still come.
      const before = live();
      let gap = 0; // a pause as long as quietMs (a loaded machine) would let the share rule store it first
      for (
        let last = performance.now();
        f.snapshotRow()!.seq === paused && live() < 3 * before;
        last = performance.now()
      ) {
        f.insert(100, 0);
        await f.store!.idle();
        gap = Math.max(gap, performance.now() - last);
      }
      expect(f.snapshotRow()!.seq, `stored at ${live()} live of ${before} while writes came`).to.be.greaterThan(paused);
      if (gap < quietMs) expect(live(), 'stored once the index doubled, not before').to.be.at.least(2 * before - 100);
      f.check(10, 'after the snapshots');
    });

    /** Rewrites a BLOB column of the snapshot tables through `change`. */
    const rewrite =
      (table: string, column: string, change: (bytes: Buffer) => Buffer) =>
      (db: Connection): void => {
        const rows = db.prepare(`SELECT rowid, ${column} AS b FROM ${table}`).all() as { rowid: number; b: Buffer }[];
        for (const { rowid, b } of rows)
          db.prepare(`UPDATE ${table} SET ${column} = ? WHERE rowid = ?`).run(change(Buffer.from(b)), rowid);
      };
    const damages: [string, (db: Connection) => void][] = [
      ['flipped bytes in the index', rewrite('_fenec_vector_index_part', 'bytes', (b) => b.fill(0x5a, 1000, 1016))],
      ['a truncated index', rewrite('_fenec_vector_index_part', 'bytes', (b) => b.subarray(0, b.length >> 1))],
      ['a missing part', (db) => db.exec('DELETE FROM _fenec_vector_index_part')],
      ['flipped bytes in the labels', rewrite('_fenec_vector_index', 'labels', (b) => b.fill(0x5a, 200, 208))],
      ['labels of another index', rewrite('_fenec_vector_index', 'labels', (b) => b.subarray(0, b.length - 8))],
    ];
    for (const [what, damage] of damages) {
      it(`builds the index from the rows when the snapshot has ${what}`, async () => {
        f.insert(1500);
        await f.open().idle();
        f.store!.close();
        f.store = undefined;
        f.churn(100);
        damage(f.db);
        const store = f.open();
        expect(f.events.map((e) => e.kind)).to.include('snapshot_damaged');
        expect(store.info('docs', 'vec')).to.include({ serving: true, tombstones: 0 });
        f.check(20, 'rebuilt');
        await store.idle();
        f.reopen(); // the rebuilt index was stored
        expect(f.events.map((e) => e.kind)).to.not.include('snapshot_damaged');
        f.check(5, 'stored again');
      });
    }

    it('reads a snapshot and the log read-only, writing nothing, and sees the file as of its transaction', () => {
      f.insert(1000);
      f.open().close();
      f.store = undefined;
      f.churn(100);
      const before = { snapshot: f.snapshotRow(), log: f.logCount() };
      const lastSeq = f.db.prepare('SELECT max(seq) FROM _fenec_vector_log').pluck().get() as number;
      const reader = openSnapshot(f.file);
      const store = VectorStore.open(reader, [SPEC], { readOnly: true, snapshotMinBacklog: 1, snapshotShare: 0 });
      try {
        expect(store.info('docs', 'vec')).to.include({ serving: true, snapshotSeq: before.snapshot!.seq });
        f.churn(100); // a writer beside it: the reader's transaction does not see this
        f.check(20, 'read-only', store, reader);
      } finally {
        store.close();
        reader.close();
      }
      expect(f.snapshotRow(), 'no snapshot written').to.deep.equal(before.snapshot);
      expect(
        f.db.prepare('SELECT count(*) FROM _fenec_vector_log WHERE seq <= ?').pluck().get(lastSeq),
        'no log entry deleted',
      ).to.equal(before.log);
    });

    it('creates the triggers a field lacks (a file from before) and builds its index from the rows', () => {
      f.db.exec('DROP TRIGGER "v.docs.vec.insert"; DROP TRIGGER "v.docs.vec.update"; DROP TRIGGER "v.docs.vec.delete"');
      f.insert(500);
      f.open();
      expect(f.events.map((e) => e.kind)).to.include('triggers_missing');
      f.churn(50);
      f.check(10, 'with triggers');
    });
  });

  describe('tombstones and rebuilds', () => {
    it('rebuilds itself once tombstones pass 20 % of the index, and stays exact', async () => {
      f.insert(2000);
      const store = f.open();
      await store.idle();
      const ntotal = store.info('docs', 'vec')!.ntotal;
      const ids = f.db.prepare('SELECT id FROM c_docs WHERE vec IS NOT NULL ORDER BY id').pluck().all() as number[];
      let rebuiltAt = -1;
      for (let i = 0; i < 500 && rebuiltAt < 0; i++) {
        f.db.prepare('DELETE FROM c_docs WHERE id = ?').run(ids[i]);
        store.catchUp();
        const info = store.info('docs', 'vec')!;
        if (info.state === 'building') rebuiltAt = i + 1;
        expect(info.tombstones).to.equal(i + 1);
        if (i % 100 === 50) f.check(3, `${i + 1} deleted`);
      }
      expect(rebuiltAt).to.equal(Math.floor(0.2 * ntotal) + 1);
      f.check(5, 'while the new index fills, beside the old');
      await store.idle();
      expect(store.info('docs', 'vec')).to.include({
        state: 'ready',
        ntotal: ntotal - rebuiltAt,
        live: ntotal - rebuiltAt,
        tombstones: 0,
      });
      f.check(20, 'after the rebuild');
    });

    it('rebuild() drops every tombstone and stores the index (compact)', async () => {
      f.insert(1000);
      const store = f.open();
      f.churn(100);
      expect(store.info('docs', 'vec')!.tombstones).to.be.greaterThan(0);
      await store.rebuild('docs', 'vec');
      const info = store.info('docs', 'vec')!;
      expect(info).to.include({ tombstones: 0, snapshotSeq: info.seq });
      expect(info.ntotal).to.equal(info.live);
      f.check(10, 'compacted');
    });
  });

  describe('background jobs', () => {
    const small = { syncLimit: 50 * DIMS }; // more than 50 vectors go to Faiss's worker thread

    it('builds a large index in the background, and answers exactly meanwhile', async () => {
      f.insert(3000);
      const store = f.open(small);
      // A new index is served at once, every row pending: searches scan the rows it does not hold yet.
      expect(store.info('docs', 'vec')).to.include({ state: 'adding', serving: true });
      expect(store.info('docs', 'vec')!.pending).to.be.greaterThan(0);
      f.check(5, 'while building');
      f.churn(20); // writes while it builds: added to the same index
      await store.idle();
      expect(store.info('docs', 'vec')).to.include({ state: 'ready', serving: true, pending: 0 });
      f.check(20, 'built');
    });

    it('stays ready while it stores a snapshot in the background, and idle() waits for the snapshot', async () => {
      f.insert(6000); // over 1 MB of index: its snapshot is serialized on Faiss's thread, not on the spot
      const store = f.open({ ...small, snapshotMinBacklog: 5, snapshotShare: 0, snapshotQuietMs: 0 });
      await store.idle();
      const built = store.info('docs', 'vec')!;
      expect(built).to.include({ state: 'ready', pending: 0, snapshotSeq: built.seq });
      expect(f.snapshotRow()!.seq, 'the build stored before idle() resolved').to.equal(built.seq);
      f.insert(10); // added on the spot, and past the snapshot rule: a snapshot starts in the background
      const storing = store.info('docs', 'vec')!;
      expect(storing.snapshotSeq, 'the new snapshot is not stored yet').to.be.below(storing.seq);
      // Every row is in the index: a loader waiting on `schema` must not be told a build runs.
      expect(storing).to.include({ state: 'ready', pending: 0 });
      await store.idle();
      const stored = store.info('docs', 'vec')!;
      expect(stored.snapshotSeq).to.equal(stored.seq);
      expect(f.snapshotRow()!.seq).to.equal(stored.seq);
    });

    it('adds a large batch in the background, and answers exactly meanwhile', async () => {
      f.insert(2000);
      const store = f.open(small);
      await store.idle();
      f.insert(400); // 400 > 50: a job, added to the index beside the searches
      expect(store.info('docs', 'vec')).to.include({ state: 'adding', serving: true });
      f.check(5, 'while adding');
      await store.idle();
      expect(store.info('docs', 'vec')).to.include({ state: 'ready', serving: true, tombstones: 0 });
      expect(store.info('docs', 'vec')!.ntotal).to.equal(f.db.prepare('SELECT count(vec) FROM c_docs').pluck().get());
      f.check(20, 'added');
    });

    it('answers from the old index while a rebuild fills the new one, and queues the rows changed meanwhile for it', async () => {
      f.insert(3000);
      const store = f.open({ ...small, snapshotMinBacklog: 5, snapshotShare: 0 });
      await store.idle();
      const rebuilding = store.rebuild('docs', 'vec');
      for (let i = 0; i < 20 && store.info('docs', 'vec')!.state !== 'building'; i++) await Promise.resolve();
      expect(store.info('docs', 'vec')).to.include({ state: 'building', serving: true });
      const before = f.snapshotRow()!.seq;
      // queued: the old index answers for the rest, the queued rows are scanned
      for (let i = 0; i < 30; i++) f.churn(3);
      expect(store.info('docs', 'vec')!.pending).to.be.greaterThan(0);
      f.check(10, 'while rebuilding');
      expect(f.snapshotRow()!.seq, 'no snapshot of the old index while the new one fills').to.equal(before);
      expect(f.logCount(), 'the log keeps what the stored snapshot does not hold').to.be.greaterThan(0);
      await rebuilding;
      const info = store.info('docs', 'vec')!;
      expect(info).to.include({ state: 'ready', serving: true, pending: 0 });
      expect(info.live).to.equal(f.db.prepare('SELECT count(vec) FROM c_docs').pluck().get());
      expect(info.tombstones, 'at most the rows changed after the new index took them').to.be.at.most(90);
      f.check(20, 'after the swap');
      f.reopen();
      f.check(10, 'reopened');
    });

    it('closes while a job runs, and frees its index when the job ends', async () => {
      f.insert(3000);
      const store = f.open(small);
      expect(store.info('docs', 'vec')!.state).to.equal('adding');
      store.close();
      f.store = undefined;
      await new Promise((resolve) => setTimeout(resolve, 300));
      f.db.close();
      f.db = openWritable(f.file);
      f.open();
      f.check(5, 'after a close mid-build');
    });
  });
});
