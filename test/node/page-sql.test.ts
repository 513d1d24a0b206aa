import { expect } from 'chai';
import type { RowStatement } from '../../shared/fenecql/kinds.js';
import { parseStatement } from '../../shared/fenecql/parser.js';
import { FenecDatabase } from '../../node/database.js';
import { plan } from '../../node/query/plan/row-statement.js';
import { Catalog } from '../../node/schema/catalog.js';
import { openWritable, type Connection } from '../../node/storage/sqlite.js';
import { tempDir } from '../helpers/temp.js';

/** Every SQL text in a plan, wherever the plan keeps it (a step's `sql`, a vector plan's `text.sql`, …). */
function sqlTexts(value: unknown, found: string[] = []): string[] {
  if (typeof value === 'string') {
    if (/^\s*(SELECT|INSERT|UPDATE|DELETE)\b/.test(value)) found.push(value);
  } else if (Array.isArray(value)) {
    for (const item of value) sqlTexts(item, found);
  } else if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) sqlTexts(item, found);
  }
  return found;
}

/**
 * A read's LIMIT and OFFSET: a literal is written into the SQL, a parameter binds as `+?`. SQLite reads a
 * value bound to a bare `?` LIMIT while planning, and binding it again expires the prepared statement:
 * every execution was parsed and planned again (bench/HISTORY.md, "match against raw FTS5").
 */
describe('LIMIT and OFFSET in the SQL of a read', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let conn: Connection;
  let catalog: Catalog;

  before(() => {
    temp = tempDir('fenec-page-');
    const file = temp.file('t.fenec');
    db = FenecDatabase.open({ file, readOnly: false, program: 'test', sweepIntervalMs: 0 });
    db.execute(
      'create collection docs (body text @text, vec vector<3> @hnsw(cosine), grp int @hash, at timestamp @ttl(1d))',
    );
    const rows = Array.from({ length: 12 }, (_, i) => ({
      body: `deploy note ${i} ${i % 2 === 0 ? 'friday' : 'monday'}`,
      vec: [1, i, 0.5],
      grp: i % 3,
      at: Date.now(),
    }));
    db.execute('insert into docs $1', [rows]);
    conn = openWritable(file);
    catalog = new Catalog(conn);
  });

  after(() => {
    conn.close();
    db.close();
    temp.remove();
  });

  const planned = (text: string): string[] => sqlTexts(plan(parseStatement(text) as RowStatement, catalog));

  const reads = [
    'get docs limit 3',
    'get docs limit $1',
    'get docs offset 2',
    'get docs offset $1',
    'get docs where grp = 1 order body limit 2 offset 1',
    'get docs where grp = $1 order body limit $2 offset $3',
    'get docs match body $1 limit 10',
    'get docs match body $1 limit $2 offset $3',
    'get docs match body $1 limit 5 count',
    'get docs match body $1 near vec $2 fuse limit 10',
    'get docs match body $1 near vec $2 fuse limit $3 offset $4',
  ];

  for (const text of reads) {
    it(`binds no bare ? to LIMIT or OFFSET: ${text}`, () => {
      const sqls = planned(text);
      expect(
        sqls.some((sql) => /\bLIMIT\b|\bOFFSET\b/.test(sql)),
        `${text} has a LIMIT`,
      ).to.equal(true);
      for (const sql of sqls) expect(sql, sql).not.to.match(/\b(LIMIT|OFFSET) \?/);
    });
  }

  it('writes a literal limit and offset into the SQL, and a parameter as +?', () => {
    expect(planned('get docs match body $1 limit 10').join('\n')).to.contain(' LIMIT 10');
    expect(planned('get docs order body limit 2 offset 1').join('\n')).to.contain(' LIMIT 2 OFFSET 1');
    expect(planned('get docs offset 4').join('\n')).to.contain(' LIMIT -1 OFFSET 4');
    expect(planned('get docs order body limit $1 offset $2').join('\n')).to.contain(' LIMIT +? OFFSET +?');
  });

  it('answers each execution of one statement with the limit and offset bound to it', () => {
    const ids = (text: string, ...params: unknown[]) =>
      (db.execute(text, params).rows as { id: number }[]).map((r) => r.id);
    const all = ids('get docs match body $1 limit 100', 'deploy friday');
    expect(all).to.have.length(12);
    for (const [limit, offset] of [
      [1, 0],
      [5, 0],
      [3, 2],
      [0, 0],
      [100, 10],
      [2, 11],
    ] as const) {
      expect(
        ids('get docs match body $1 limit $2 offset $3', 'deploy friday', limit, offset),
        `limit ${limit} offset ${offset}`,
      ).to.deep.equal(all.slice(offset, offset + limit));
      expect(
        ids('get docs order id desc limit $1 offset $2', limit, offset),
        `get, limit ${limit} offset ${offset}`,
      ).to.deep.equal([12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1].slice(offset, offset + limit));
    }
    expect(ids('get docs offset $1', 9)).to.deep.equal([10, 11, 12]);
  });
});
