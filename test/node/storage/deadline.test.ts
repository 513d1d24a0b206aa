/**
 * The time limit inside SQLite (node/storage/deadline.ts, native/fts5/src/deadline.c), on a real file:
 * a statement past the deadline fails statement_timeout and changes nothing, the connection is
 * disarmed after, and what follows a commit runs past the deadline whole.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { FenecDatabase } from '../../../node/database.js';
import { openWritable } from '../../../node/storage/sqlite.js';
import { FenecError } from '../../../shared/errors.js';
import { tempDir } from '../../helpers/temp.js';

/** Three hundred calls of a JavaScript function per row: seconds over 20 000 rows, never matching. */
const SLOW = Array.from(
  { length: 30 },
  (_, i) => `${'lower('.repeat(10)}body${')'.repeat(10)} like "%never-${i}%"`,
).join(' or ');

function caught(work: () => unknown): FenecError {
  try {
    work();
  } catch (err) {
    expect(err).to.be.instanceOf(FenecError);
    return err as FenecError;
  }
  expect.fail('expected a refusal');
}

describe('the statement deadline inside SQLite', function () {
  this.timeout(30_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;

  before(() => {
    temp = tempDir('fenec-deadline-');
    db = FenecDatabase.open({
      file: path.join(temp.dir, 'd.fenec'),
      readOnly: false,
      program: 'deadline-test',
      sweepIntervalMs: 0,
    });
    db.execute('create collection big (body text, n int)');
    db.execute('insert into big $1', [
      Array.from({ length: 20_000 }, (_, n) => ({ body: `Row ${n} Of The Big Collection`, n })),
    ]);
  });

  after(() => {
    db.close();
    temp.remove();
  });

  it('stops a read at its deadline with statement_timeout, its limit and how to make it cheaper', () => {
    const started = Date.now();
    const err = caught(() => db.within(Date.now() + 100, 100, () => db.execute(`get big where ${SLOW} count`)));
    expect(err.code).to.equal('statement_timeout');
    expect(err.status).to.equal(504);
    expect(err.message).to.contain('100 ms');
    expect(err.hint).to.contain('where id > $1 order id limit N');
    // Seconds of work cut at the deadline (the bound is loose: a busy machine is slow to unwind).
    expect(Date.now() - started).to.be.below(2_000);
  });

  it('ends a wait for a lock another connection holds at the deadline, not after the 5 s a wait may take', () => {
    const holder = openWritable(path.join(temp.dir, 'd.fenec'));
    holder.exec('BEGIN IMMEDIATE');
    holder.prepare("INSERT INTO _fenec_meta (key, value) VALUES ('held', 'by the test')").run();
    try {
      const started = Date.now();
      const err = caught(() =>
        db.within(Date.now() + 100, 100, () => db.execute('insert into big {body: "waits", n: -2}')),
      );
      expect(err.code).to.equal('statement_timeout');
      expect(err.message).to.contain('for a lock that another program holds on the file');
      expect(Date.now() - started).to.be.below(2_000);
    } finally {
      holder.close();
    }
    expect(db.execute('get big where n = -2 count')).to.deep.equal({ count: 0 });
  });

  it('answers file_busy for a write that waits out its busy timeout with no deadline armed (a statement run in process)', function () {
    this.timeout(20_000);
    // A file of its own whose writes wait 1 s (5 s by default: --busy-timeout).
    const file = path.join(temp.dir, 'busy.fenec');
    const patient = FenecDatabase.open({ file, readOnly: false, program: 'deadline-test', busyTimeoutMs: 1_000 });
    patient.execute('create collection notes (body text)');
    patient.within(Date.now() + 50, 50, () => patient.execute('get notes count'));
    const holder = openWritable(file);
    holder.exec('BEGIN IMMEDIATE');
    holder.prepare("INSERT INTO _fenec_meta (key, value) VALUES ('held', 'by the test')").run();
    try {
      const started = Date.now();
      const err = caught(() => patient.execute('insert into notes {body: "waits"}'));
      expect([err.code, err.status]).to.deep.equal(['file_busy', 503]);
      expect(err.message).to.contain('--busy-timeout');
      expect(Date.now() - started).to.be.within(900, 4_000);
    } finally {
      holder.close();
      patient.close();
    }
  });

  it('rolls back a write it stops: no row changed', () => {
    const err = caught(() =>
      db.within(Date.now() + 100, 100, () => db.execute(`set big {n: -1} where ${SLOW} or n >= 0`)),
    );
    expect(err.code).to.equal('statement_timeout');
    expect(db.execute('get big where n = -1 count')).to.deep.equal({ count: 0 });
    expect(db.execute('get big count')).to.deep.equal({ count: 20_000 });
  });

  it('refuses a request begun past its deadline without running it', () => {
    const err = caught(() => db.within(Date.now() - 1, 50, () => db.execute(`get big where ${SLOW} count`)));
    expect(err.code).to.equal('statement_timeout');
  });

  it('holds nothing once the request is over: the same statement then runs whole', () => {
    caught(() => db.within(Date.now() + 50, 50, () => db.execute(`get big where ${SLOW} count`)));
    const few = SLOW.split(' or ').slice(0, 2).join(' or ');
    expect(db.execute(`get big where (${few}) and n < 5000 count`)).to.deep.equal({ count: 0 });
  });

  it('answers a request that ends within its deadline as without one', () => {
    expect(db.within(Date.now() + 10_000, 10_000, () => db.execute('get big where n = 7'))).to.deep.equal({
      rows: [{ id: 8, body: 'Row 7 Of The Big Collection', n: 7 }],
      count: 1,
    });
  });

  it('interrupts only the connection that armed it', () => {
    const other = openWritable(path.join(temp.dir, 'other.fenec'));
    try {
      other.exec('CREATE TABLE t (x)');
      other.prepare('SELECT fenec_deadline(?)').get(30);
      // Another connection's statements in that time run on, unstopped: this one for half a second or more (SQLite
      // tests the terms in their order: the filter on n first, so that the slow one runs over 3 000 rows, not all).
      expect(db.execute(`get big where n < 3000 and (${SLOW}) count`)).to.deep.equal({ count: 0 });
    } finally {
      other.close();
    }
  });

  it('refuses a deadline that is not a number', () => {
    const conn = openWritable(path.join(temp.dir, 'refuse.fenec'));
    try {
      expect(() => conn.prepare('SELECT fenec_deadline(?)').get('soon')).to.throw(/number of milliseconds/);
    } finally {
      conn.close();
    }
  });
});
