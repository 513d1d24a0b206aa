import * as fs from 'node:fs';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { FenecDatabase } from '../../../node/database.js';
import { applyChange, WalTail } from '../../../node/storage/wal-tail.js';
import { tempDir } from '../../helpers/temp.js';

/** Every table's rows, in order: what two files must agree on. */
function contents(file: string): Record<string, unknown[]> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").pluck().all();
    const out: Record<string, unknown[]> = {};
    for (const name of tables as string[]) {
      if (name.includes('.fts') || name.startsWith('sqlite_')) continue; // FTS5's shadow tables are compared below
      out[name] = db.prepare(`SELECT * FROM "${name}" ORDER BY rowid`).raw().all();
    }
    expect(db.pragma('integrity_check', { simple: true })).to.equal('ok');
    return out;
  } finally {
    db.close();
  }
}

describe('WalTail: a file copied commit by commit from its write-ahead log', () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => (temp = tempDir('fenec-wal-')));
  afterEach(() => temp.remove());

  it('gives a copy that is the file: rows, deletes, schema changes, text index, checkpoints between', () => {
    const file = temp.file('a.fenec');
    const copy = temp.file('copy.fenec');
    const db = FenecDatabase.open({ file, readOnly: false, program: 'test', replicated: true, sweepIntervalMs: 0 });
    const tail = new WalTail(file);
    const ship = (): void => {
      const change = tail.take();
      if (change !== undefined) applyChange(copy, change);
    };
    try {
      ship(); // the catalogue, made as the file was
      db.execute('create collection notes (title text @text, n int @sorted)');
      ship();
      for (let i = 0; i < 50; i++) db.execute('insert into notes {title: $1, n: $2}', [`note ${i} about foxes`, i]);
      ship();
      expect(tail.take(), 'nothing new').to.equal(undefined);
      db.execute('del notes where n < 10');
      db.execute('alter collection notes add views int default 3');
      ship();
      db.checkpoint();
      tail.checkpointed();
      db.execute('set notes {views: 9} where n = 20');
      db.execute('insert into notes {title: "last", n: 99}');
      ship();
      // Rolled back: nothing of it reaches the copy.
      expect(() => db.execute('insert into notes [{title: "x", n: 1}, {title: 5}]')).to.throw();
      ship();
    } finally {
      db.close();
    }
    expect(fs.existsSync(`${copy}-wal`)).to.equal(false);
    expect(contents(copy)).to.deep.equal(contents(file));
    const reopened = FenecDatabase.open({ file: copy, readOnly: false, program: 'test', sweepIntervalMs: 0 });
    try {
      expect(reopened.execute('get notes match title "foxes" count')).to.deep.include({ count: 40 });
      expect(JSON.stringify(reopened.execute('get notes where n = 20'))).to.include('"views":9');
    } finally {
      reopened.close();
    }
  });
});
