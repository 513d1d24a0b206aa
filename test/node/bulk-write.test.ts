import { expect } from 'chai';
import type { Policy, PolicyRule } from '../../shared/auth/policy.js';
import { parseCondition, parseStatement } from '../../shared/fenecql/parser.js';
import { printStatement } from '../../shared/fenecql/print.js';
import { FenecDatabase, type ExecuteOptions } from '../../node/database.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

type Rows = { rows: Record<string, unknown>[]; count: number };

const POLICY: Policy = {
  rules: new Map<string, PolicyRule>([
    ['notes', { collection: 'notes', read: true, write: true, where: parseCondition('owner = $jwt.sub and year >= 2000'), source: 'test:notes' }],
  ]),
};

describe('bulk writes: insert into C $1, put C $1', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const run = (statement: string, ...params: unknown[]) => db.execute(statement, params);
  const as = (sub: string): ExecuteOptions => ({ jwt: { sub }, policy: POLICY });
  const rows = (statement: string) => (run(statement) as unknown as Rows).rows;

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('b.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    run('create collection notes (title text required unique @text, year int default 2020, owner text, tags [text], at timestamp, v vector<2> @hnsw(cosine))');
  });
  afterEach(async () => {
    await db.idle();
    db.close();
    temp.remove();
  });

  it('parses the parameter form and prints it back', () => {
    expect(printStatement(parseStatement('insert into notes $1'))).to.equal('insert into notes $1');
    expect(printStatement(parseStatement('put notes $2'))).to.equal('put notes $2');
    expect(refusal(() => parseStatement('insert into notes 5')).code).to.equal('syntax_error');
  });

  it('writes the rows a literal insert writes, values converted the same way', () => {
    const written = [
      { title: 'a', year: 2001, tags: ['x'], at: '2026-01-05T10:00:00Z', v: [1, 0] },
      { title: 'b', owner: null },
      { title: 'c', year: null, at: 1767225600000 },
    ];
    expect(run('insert into notes $1', written)).to.deep.equal({ count: 3, ids: [1, 2, 3] });
    run('insert into notes [{title: "a2", year: 2001, tags: ["x"], at: "2026-01-05T10:00:00Z", v: [1, 0]}, {title: "b2", owner: null}, {title: "c2", year: null, at: 1767225600000}]');
    const all = rows('get notes select * order id');
    const strip = (row: Record<string, unknown>) => ({ ...row, id: 0, title: String(row.title).slice(0, 1) });
    expect(all.slice(0, 3).map(strip)).to.deep.equal(all.slice(3).map(strip));
    expect(all[1]!.year).to.equal(2020);
    expect(all[2]!.year).to.equal(null);
  });

  it('takes one object as one row, and an empty array as no rows', () => {
    expect(run('insert into notes $1', { title: 'one' })).to.deep.equal({ count: 1, ids: [1] });
    expect(run('insert into notes $1', [])).to.deep.equal({ count: 0, ids: [] });
  });

  it('writes 5 000 rows as one parameter in one statement', () => {
    const many = Array.from({ length: 5000 }, (_, i) => ({ title: `t${i}`, year: 2000 + (i % 20), v: [1, i] }));
    const answer = run('insert into notes $1', many) as unknown as { count: number; ids: number[] };
    expect(answer.count).to.equal(5000);
    expect(answer.ids[4999]).to.equal(5000);
    expect((run('get notes where year = 2019 count') as unknown as { count: number }).count).to.equal(250);
    expect(rows('get notes select title match title "t4321"').map((r) => r.title)).to.deep.equal(['t4321']);
  });

  it('refuses a bad row anywhere with its place, and writes none of the rows', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({ title: `t${i}` }));
    const cases: [unknown, string][] = [
      [{ title: 42 }, 'type_mismatch'],
      [{ title: 'x', colour: 'red' }, 'unknown_field'],
      [{ year: 1 }, 'missing_required'],
      [{ title: null }, 'missing_required'],
      [{ title: 'x', id: 9 }, 'invalid_statement'],
      [{ title: 'x', v: [1, 2, 3] }, 'vector_length'],
      [{ title: 'x', at: 'soon' }, 'invalid_value'],
      [{ title: 't3' }, 'unique_violation'],
      ['text', 'type_mismatch'],
    ];
    for (const [bad, code] of cases) {
      const error = refusal(() => run('insert into notes $1', [...many.slice(0, 500), bad, ...many.slice(500)]));
      expect([error.code, error.row], JSON.stringify(bad)).to.deep.equal([code, 500]);
      expect(error.message).to.match(/^\$1\[500\]: /);
      expect((run('get notes count') as unknown as { count: number }).count).to.equal(0);
    }
    expect(refusal(() => run('insert into notes $1', 'rows')).code).to.equal('type_mismatch');
    expect(refusal(() => run('insert into notes $2', [])).code).to.equal('missing_parameter');
  });

  it('puts rows by id: replaces each whole or creates it, all or nothing', () => {
    run('insert into notes $1', [{ title: 'a', year: 1990, owner: 'ann' }, { title: 'b' }]);
    expect(run('put notes $1', [{ id: 1, title: 'A' }, { id: 10, title: 'J', year: 2010 }])).to.deep.equal({ count: 2, ids: [1, 10] });
    expect(rows('get notes select title, year, owner order id')).to.deep.equal([
      { id: 1, title: 'A', year: 2020, owner: null },
      { id: 2, title: 'b', year: 2020, owner: null },
      { id: 10, title: 'J', year: 2010, owner: null },
    ]);
    for (const [bad, code] of [[{ title: 'no id' }, 'invalid_statement'], [{ id: 0, title: 'z' }, 'invalid_value'], [{ id: 'x', title: 'z' }, 'type_mismatch']] as const) {
      const error = refusal(() => run('put notes $1', [{ id: 11, title: 'K' }, bad]));
      expect([error.code, error.row]).to.deep.equal([code, 1]);
    }
    expect(rows('get notes select title order id')).to.have.length(3);
    expect(run('insert into notes {title: "after"}')).to.deep.equal({ count: 1, ids: [11] });
  });

  it('holds bulk writes to the token policy: pinned fields filled, every row checked, nothing written when one is outside', () => {
    expect(db.execute('insert into notes $1', [[{ title: 'm1', year: 2001 }, { title: 'm2', year: 2002, owner: 'ann' }]], as('ann'))).to.deep.equal({ count: 2, ids: [1, 2] });
    expect(rows('get notes select owner order id').map((r) => r.owner)).to.deep.equal(['ann', 'ann']);
    const outside = refusal(() => db.execute('insert into notes $1', [[{ title: 'm3', year: 2003 }, { title: 'bob', owner: 'bob', year: 2003 }]], as('ann')));
    expect(outside.code).to.equal('forbidden');
    // The pinned field's default does not stand in for the check: year's default 2020 meets it, 1999 does not.
    expect(db.execute('insert into notes $1', [[{ title: 'm4' }]], as('ann'))).to.deep.equal({ count: 1, ids: [3] });
    expect(refusal(() => db.execute('insert into notes $1', [[{ title: 'm5', year: 1999 }]], as('ann'))).code).to.equal('forbidden');
    // put: the rows it replaces must be the token's, and so must the rows it leaves.
    expect(refusal(() => db.execute('put notes $1', [[{ id: 1, title: 'taken', year: 2005 }]], as('bob'))).code).to.equal('forbidden');
    expect(db.execute('put notes $1', [[{ id: 1, title: 'M1', year: 2005 }, { id: 20, title: 'new', year: 2006 }]], as('ann'))).to.deep.equal({ count: 2, ids: [1, 20] });
    expect(rows('get notes select title, owner order id').map((r) => [r.title, r.owner])).to.deep.equal([['M1', 'ann'], ['m2', 'ann'], ['m4', 'ann'], ['new', 'ann']]);
  });
});
