/**
 * The file's memory map holds only what reads use: the pages a bulk read went through (an index's snapshot read
 * back at open, the rows an index build read) leave the process's RSS once it is done (issue 29: 116–168 MB of a
 * one-file server's RSS after a 50 000-row load were such pages). Measured in this process, from /proc/self/smaps.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import { FenecDatabase } from '../../../node/database.js';
import { tempDir } from '../../helpers/temp.js';
import { seededRandom } from '../../helpers/vectors.js';

const DIMS = 256;
const ROWS = 6000;

/** KiB of `file`'s mappings resident in this process (0 when it is not mapped). */
function mappedKiB(file: string): number {
  const real = fs.realpathSync(file);
  let kib = 0;
  let inFile = false;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.endsWith(` ${real}`);
    else if (inFile && line.startsWith('Rss:')) kib += Number(line.split(/\s+/)[1]);
  }
  return kib;
}

describe('the memory map of a .fenec file (Linux)', function () {
  this.timeout(120_000);
  let temp: ReturnType<typeof tempDir>;

  before(function () {
    if (process.platform !== 'linux') this.skip();
    temp = tempDir();
  });
  after(() => temp?.remove());

  it('holds none of the pages an index build and its snapshot read back went through', async () => {
    const file = temp.file('m.fenec');
    const random = seededRandom(29);
    const open = (): FenecDatabase =>
      FenecDatabase.open({ file, readOnly: false, program: 'test', sweepIntervalMs: 0 });
    let db = open();
    db.execute(`create collection docs (v vector<${DIMS}> @hnsw(cosine))`);
    const rows = Array.from({ length: ROWS }, () => ({
      v: Array.from({ length: DIMS }, () => Number((random() - 0.5).toFixed(4))),
    }));
    db.execute('insert into docs $1', [rows]);
    await db.idle();
    // Off the stack of the statement that stored the index.
    await new Promise((resolve) => setImmediate(resolve));
    // 6 000 vectors of 1 KiB: about 6 MB of rows and as much of snapshot, all read through the map.
    const fileKiB = fs.statSync(file).size / 1024;
    expect(fileKiB).to.be.greaterThan(10_000);
    expect(mappedKiB(file), 'after the build').to.be.lessThan(fileKiB / 10);
    db.close();
    db = open();
    try {
      expect(mappedKiB(file), 'after the open').to.be.lessThan(fileKiB / 10);
      expect(db.execute('get docs near v $1 limit 3', [rows[7]!.v])).to.have.property('count', 3);
    } finally {
      db.close();
    }
  });
});
