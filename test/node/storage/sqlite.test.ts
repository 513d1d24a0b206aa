import * as fs from 'node:fs';
import { expect } from 'chai';
import { openSnapshot, openWritable, type Connection } from '../../../node/storage/sqlite.js';
import { tempDir } from '../../helpers/temp.js';

/** The lines of this process's memory maps that map `file` (Linux's /proc). */
function mappingsOf(file: string): string[] {
  return fs
    .readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .filter((line) => line.endsWith(` ${file}`));
}

describe('SQLite connections', function () {
  let temp: ReturnType<typeof tempDir>;
  const open: Connection[] = [];

  before(function () {
    if (!fs.existsSync('/proc/self/maps')) this.skip();
  });

  beforeEach(() => {
    temp = tempDir('fenec-sqlite-');
  });

  afterEach(() => {
    for (const db of open.splice(0)) if (db.open) db.close();
    temp.remove();
  });

  it('read the file through a memory map, writable and read-only alike (row reads cost no system call)', () => {
    const file = temp.file('m.fenec');
    const writer = openWritable(file);
    open.push(writer);
    writer.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)');
    const insert = writer.prepare('INSERT INTO t (body) VALUES (?)');
    writer.transaction(() => {
      for (let i = 0; i < 500; i++) insert.run(Buffer.alloc(1500, i));
    })();
    writer.pragma('wal_checkpoint(TRUNCATE)');
    expect(writer.pragma('mmap_size', { simple: true })).to.equal(2 ** 31 - 2 ** 16);
    expect(writer.prepare('SELECT count(*) FROM t WHERE length(body) = 1500').pluck().get()).to.equal(500);
    expect(mappingsOf(file)).to.have.length(1);

    const reader = openSnapshot(file);
    open.push(reader);
    expect(reader.prepare('SELECT sum(length(body)) FROM t').pluck().get()).to.equal(500 * 1500);
    // A map of its own: each connection maps the file it reads.
    expect(mappingsOf(file)).to.have.length(2);
  });
});
