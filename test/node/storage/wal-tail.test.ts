import * as fs from 'node:fs';
import * as zlib from 'node:zlib';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { FenecDatabase } from '../../../node/database.js';
import { applyChange, applyChanges, WalTail } from '../../../node/storage/wal-tail.js';
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

/** A replicated file, and `ship`, which applies to `copy` every commit the file took since the last call. */
function shipped(file: string, copy: string): { db: FenecDatabase; tail: WalTail; ship: () => Promise<void> } {
  const db = FenecDatabase.open({ file, readOnly: false, program: 'test', replicated: true, sweepIntervalMs: 0 });
  const tail = new WalTail(file);
  const ship = async (): Promise<void> => {
    const change = tail.take();
    if (change !== undefined) await applyChange(copy, change);
  };
  return { db, tail, ship };
}

describe('WalTail: a file copied commit by commit from its write-ahead log', () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => (temp = tempDir('fenec-wal-')));
  afterEach(() => temp.remove());

  it('gives a copy that is the file: rows, deletes, schema changes, text index, checkpoints between', async () => {
    const file = temp.file('a.fenec');
    const copy = temp.file('copy.fenec');
    const { db, tail, ship } = shipped(file, copy);
    try {
      await ship(); // the catalogue, made as the file was
      db.execute('create collection notes (title text @text, n int @sorted)');
      await ship();
      for (let i = 0; i < 50; i++) db.execute('insert into notes {title: $1, n: $2}', [`note ${i} about foxes`, i]);
      await ship();
      expect(tail.take(), 'nothing new').to.equal(undefined);
      db.execute('del notes where n < 10');
      db.execute('alter collection notes add views int default 3');
      await ship();
      db.checkpoint();
      tail.checkpointed();
      db.execute('set notes {views: 9} where n = 20');
      db.execute('insert into notes {title: "last", n: 99}');
      await ship();
      // Rolled back: nothing of it reaches the copy.
      expect(() => db.execute('insert into notes [{title: "x", n: 1}, {title: 5}]')).to.throw();
      await ship();
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

  it('ships a change compressed, and still applies one of the format before (an older stream), to the same bytes', async () => {
    const file = temp.file('b.fenec');
    const packed = temp.file('packed.fenec');
    const raw = temp.file('raw.fenec');
    const db = FenecDatabase.open({ file, readOnly: false, program: 'test', replicated: true, sweepIntervalMs: 0 });
    const tail = new WalTail(file);
    const sizes: number[] = [];
    try {
      await applyAlso(tail.take()!);
      db.execute('create collection notes (n int, body text)');
      await applyAlso(tail.take()!);
      for (let i = 0; i < 100; i++) {
        db.execute('insert into notes {n: $1, body: $2}', [i, `a note ${i}`]);
        const change = tail.take()!;
        sizes.push(change.length);
        await applyAlso(change);
      }
    } finally {
      db.close();
    }
    // A one-row insert rewrites two 4 KB pages, mostly empty: far fewer bytes go out.
    expect(Math.max(...sizes)).to.be.below(2048);
    expect(fs.readFileSync(packed).equals(fs.readFileSync(file)), 'the copy from packed changes is the file').to.equal(
      true,
    );
    expect(fs.readFileSync(raw).equals(fs.readFileSync(file)), 'the copy from raw changes is the file').to.equal(true);
    expect(String(await applyChange(raw, Uint8Array.of(7, 0, 0, 0)).catch((err: unknown) => err))).to.match(/format 7/);

    /** Applies the change to one copy as shipped, and to the other in the earlier format (its encoding alone). */
    async function applyAlso(change: Uint8Array): Promise<void> {
      await applyChange(packed, change);
      expect(change[0], 'its format byte').to.equal(1);
      await applyChange(raw, zlib.brotliDecompressSync(change.subarray(1)));
    }
  });

  it("applies a catch-up of many changes, one sync for them all, to the file; a read that fails is the caller's error", async () => {
    const file = temp.file('c.fenec');
    const copy = temp.file('copy.fenec');
    const db = FenecDatabase.open({ file, readOnly: false, program: 'test', replicated: true, sweepIntervalMs: 0 });
    const tail = new WalTail(file);
    const changes: Uint8Array[] = [];
    try {
      changes.push(tail.take()!);
      db.execute('create collection notes (n int, body text @text)');
      changes.push(tail.take()!);
      for (let i = 0; i < 200; i++) {
        db.execute('insert into notes {n: $1, body: $2}', [i, `a note ${i}`]);
        changes.push(tail.take()!);
      }
    } finally {
      db.close();
    }
    const applied = await applyChanges(copy, async (each) => {
      for (const change of changes) {
        await Promise.resolve(); // as the log's reads come, a turn apart
        await each(change);
      }
    });
    expect(applied).to.equal(changes.length);
    expect(contents(copy)).to.deep.equal(contents(file));
    // A read cut short: the error is the caller's (the copy is then rebuilt, never served), the file closed.
    const cut = temp.file('cut.fenec');
    let n = 0;
    const failed = await applyChanges(cut, async (each) => {
      for (const change of changes.slice(0, 5)) {
        await each(change);
        n += 1;
      }
      throw new Error('the log ended short');
    }).catch((err: unknown) => err);
    expect(String(failed)).to.include('the log ended short');
    expect(n).to.equal(5);
    expect(fs.existsSync(cut)).to.equal(true);
  });

  it('ships a compact of a replicated file: the copy is the file after it, and after the writes that follow', async () => {
    const file = temp.file('d.fenec');
    const copy = temp.file('copy.fenec');
    const { db, ship } = shipped(file, copy);
    try {
      await ship();
      db.execute('create collection notes (n int, body text @text)');
      for (let i = 0; i < 200; i++) db.execute('insert into notes {n: $1, body: $2}', [i, `${i} `.repeat(200)]);
      await ship();
      db.execute('del notes where n < 150');
      await ship();
      // compact rewrites the file (VACUUM): its pages must reach the copy before the log is emptied into the file.
      db.execute('compact');
      await ship();
      for (let i = 200; i < 210; i++) db.execute('insert into notes {n: $1, body: $2}', [i, `${i} `.repeat(200)]);
      await ship();
    } finally {
      db.close();
    }
    expect(contents(copy)).to.deep.equal(contents(file));
  });
});
