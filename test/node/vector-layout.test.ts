import { expect } from 'chai';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { parseCondition } from '../../shared/fenecql/parser.js';
import type { Policy } from '../../shared/auth/policy.js';
import { FenecDatabase } from '../../node/database.js';
import { openReader } from '../../node/storage/sqlite.js';
import type { VectorStoreEvent } from '../../node/vector/store.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

type Row = Record<string, unknown>;
type Rows = { rows: Row[]; count: number };

/** The fields of a row as `select *` answers them, a vector field left out reading null. */
const FIELDS = ['body', 'grp', 'vec', 'raw', 'need'] as const;

function columns(file: string, table: string): string[] {
  const db = openReader(file);
  try {
    return db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[];
  } finally {
    db.close();
  }
}

function tables(file: string): string[] {
  const db = openReader(file);
  try {
    return db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'c\\_%' ESCAPE '\\' ORDER BY name")
      .pluck()
      .all() as string[];
  } finally {
    db.close();
  }
}

function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

describe('vectors kept in tables of their own (schema/catalog)', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let file: string;
  const run = (statement: string, ...params: unknown[]) => db.execute(statement, params);
  const rows = (statement: string, ...params: unknown[]) => (run(statement, ...params) as unknown as Rows).rows;

  beforeEach(() => {
    temp = tempDir();
    file = temp.file('v.fenec');
  });
  afterEach(async () => {
    await db?.idle();
    db?.close();
    temp.remove();
  });

  function open(options: { readOnly?: boolean; onVectorEvent?: (e: VectorStoreEvent) => void } = {}): FenecDatabase {
    db = FenecDatabase.open({
      file,
      readOnly: options.readOnly ?? false,
      program: 'test',
      sweepIntervalMs: 0,
      onVectorEvent: options.onVectorEvent,
    });
    return db;
  }

  it('keeps each vector field in its own table, and every write path keeps rows and vectors as a model of them says', () => {
    open();
    run(
      'create collection notes (body text @text, grp int @hash, vec vector<2> @hnsw(l2), raw vector<3>, need vector<2> required default [1, 2])',
    );
    expect(columns(file, 'c_notes')).to.deep.equal(['id', 'body', 'grp']);
    expect(tables(file)).to.deep.equal(['c_notes', 'c_notes.need', 'c_notes.raw', 'c_notes.vec']);

    const model = new Map<number, Row>();
    const full = (id: number, row: Row): Row => ({
      id,
      body: null,
      grp: null,
      vec: null,
      raw: null,
      need: [1, 2],
      ...row,
    });
    const check = (step: string): void => {
      const want = [...model.values()].sort((a, b) => (a.id as number) - (b.id as number));
      expect(rows('get notes select * order id'), step).to.deep.equal(
        want.map((r) => Object.fromEntries([['id', r.id], ...FIELDS.map((f) => [f, r[f]])])),
      );
      // Every vector's table holds rows of live rows only (the delete trigger), and the exact scan and the index agree.
      for (const field of ['vec', 'raw', 'need']) {
        const held = new Set(want.filter((r) => r[field] !== null).map((r) => r.id));
        const found = rows(`get notes select id where ${field} is not null order id`).map((r) => r.id);
        expect(found, `${step}: ${field}`).to.deep.equal([...held].sort((a, b) => (a as number) - (b as number)));
      }
      for (const query of [
        [1, 0],
        [0.3, -2],
      ]) {
        const exact = want
          .filter((r) => r.vec !== null)
          .map((r) => ({
            id: r.id,
            d: Math.hypot((r.vec as number[])[0]! - query[0]!, (r.vec as number[])[1]! - query[1]!),
          }));
        exact.sort((a, b) => a.d - b.d || (a.id as number) - (b.id as number));
        const near = rows('get notes select id near vec $1 limit 3', query).map((r) => r.id);
        expect(near, `${step}: near ${query}`).to.deep.equal(exact.slice(0, 3).map((r) => r.id));
      }
      // raw has no index: an exact scan of its table, joined to the rows for the filter.
      const cosine = (a: number[], b: number[]) =>
        a.reduce((s, x, i) => s + x * b[i]!, 0) / (Math.hypot(...a) * Math.hypot(...b) || 1);
      const scan = want
        .filter((r) => r.raw !== null && r.grp !== null && (r.grp as number) < 3)
        .map((r) => ({ id: r.id, s: Math.fround(cosine(r.raw as number[], [1, 2, 2])) }));
      scan.sort((a, b) => b.s - a.s || (a.id as number) - (b.id as number));
      const scanned = rows('get notes select id near raw [1, 2, 2] where grp < 3 limit 4');
      expect(
        scanned.map((r) => r.id),
        `${step}: near raw`,
      ).to.have.members(scan.slice(0, 4).map((r) => r.id));
    };

    // insert written out: a vector given, one left out (null), the default of a required one.
    const one = run('insert into notes {body: "alpha", grp: 1, vec: [1, 1]}') as unknown as { ids: number[] };
    model.set(one.ids[0]!, full(one.ids[0]!, { body: 'alpha', grp: 1, vec: [1, 1] }));
    const two = run(
      'insert into notes [{body: "beta", grp: 2, raw: [1, 2, 3], need: [5, 6]}, {grp: 3, vec: [2, 0]}]',
    ) as unknown as { ids: number[] };
    model.set(two.ids[0]!, full(two.ids[0]!, { body: 'beta', grp: 2, raw: [1, 2, 3], need: [5, 6] }));
    model.set(two.ids[1]!, full(two.ids[1]!, { grp: 3, vec: [2, 0] }));
    check('insert written out');

    // insert $1: many rows staged (the k-th row gets the k-th id), and one row alone.
    const many = Array.from({ length: 40 }, (_, i) => ({
      body: `row ${i}`,
      grp: i % 4,
      ...(i % 3 === 0 ? {} : { vec: [i / 10, (i % 7) - 3] }),
      ...(i % 2 === 0 ? { raw: [i, 1 - i, 0.5] } : {}),
      ...(i % 5 === 0 ? { need: [i, i] } : {}),
    }));
    const bulk = run('insert into notes $1', many) as unknown as { ids: number[] };
    bulk.ids.forEach((id, i) => model.set(id, full(id, many[i]!)));
    const single = run('insert into notes $1', [{ grp: 9, vec: [-1, -1] }]) as unknown as { ids: number[] };
    model.set(single.ids[0]!, full(single.ids[0]!, { grp: 9, vec: [-1, -1] }));
    check('insert $1');

    // put written out replaces the row whole: a vector it leaves out is null again, or its default.
    run('put notes {id: 1, body: "alpha again", raw: [0, 0, 1]}');
    model.set(1, full(1, { body: 'alpha again', raw: [0, 0, 1] }));
    run('put notes {id: 500, vec: [3, 3]}');
    model.set(500, full(500, { vec: [3, 3] }));
    check('put written out');

    // put $1: existing and new ids, an id twice (the last wins).
    const puts = [
      { id: 2, grp: 7, vec: [0.5, 0.5] },
      { id: 600, body: 'new', need: [9, 9] },
      { id: 2, grp: 8 },
      { id: bulk.ids[3]!, vec: [4, 4], raw: [4, 4, 4] },
    ];
    run('put notes $1', puts);
    for (const p of puts) model.set(p.id, full(p.id, p));
    check('put $1');

    // set: a vector by a filter on that very vector (the rows are chosen once), a vector and a field together, null.
    const noRaw = [...model.values()].filter((r) => r.raw === null).map((r) => r.id as number);
    expect(run('set notes {raw: [7, 7, 7]} where raw is null')).to.deep.equal({ count: noRaw.length });
    for (const id of noRaw) model.get(id)!.raw = [7, 7, 7];
    const grp1 = [...model.values()].filter((r) => r.grp === 1).map((r) => r.id as number);
    expect(run('set notes {vec: $1, grp: 11} where grp = 1', [0, 5])).to.deep.equal({ count: grp1.length });
    for (const id of grp1) Object.assign(model.get(id)!, { vec: [0, 5], grp: 11 });
    run('set notes {vec: null} where id = 500');
    model.get(500)!.vec = null;
    check('set');

    // del: its vectors go with it (from every table and from the index).
    const gone = [...model.values()].filter((r) => r.grp === 2 || r.grp === 8).map((r) => r.id as number);
    expect(run('del notes where grp in [2, 8]')).to.deep.equal({ count: gone.length });
    for (const id of gone) model.delete(id);
    check('del');
    const reader = openReader(file);
    try {
      for (const table of ['c_notes.vec', 'c_notes.raw', 'c_notes.need']) {
        const orphans = reader
          .prepare(`SELECT count(*) FROM "${table}" WHERE "id" NOT IN (SELECT "id" FROM c_notes)`)
          .pluck()
          .get();
        expect(orphans, table).to.equal(0);
      }
    } finally {
      reader.close();
    }
  });

  it("holds a set of a vector to the token's policy: rows outside it are neither chosen nor left behind", () => {
    open();
    run('create collection notes (owner text, v vector<2>)');
    run('insert into notes $1', [{ owner: 'ann', v: [1, 0] }, { owner: 'bob', v: [0, 1] }, { owner: 'ann' }]);
    const policy: Policy = {
      rules: new Map([
        [
          'notes',
          { collection: 'notes', read: true, write: true, where: parseCondition('owner = $jwt.sub'), source: 'test' },
        ],
      ]),
    };
    const ann = { jwt: { sub: 'ann' }, policy };
    expect(db.execute('set notes {v: [5, 5]} where id > 0', [], ann)).to.deep.equal({ count: 2 });
    expect(refusal(() => db.execute('set notes {v: [9, 9], owner: "bob"} where id = 1', [], ann)).code).to.equal(
      'forbidden',
    );
    expect(rows('get notes select * order id')).to.deep.equal([
      { id: 1, owner: 'ann', v: [5, 5] },
      { id: 2, owner: 'bob', v: [0, 1] },
      { id: 3, owner: 'ann', v: [5, 5] },
    ]);
  });

  it('refuses a required vector left null on every path, naming the row, and writes nothing', () => {
    open();
    run('create collection notes (body text, need vector<2> required)');
    expect(refusal(() => run('insert into notes {body: "x"}')).code).to.equal('missing_required');
    expect(refusal(() => run('insert into notes {need: null}')).code).to.equal('missing_required');
    const bad = refusal(() => run('insert into notes $1', [{ need: [1, 1] }, { need: null }]));
    expect([bad.code, bad.row]).to.deep.equal(['missing_required', 1]);
    expect(
      refusal(() =>
        run('put notes $1', [
          { id: 3, need: [1, 1] },
          { id: 4, body: 'x' },
        ]),
      ).code,
    ).to.equal('missing_required');
    run('insert into notes {need: [1, 1]}');
    expect(refusal(() => run('set notes {need: null} where id = 1')).code).to.equal('missing_required');
    expect(rows('get notes select *')).to.deep.equal([{ id: 1, body: null, need: [1, 1] }]);
  });

  it('adds and drops vector fields, and drops a collection with its vectors', () => {
    open();
    run('create collection notes (body text)');
    run('insert into notes $1', [{ body: 'a' }, { body: 'b' }]);
    run('alter collection notes add w vector<2> default [0, 1] @hnsw(cosine)');
    run('alter collection notes add u vector<2>');
    expect(rows('get notes select id, w, u order id')).to.deep.equal([
      { id: 1, w: [0, 1], u: null },
      { id: 2, w: [0, 1], u: null },
    ]);
    run('set notes {w: [1, 0]} where id = 2');
    expect(rows('get notes select id near w [1, 0.1] limit 1'))
      .to.have.length(1)
      .and.to.have.nested.property('[0].id', 2);
    run('alter collection notes drop w');
    expect(tables(file)).to.deep.equal(['c_notes', 'c_notes.u']);
    run('drop collection notes');
    expect(tables(file)).to.deep.equal([]);
    run('create collection notes (w vector<2> @hnsw(l2))');
    run('insert into notes {w: [5, 5]}');
    expect(rows('get notes select * near w [5, 5] limit 5')).to.deep.equal([{ id: 1, w: [5, 5], _score: 1 }]);
  });

  it('holds about thirty rows a page in the row table when each row has a 384-dim vector', () => {
    open();
    run('create collection docs (body text @text, grp int, v vector<384>)');
    const v = Array.from({ length: 384 }, (_, i) => Math.sin(i));
    const batch = Array.from({ length: 200 }, (_, i) => ({ body: `a short note about thing ${i}`, grp: i % 10, v }));
    for (let b = 0; b < 10; b++) run('insert into docs $1', batch);
    db.close();
    const reader = openReader(file);
    try {
      const pages = (name: string) =>
        reader.prepare("SELECT count(*) FROM dbstat WHERE name = ? AND pagetype = 'leaf'").pluck().get(name) as number;
      // 2 000 rows: in the row they made two rows a page (1 000 pages); apart, the row table is tens of pages.
      expect(pages('c_docs')).to.be.below(2000 / 20);
      expect(pages('c_docs.v')).to.be.at.least(2000 / 3);
    } finally {
      reader.close();
    }
    db = FenecDatabase.open({ file, readOnly: false, program: 'test', sweepIntervalMs: 0 });
  });

  describe('a file written before (test/fixtures/layout-1, made by d938900)', () => {
    const FIXTURE = new URL('../../../test/fixtures/layout-1/', import.meta.url);
    const answers = JSON.parse(fs.readFileSync(new URL('answers.json', FIXTURE), 'utf8')) as Record<
      'rows' | 'near' | 'match',
      unknown
    >;
    const ask = (): Record<'rows' | 'near' | 'match', unknown> => ({
      rows: run('get notes select * order id'),
      near: run('get notes select id near vec $1 limit 5', [1, 0, 0.5, 1]),
      match: run('get notes select id match body "tea" limit 3'),
    });

    beforeEach(() => fs.copyFileSync(new URL('notes.fenec', FIXTURE), file));

    it('is read where its vectors are when opened read-only, and left as it was', () => {
      const before = sha256(file);
      expect(columns(file, 'c_notes')).to.include.members(['vec', 'raw', 'need']);
      open({ readOnly: true });
      expect(ask()).to.deep.equal(answers);
      expect(rows('get notes select id near raw [2, 3, 4] limit 2').map((r) => r.id)).to.deep.equal([2, 4]);
      db.close();
      expect(sha256(file)).to.equal(before);
      db = undefined as unknown as FenecDatabase;
    });

    it('is moved to the layout once opened writable: the same answers, its stored index kept, and writes go on', async () => {
      const events: VectorStoreEvent[] = [];
      open({ onVectorEvent: (e) => events.push(e) });
      expect(columns(file, 'c_notes')).to.deep.equal(['id', 'body', 'grp']);
      expect(tables(file)).to.deep.equal(['c_notes', 'c_notes.need', 'c_notes.raw', 'c_notes.vec', 'c_plain']);
      expect(ask()).to.deep.equal(answers);
      // The index came from the file's snapshot: no trigger was missing, nothing was built from the rows.
      expect(events.filter((e) => e.kind !== 'snapshot_written')).to.deep.equal([]);
      expect(rows('get plain select *')).to.deep.equal([{ id: 1, title: 'x' }]);
      const { ids } = run('insert into notes {body: "new tea", vec: [1, 0, 0.5, 1]}') as unknown as { ids: number[] };
      expect(rows('get notes select id near vec $1 limit 1', [1, 0, 0.5, 1])).to.deep.equal([
        { id: ids[0], _score: 1 },
      ]);
      run('del notes where id = 1');
      await db.idle();
      db.close();
      // Opened again: nothing left to move.
      open({ onVectorEvent: (e) => events.push(e) });
      expect((run('get notes count') as unknown as { count: number }).count).to.equal(59);
    });
  });
});
