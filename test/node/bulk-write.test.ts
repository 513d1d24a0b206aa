import { expect } from 'chai';
import type { Policy, PolicyRule } from '../../shared/auth/policy.js';
import { parseCondition, parseStatement } from '../../shared/fenecql/parser.js';
import { printStatement } from '../../shared/fenecql/print.js';
import { FenecDatabase, type ExecuteOptions } from '../../node/database.js';
import { openReader } from '../../node/storage/sqlite.js';
import { refusal } from '../helpers/assertions.js';
import { fts5Structure } from '../helpers/fts5-structure.js';
import { tempDir } from '../helpers/temp.js';

type Rows = { rows: Record<string, unknown>[]; count: number };

const POLICY: Policy = {
  rules: new Map<string, PolicyRule>([
    [
      'notes',
      {
        collection: 'notes',
        read: true,
        write: true,
        where: parseCondition('owner = $jwt.sub and year >= 2000'),
        source: 'test:notes',
      },
    ],
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
    run(
      'create collection notes (title text required unique @text, year int default 2020, owner text, tags [text], at timestamp, v vector<2> @hnsw(cosine))',
    );
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
    run(
      'insert into notes [{title: "a2", year: 2001, tags: ["x"], at: "2026-01-05T10:00:00Z", v: [1, 0]}, {title: "b2", owner: null}, {title: "c2", year: null, at: 1767225600000}]',
    );
    const all = rows('get notes select * order id');
    const strip = (row: Record<string, unknown>) => ({ ...row, id: 0, title: String(row.title).slice(0, 1) });
    expect(all.slice(0, 3).map(strip)).to.deep.equal(all.slice(3).map(strip));
    expect(all[1]!.year).to.equal(2020);
    expect(all[2]!.year).to.equal(null);
  });

  it("writes a bulk write's rows in one statement: its text index gets a segment a statement, not a row", () => {
    // A statement a row left a segment a row (FTS5 writes its pending terms at each statement's
    // savepoint): 19 segments for 3 000 rows, and every match read them all (bench/HISTORY.md).
    const segments = (): number => {
      const reader = openReader(temp.file('b.fenec'));
      try {
        return fts5Structure(reader, '"t.notes.fts_data"').segments;
      } finally {
        reader.close();
      }
    };
    for (let batch = 0; batch < 3; batch++) {
      run(
        'insert into notes $1',
        Array.from({ length: 1000 }, (_, i) => ({ title: `note ${batch} ${i} word${i % 37}`, v: [1, i] })),
      );
      expect(segments(), `after ${batch + 1} bulk inserts`).to.be.at.most(batch + 1);
    }
    run(
      'put notes $1',
      Array.from({ length: 500 }, (_, i) => ({ id: 2 * i + 1, title: `put ${i} word${i % 11}` })),
    );
    expect(segments()).to.be.at.most(4);
    // One row a statement, for comparison: a segment each, until FTS5 merges them.
    for (let i = 0; i < 20; i++) run('insert into notes $1', { title: `alone ${i}` });
    expect(segments()).to.be.greaterThan(4);
  });

  it('answers, stores and ranks what one statement a row would: inserts and puts', () => {
    run(
      'create collection other (title text required unique @text, year int default 2020, owner text, tags [text], at timestamp, v vector<2> @hnsw(cosine))',
    );
    const words = ['deploy', 'friday', 'staging', 'login', 'token', 'index', 'backup', 'night'];
    const row = (i: number) => ({
      title: `${words[i % 8]} ${words[(i * 3) % 8]} note ${i}`,
      ...(i % 3 === 0 ? {} : { year: 1990 + (i % 40) }),
      ...(i % 4 === 0 ? { owner: null } : { owner: `o${i % 5}` }),
      tags: i % 2 === 0 ? [words[i % 8], 'x'] : [],
      at: 1767225600000 + i * 1000,
      v: [1, (i % 17) - 8],
    });
    const inserted = Array.from({ length: 300 }, (_, i) => row(i));
    const staged = run('insert into notes $1', inserted);
    const single = inserted.map((r) => (run('insert into other $1', [r]) as unknown as { ids: number[] }).ids[0]);
    expect(staged).to.deep.equal({ count: 300, ids: single });
    // A put: existing ids replaced whole, new ids created, an id twice in one write (the last wins).
    const put = [5, 7, 400, 5, 12, 401].map((id, j) => ({ id, ...row(1000 + j) }));
    put[3] = { id: 5, title: 'replaced twice' } as (typeof put)[number];
    expect(run('put notes $1', put)).to.deep.equal({ count: 6, ids: [5, 7, 400, 5, 12, 401] });
    for (const r of put) run('put other $1', [r]);
    const same = (statement: string) =>
      expect(rows(statement.replace('COLL', 'notes')), statement).to.deep.equal(
        rows(statement.replace('COLL', 'other')),
      );
    same('get COLL select * order id');
    for (const query of ['deploy', 'friday night', 'note 12', 'replaced', 'token index backup'])
      same(`get COLL match title "${query}" limit 10`);
    same('get COLL match * "staging login" limit 20 offset 3');
    expect(run('insert into notes {title: "next"}')).to.deep.equal(run('insert into other {title: "next"}'));
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
    expect(
      run('put notes $1', [
        { id: 1, title: 'A' },
        { id: 10, title: 'J', year: 2010 },
      ]),
    ).to.deep.equal({ count: 2, ids: [1, 10] });
    expect(rows('get notes select title, year, owner order id')).to.deep.equal([
      { id: 1, title: 'A', year: 2020, owner: null },
      { id: 2, title: 'b', year: 2020, owner: null },
      { id: 10, title: 'J', year: 2010, owner: null },
    ]);
    for (const [bad, code] of [
      [{ title: 'no id' }, 'invalid_statement'],
      [{ id: 0, title: 'z' }, 'invalid_value'],
      [{ id: 'x', title: 'z' }, 'type_mismatch'],
    ] as const) {
      const error = refusal(() => run('put notes $1', [{ id: 11, title: 'K' }, bad]));
      expect([error.code, error.row]).to.deep.equal([code, 1]);
    }
    expect(rows('get notes select title order id')).to.have.length(3);
    expect(run('insert into notes {title: "after"}')).to.deep.equal({ count: 1, ids: [11] });
  });

  it('holds bulk writes to the token policy: pinned fields filled, every row checked, nothing written when one is outside', () => {
    expect(
      db.execute(
        'insert into notes $1',
        [
          [
            { title: 'm1', year: 2001 },
            { title: 'm2', year: 2002, owner: 'ann' },
          ],
        ],
        as('ann'),
      ),
    ).to.deep.equal({ count: 2, ids: [1, 2] });
    expect(rows('get notes select owner order id').map((r) => r.owner)).to.deep.equal(['ann', 'ann']);
    const outside = refusal(() =>
      db.execute(
        'insert into notes $1',
        [
          [
            { title: 'm3', year: 2003 },
            { title: 'bob', owner: 'bob', year: 2003 },
          ],
        ],
        as('ann'),
      ),
    );
    expect(outside.code).to.equal('forbidden');
    // The pinned field's default does not stand in for the check: year's default 2020 meets it, 1999 does not.
    expect(db.execute('insert into notes $1', [[{ title: 'm4' }]], as('ann'))).to.deep.equal({ count: 1, ids: [3] });
    expect(refusal(() => db.execute('insert into notes $1', [[{ title: 'm5', year: 1999 }]], as('ann'))).code).to.equal(
      'forbidden',
    );
    // put: the rows it replaces must be the token's, and so must the rows it leaves.
    expect(
      refusal(() => db.execute('put notes $1', [[{ id: 1, title: 'taken', year: 2005 }]], as('bob'))).code,
    ).to.equal('forbidden');
    expect(
      db.execute(
        'put notes $1',
        [
          [
            { id: 1, title: 'M1', year: 2005 },
            { id: 20, title: 'new', year: 2006 },
          ],
        ],
        as('ann'),
      ),
    ).to.deep.equal({ count: 2, ids: [1, 20] });
    expect(rows('get notes select title, owner order id').map((r) => [r.title, r.owner])).to.deep.equal([
      ['M1', 'ann'],
      ['m2', 'ann'],
      ['m4', 'ann'],
      ['new', 'ann'],
    ]);
  });
});
