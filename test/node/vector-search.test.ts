import { expect } from 'chai';
import { FenecDatabase } from '../../node/database.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';
import { seededRandom } from '../helpers/vectors.js';

type Row = { id: number; _score: number; grp?: number };

/** The exact cosine ranking of `rows` against `q`, best first (ties: lower id first). */
function exactCosine(rows: { id: number; vec: number[] }[], q: number[], k: number): { id: number; score: number }[] {
  const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  const nq = norm(q);
  return rows
    .map((r) => ({ id: r.id, score: r.vec.reduce((s, x, i) => s + x * q[i]!, 0) / (norm(r.vec) * nq) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, k);
}

describe('FenecDatabase near and fuse', function () {
  this.timeout(60_000);
  const DIMS = 16;
  const random = seededRandom(7);
  const vector = () => Array.from({ length: DIMS }, () => random() * 2 - 1);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const q = (statement: string, ...params: unknown[]) => db.execute(statement, params);
  const rows = (statement: string, ...params: unknown[]) => (q(statement, ...params) as { rows: Row[] }).rows;

  before(async () => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('v.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    q(
      `create collection v (vec vector<${DIMS}> @hnsw(cosine), plain vector<${DIMS}>, grp int @hash, rare int, expires timestamp @ttl(1ms))`,
    );
    for (let start = 0; start < 10_000; start += 1000) {
      const batch = Array.from({ length: 1000 }, (_, i) => {
        const v = vector();
        const n = start + i;
        return { vec: v, plain: v, grp: n % 100, rare: n % 1000 === 0 ? 1 : 0 };
      });
      // JSON is FenecQL's literal syntax too: a bulk insert is the rows as JSON.
      q(`insert into v ${JSON.stringify(batch)}`);
    }
    await db.idle();
  });
  after(() => {
    db.close();
    temp.remove();
  });

  it('agrees with an exact scan on the nearest row for 100 random queries', () => {
    let agree = 0;
    for (let i = 0; i < 100; i++) {
      const query = vector();
      const hnsw = rows('get v select grp near vec $1 limit 1', query)[0]!;
      const exact = rows('get v select grp near plain $1 limit 1', query)[0]!;
      if (hnsw.id === exact.id) agree++;
      else expect(Math.abs(hnsw._score - exact._score), 'a different row only when as near').to.be.below(1e-3);
    }
    expect(agree).to.be.at.least(98);
  });

  it('returns limit rows, all passing, with a 1% and a 0.1% filter', () => {
    for (let i = 0; i < 20; i++) {
      const query = vector();
      const onePercent = rows('get v select grp near vec $1 where grp = 7 limit 5', query);
      expect(onePercent).to.have.length(5);
      expect(onePercent.every((r) => r.grp === 7)).to.equal(true);
      const tenth = rows('get v select grp near vec $1 where rare = 1 limit 5', query);
      expect(tenth).to.have.length(5);
      expect(tenth.every((r) => r.id % 1000 === 1)).to.equal(true);
    }
  });

  it('answers the same rows as an exact ranking of what the filter lets through', () => {
    const all = (q('get v select plain, grp where grp = 3') as { rows: { id: number; plain: number[] }[] }).rows;
    const query = vector();
    const found = rows('get v near vec $1 where grp = 3 limit 10', query).map((r) => r.id);
    expect(found).to.deep.equal(
      exactCosine(
        all.map((r) => ({ id: r.id, vec: r.plain })),
        query,
        10,
      ).map((r) => r.id),
    );
  });

  it('never returns a deleted, changed or expired row under its old vector', () => {
    const query = vector();
    const [first, second, third] = rows('get v near vec $1 limit 3', query);
    q('del v where id = $1', first!.id);
    q(
      'set v {vec: $1} where id = $2',
      query.map((x) => -x),
      second!.id,
    );
    q('set v {expires: now() - 1s} where id = $1', third!.id);
    const after = rows('get v near vec $1 limit 10', query).map((r) => r.id);
    expect(after).to.not.include.members([first!.id, second!.id, third!.id]);
    expect(after).to.have.length(10);
  });

  it('answers 10 rows without a limit, and pages with offset', () => {
    const query = vector();
    const ten = rows('get v near vec $1', query).map((r) => r.id);
    expect(ten).to.have.length(10);
    expect(rows('get v near vec $1 limit 5 offset 5', query).map((r) => r.id)).to.deep.equal(ten.slice(5));
    expect(q('get v near vec $1 limit 7 count', query)).to.deep.equal({ count: 7 });
  });

  it('refuses a query of another length, naming the field', () => {
    const err = refusal(() => q('get v near vec $1', [1, 2, 3]));
    expect(err.code).to.equal('vector_length');
    expect(err.message).to.equal(`vector has 3 components; field vec takes vector<${DIMS}>`);
    expect(refusal(() => q('get v near grp [1]')).code).to.equal('invalid_statement');
    expect(refusal(() => q('get v near vec $1', 'not a vector')).code).to.equal('type_mismatch');
  });

  it('keeps vectors out of answers unless selected', () => {
    const [row] = rows('get v near vec $1 limit 1', vector()) as Record<string, unknown>[];
    expect(row).to.have.keys('id', 'grp', 'rare', 'expires', '_score');
  });
});
