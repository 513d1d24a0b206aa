import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

const SCRIPT = fileURLToPath(new URL('../../deploy/tenant-backup.js', import.meta.url));

describe('deploy/tenant-backup', () => {
  it('copies a file in WAL mode consistently while another connection keeps writing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-backup-'));
    try {
      const source = path.join(dir, 'acme.fenec');
      const db = new Database(source);
      db.pragma('journal_mode = WAL');
      db.exec('create table t (id integer primary key, a integer, b integer)');
      const insert = db.prepare('insert into t (a, b) values (?, ?)');
      for (let i = 0; i < 2000; i++) insert.run(i, i);
      const child = spawn(process.execPath, [SCRIPT, source, path.join(dir, 'copy.fenec')], { stdio: 'ignore' });
      const writing = setInterval(() => db.transaction(() => { for (let i = 0; i < 50; i++) insert.run(i, i); })(), 1);
      const [code] = await once(child, 'exit');
      clearInterval(writing);
      db.close();
      expect(code).to.equal(0);
      const copy = new Database(path.join(dir, 'copy.fenec'), { readonly: true });
      const rows = copy.prepare('select count(*) as n, sum(a = b) as same from t').get() as { n: number; same: number };
      expect(copy.pragma('integrity_check', { simple: true })).to.equal('ok');
      copy.close();
      expect(rows.n).to.be.at.least(2000);
      expect(rows.same).to.equal(rows.n);
      const again = spawn(process.execPath, [SCRIPT, source, path.join(dir, 'copy.fenec')], { stdio: 'ignore' });
      expect((await once(again, 'exit'))[0], 'never overwrites').to.equal(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
