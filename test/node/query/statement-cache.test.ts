import { expect } from 'chai';
import { StatementCache, STATEMENTS_LIMIT } from '../../../node/query/execute/statement-cache.js';
import { openWritable } from '../../../node/storage/sqlite.js';
import { tempDir } from '../../helpers/temp.js';

describe('the prepared statements of a file (StatementCache)', () => {
  it('prepares a text once, and keeps at most STATEMENTS_LIMIT of every other shape, the latest', () => {
    const temp = tempDir('fenec-statements-');
    const db = openWritable(temp.file('s.fenec'));
    try {
      db.exec('CREATE TABLE t (n INTEGER)');
      const cache = new StatementCache(db);
      expect(cache.get('SELECT n FROM t')).to.equal(cache.get('SELECT n FROM t'));
      for (let i = 0; i < STATEMENTS_LIMIT + 500; i++) cache.get(`SELECT n FROM t WHERE n = ${i}`);
      expect(cache.size).to.equal(STATEMENTS_LIMIT);
      const latest = `SELECT n FROM t WHERE n = ${STATEMENTS_LIMIT + 499}`;
      expect(cache.get(latest)).to.equal(cache.get(latest));
      cache.clear();
      expect(cache.size).to.equal(0);
    } finally {
      db.close();
      temp.remove();
    }
  });
});
