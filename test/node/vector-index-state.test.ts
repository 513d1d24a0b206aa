import { expect } from 'chai';
import { FenecDatabase } from '../../node/database.js';
import { tempDir } from '../helpers/temp.js';
import { seededRandom } from '../helpers/vectors.js';

const DIMS = 64;
type IndexState = { rows: number; pending: number; building: boolean };

describe('a vector index while it fills (schema, near)', function () {
  this.timeout(120_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const random = seededRandom(12);
  const vector = (): number[] => Array.from({ length: DIMS }, () => Number((random() - 0.5).toFixed(5)));
  const state = (): IndexState =>
    (
      db.execute('schema docs') as unknown as { collections: { fields: { name: string; index?: IndexState }[] }[] }
    ).collections[0]!.fields.find((f) => f.name === 'v')!.index!;

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('s.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    db.execute(`create collection docs (title text required, v vector<${DIMS}> @hnsw(cosine))`);
  });
  afterEach(async () => {
    await db.idle();
    db.close();
    temp.remove();
  });

  it('shows the rows indexed and pending, and whether it works, before, while and after a load', async () => {
    expect(state()).to.deep.equal({ rows: 0, pending: 0, building: false });
    const rows = Array.from({ length: 6000 }, (_, i) => ({ title: `r${i}`, v: vector() }));
    db.execute('insert into docs $1', [rows]);
    const during = state();
    expect(during.building).to.equal(true);
    expect(during.pending).to.be.greaterThan(0);
    expect(during.rows + during.pending).to.equal(6000);
    expect(db.execute('schema docs')).to.have.nested.property('collections[0].fields[0].name', 'id');
    await db.idle();
    expect(state()).to.deep.equal({ rows: 6000, pending: 0, building: false });
    // A field without @hnsw shows no index.
    expect((db.execute('schema docs') as any).collections[0].fields[1]).to.not.have.property('index');
  });

  it('finds a row that only the pending rows hold while the index fills, and rows the index holds', async () => {
    const first = Array.from({ length: 6000 }, (_, i) => ({ title: `a${i}`, v: vector() }));
    db.execute('insert into docs $1', [first]);
    // While the first batch is being added, a second one queues behind it.
    const second = Array.from({ length: 200 }, (_, i) => ({ title: `b${i}`, v: vector() }));
    db.execute('insert into docs $1', [second]);
    expect(state().pending).to.be.greaterThan(200);
    const target = second[123]!;
    const near = db.execute('get docs select title near v $1 limit 3', [target.v]) as unknown as {
      rows: { title: string; _score: number }[];
    };
    expect(near.rows[0]!.title).to.equal('b123');
    expect(near.rows[0]!._score).to.be.closeTo(1, 1e-5);
    expect(near.rows).to.have.length(3);
    // Once some of the first batch is in the index, its rows are found through it.
    for (let i = 0; i < 600 && state().rows === 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(state().rows).to.be.greaterThan(0);
    const held = db.execute('get docs select title near v $1 limit 1', [first[0]!.v]) as unknown as {
      rows: { title: string }[];
    };
    expect(held.rows[0]!.title).to.equal('a0');
    await db.idle();
    const after = db.execute('get docs select title near v $1 limit 1', [target.v]) as unknown as {
      rows: { title: string }[];
    };
    expect(after.rows[0]!.title).to.equal('b123');
  });
});
