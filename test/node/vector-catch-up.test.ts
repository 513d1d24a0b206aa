import { expect } from 'chai';
import Database from 'better-sqlite3';
import { FenecDatabase } from '../../node/database.js';
import type { VectorStoreEvent } from '../../node/vector/store.js';
import { tempDir } from '../helpers/temp.js';

type Near = { rows: { title: string }[] };
type IndexState = { rows: number; pending: number; building: boolean };

/**
 * The vector indexes catch up with a write's log entries after it commits. When they cannot (here
 * the log table is renamed away by another program, so SQLite refuses the read: a real failure, no
 * stand-in), the write has still happened and says so; searches scan the rows until a catch-up succeeds.
 */
describe('a vector catch-up that fails after a commit', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let other: Database.Database;
  const events: VectorStoreEvent[] = [];

  beforeEach(() => {
    temp = tempDir();
    events.length = 0;
    const file = temp.file('c.fenec');
    db = FenecDatabase.open({
      file,
      readOnly: false,
      program: 'test',
      sweepIntervalMs: 0,
      onVectorEvent: (event) => events.push(event),
    });
    db.execute('create collection docs (title text required, v vector<3> @hnsw(l2))');
    db.execute('insert into docs $1', [
      [
        { title: 'a', v: [1, 0, 0] },
        { title: 'b', v: [0, 1, 0] },
      ],
    ]);
    other = new Database(file);
  });
  afterEach(async () => {
    other.close();
    await db.idle();
    db.close();
    temp.remove();
  });

  const near = (v: number[], limit = 1): string[] =>
    (db.execute(`get docs select title near v $1 limit ${limit}`, [v]) as unknown as Near).rows.map((r) => r.title);
  const index = (): IndexState =>
    (
      db.execute('schema docs') as unknown as { collections: { fields: { name: string; index?: IndexState }[] }[] }
    ).collections[0]!.fields.find((f) => f.name === 'v')!.index!;

  it('answers the committed write, logs the failure, searches the rows meanwhile, and catches up after', async () => {
    expect(near([1, 0, 0])).to.deep.equal(['a']);
    // The triggers follow the rename (SQLite rewrites them): writes still log, but the store cannot read the log.
    other.exec('ALTER TABLE _fenec_vector_log RENAME TO away');

    const inserted = db.execute('insert into docs $1', [[{ title: 'c', v: [0, 0, 1] }]]);
    expect(inserted).to.include({ count: 1 });
    expect(inserted).to.have.property('ids').that.deep.equals([3]);
    const deleted = db.execute('del docs where title = $1', ['a']);
    expect(deleted).to.include({ count: 1 });
    expect(db.execute('get docs count')).to.include({ count: 2 });

    const failures = events.filter((e) => e.kind === 'failed');
    expect(failures, 'the failure is told once, not at every write').to.have.length(1);
    expect(failures[0]!.message).to.match(/vector log/);
    expect(String(failures[0]!.error)).to.match(/no such table: _fenec_vector_log/);

    // The index has not taken the new row or the deletion: the rows answer, never a deleted row.
    expect(near([0, 0, 1])).to.deep.equal(['c']);
    expect(near([1, 0, 0], 3))
      .to.have.members(['b', 'c'])
      .and.have.length(2);

    other.exec('ALTER TABLE away RENAME TO _fenec_vector_log');
    expect(near([0, 0, 1])).to.deep.equal(['c']);
    await db.idle();
    expect(index()).to.deep.equal({ rows: 2, pending: 0, building: false });
    expect(near([1, 0, 0], 3))
      .to.have.members(['b', 'c'])
      .and.have.length(2);
  });

  it('catches up at the next write once the log reads again', async () => {
    other.exec('ALTER TABLE _fenec_vector_log RENAME TO away');
    expect(db.execute('insert into docs $1', [[{ title: 'c', v: [0, 0, 1] }]])).to.include({ count: 1 });
    other.exec('ALTER TABLE away RENAME TO _fenec_vector_log');
    expect(db.execute('insert into docs $1', [[{ title: 'd', v: [1, 1, 0] }]])).to.include({ count: 1 });
    await db.idle();
    expect(index()).to.deep.equal({ rows: 4, pending: 0, building: false });
    expect(near([0, 0, 1])).to.deep.equal(['c']);
  });
});
