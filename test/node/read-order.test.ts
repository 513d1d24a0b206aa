/**
 * The order of a read's rows: the fields `order` names, then id for the rows that tie, in the direction
 * of the last field — so that an index on the field answers `order f desc limit N` by reading N entries
 * backward, where ties in ascending id made SQLite sort every row.
 */
import { expect } from 'chai';
import { FenecDatabase } from '../../node/database.js';
import { tempDir } from '../helpers/temp.js';

describe('the order of a read', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const ROWS = 2000;
  const ids = (text: string) => (db.execute(text).rows as { id: number }[]).map((row) => row.id);
  /** Ids 1…ROWS, year 2000 + id % 4: 500 rows tie on each year. */
  const year = (id: number) => 2000 + (id % 4);

  before(() => {
    temp = tempDir('fenec-order-');
    db = FenecDatabase.open({ file: temp.file('o.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    db.execute('create collection docs (year int @sorted, title text)');
    db.execute('insert into docs $1', [
      Array.from({ length: ROWS }, (_, i) => ({ year: year(i + 1), title: `t${i}` })),
    ]);
  });
  after(() => {
    db.close();
    temp.remove();
  });

  it('reads a descending order with a limit from the index, backward, without sorting the rows', () => {
    const plan = db.explain('get docs order year desc limit 10').join(' | ');
    expect(plan).to.contain('USING INDEX i.docs.year');
    expect(plan).not.to.contain('TEMP B-TREE');
    expect(db.explain('get docs order year limit 10').join(' | ')).not.to.contain('TEMP B-TREE');
  });

  it('answers rows that tie in id order, descending after a descending field and ascending after an ascending one', () => {
    const all = Array.from({ length: ROWS }, (_, i) => i + 1);
    expect(ids('get docs order year desc')).to.deep.equal([...all].sort((a, b) => year(b) - year(a) || b - a));
    expect(ids('get docs order year')).to.deep.equal([...all].sort((a, b) => year(a) - year(b) || a - b));
    expect(ids('get docs order year desc limit 3 offset 499')).to.deep.equal([3, 1998, 1994]);
  });

  it('keeps an order that names id as it is', () => {
    expect(ids('get docs order year desc, id limit 3')).to.deep.equal([3, 7, 11]);
  });
});
