import { expect } from 'chai';
import { FenecDatabase } from '../../node/database.js';
import { answerText } from '../../node/query/execute/answer-text.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

describe('FenecDatabase', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const q = (statement: string, ...params: unknown[]) => db.execute(statement, params);

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('t.fenec'), readOnly: false, program: 'test' });
    q(`create collection docs (title text required, body text, year int @sorted, owner text @hash,
        tags [text], score float default 0.5, done bool default false, at timestamp default now(),
        meta json, vec vector<3>, code text unique)`);
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  describe('writes', () => {
    it('answers an insert with its count and ids, increasing', () => {
      expect(q('insert into docs {title: "a"}')).to.deep.equal({ count: 1, ids: [1] });
      expect(q('insert into docs [{title: "b"}, {title: "c"}]')).to.deep.equal({ count: 2, ids: [2, 3] });
    });

    it('never hands out an id twice, even after the newest row is deleted', () => {
      q('insert into docs [{title: "a"}, {title: "b"}]');
      expect(q('del docs where id = 2')).to.deep.equal({ count: 1 });
      expect(q('insert into docs {title: "c"}')).to.deep.equal({ count: 1, ids: [3] });
    });

    it('writes all rows of an insert or none', () => {
      const err = refusal(() => q('insert into docs [{title: "a"}, {title: 5}]'));
      expect(err.code).to.equal('type_mismatch');
      expect(err.message).to.contain('field title takes text');
      expect(q('get docs count')).to.deep.equal({ count: 0 });
    });

    it('fills defaults, including now()', () => {
      const before = Date.now();
      q('insert into docs {title: "a"}');
      const [row] = q('get docs').rows as Record<string, unknown>[];
      expect(row).to.include({ id: 1, title: 'a', score: 0.5, done: false });
      expect(Date.parse(row!.at as string)).to.be.within(before, Date.now());
    });

    it('refuses a missing required field, naming it', () => {
      const err = refusal(() => q('insert into docs {body: "x"}'));
      expect(err.code).to.equal('missing_required');
      expect(err.message).to.contain('title');
      expect(refusal(() => q('insert into docs {title: $1}', null)).code).to.equal('missing_required');
      expect(refusal(() => q('insert into docs {title: null}')).code).to.equal('missing_required');
    });

    it('refuses a float computed for an int field (coalesce of a float and an int), naming the field', () => {
      q('insert into docs {title: "a", year: 1}');
      for (const statement of [
        'insert into docs {title: "b", year: coalesce(1.5, 2)}',
        'insert into docs {title: "b", year: coalesce($1, 2)}',
        'put docs {id: 1, title: "b", year: coalesce(1e300, 2)}',
        'set docs {year: coalesce($1, 2)} where id = 1',
      ]) {
        const err = refusal(() => q(statement, 1.5));
        expect(err.code, statement).to.equal('type_mismatch');
        expect(err.status, statement).to.equal(400);
        expect(err.message, statement).to.equal('field year cannot hold a float, as computed for it');
      }
      expect(q('get docs select title, year').rows).to.deep.equal([{ id: 1, title: 'a', year: 1 }]);
    });

    it('refuses a second row with a unique value as a conflict', () => {
      q('insert into docs {title: "a", code: "x"}');
      const err = refusal(() => q('insert into docs {title: "b", code: "x"}'));
      expect(err.code).to.equal('unique_violation');
      expect(err.status).to.equal(409);
      expect(err.message).to.contain('code');
    });

    it('refuses an unknown field and an id on insert', () => {
      expect(refusal(() => q('insert into docs {title: "a", nope: 1}')).code).to.equal('unknown_field');
      expect(refusal(() => q('insert into docs {id: 3, title: "a"}')).code).to.equal('invalid_statement');
    });

    it('puts a row by id: creates it, then replaces it whole', () => {
      expect(q('put docs {id: 10, title: "a", body: "b"}')).to.deep.equal({ count: 1, ids: [10] });
      expect(q('put docs {id: 10, title: "z"}')).to.deep.equal({ count: 1, ids: [10] });
      expect(q('get docs select title, body')).to.deep.equal({ rows: [{ id: 10, title: 'z', body: null }], count: 1 });
      expect(q('insert into docs {title: "next"}').ids).to.deep.equal([11]);
      expect(refusal(() => q('put docs {title: "no id"}')).code).to.equal('invalid_statement');
      expect(refusal(() => q('put docs {id: 0, title: "x"}')).code).to.equal('invalid_value');
    });

    it('sets fields of the matching rows, from values and from the row itself', () => {
      q('insert into docs [{title: "a", year: 2020}, {title: "b", year: 2021}]');
      expect(q('set docs {year: year + 1, body: $1} where year >= $2', 'new', 2021)).to.deep.equal({ count: 1 });
      expect(q('get docs select year, body order year')).to.deep.equal({
        rows: [
          { id: 1, year: 2020, body: null },
          { id: 2, year: 2022, body: 'new' },
        ],
        count: 2,
      });
      expect(refusal(() => q('set docs {id: 5} where true')).code).to.equal('invalid_statement');
      expect(refusal(() => q('set docs {year: "x"} where true')).code).to.equal('type_mismatch');
    });

    it('deletes the matching rows; where true deletes them all', () => {
      q('insert into docs [{title: "a"}, {title: "b"}, {title: "c"}]');
      expect(q('del docs where title = "b"')).to.deep.equal({ count: 1 });
      expect(q('del docs where true')).to.deep.equal({ count: 2 });
      expect(q('get docs count')).to.deep.equal({ count: 0 });
    });
  });

  describe('values', () => {
    it('takes timestamps as ISO strings or milliseconds and answers ISO UTC', () => {
      q(
        'insert into docs [{title: "a", at: "2026-11-29T18:00:00Z"}, {title: "b", at: 0}, {title: "c", at: "2026-11-29T19:00:00+01:00"}]',
      );
      expect(q('get docs select at').rows).to.deep.equal([
        { id: 1, at: '2026-11-29T18:00:00.000Z' },
        { id: 2, at: '1970-01-01T00:00:00.000Z' },
        { id: 3, at: '2026-11-29T18:00:00.000Z' },
      ]);
      expect(q('get docs where at = "2026-11-29T18:00:00Z" count')).to.deep.equal({ count: 2 });
      expect(q('get docs where at < now() - 7d count')).to.deep.equal({ count: 1 });
      expect(q('get docs where at > now() + 1d count')).to.deep.equal({ count: 0 });
      expect(refusal(() => q('insert into docs {title: "x", at: "yesterday"}')).code).to.equal('invalid_value');
    });

    it('keeps bools, arrays and json as JSON', () => {
      q('insert into docs {title: "a", done: true, tags: ["x", "y"], meta: {k: [1, {z: null}]}}');
      expect(q('get docs select done, tags, meta').rows).to.deep.equal([
        { id: 1, done: true, tags: ['x', 'y'], meta: { k: [1, { z: null }] } },
      ]);
    });

    it('leaves vector fields out unless selected, and refuses a wrong length naming the field', () => {
      q('insert into docs {title: "a", vec: [0.1, 0.2, 0.3]}');
      expect((q('get docs').rows as object[])[0]).to.not.have.property('vec');
      expect(q('get docs select vec').rows).to.deep.equal([{ id: 1, vec: [0.1, 0.2, 0.3] }]);
      expect((q('get docs select *').rows as Record<string, unknown>[])[0]!.vec).to.deep.equal([0.1, 0.2, 0.3]);
      const err = refusal(() => q('insert into docs {title: "b", vec: $1}', [1, 2, 3, 4, 5]));
      expect(err.code).to.equal('vector_length');
      expect(err.message).to.equal('vector has 5 components; field vec takes vector<3>');
    });

    it('binds parameters as values, never as statement text', () => {
      const hostile = 'x" or true --';
      q('insert into docs {title: $1}', hostile);
      expect(q('get docs where title = $1 count', hostile)).to.deep.equal({ count: 1 });
      expect(q('get docs where title = $1 count', '1 or 1=1')).to.deep.equal({ count: 0 });
      expect(refusal(() => q('get docs where title = $2', 'a')).code).to.equal('missing_parameter');
    });

    it('refuses a comparison of mismatched types at plan time, naming both', () => {
      const err = refusal(() => q('get docs where title = 5'));
      expect(err.code).to.equal('type_mismatch');
      expect(err.message).to.contain('title').and.to.contain('text');
      expect(refusal(() => q('get docs where year = $1', 'x')).message).to.contain('field year takes');
      expect(refusal(() => q('get docs where nope = 1')).code).to.equal('unknown_field');
    });
  });

  describe('reads', () => {
    beforeEach(() => {
      q(`insert into docs [
        {title: "alpha", year: 2024, owner: "ann", tags: ["ops", "x"], done: true},
        {title: "beta", year: 2025, owner: "bob", tags: ["dev"]},
        {title: "Gamma", year: null, owner: "ann", tags: []},
        {title: "delta", year: 2023, owner: "cy"}
      ]`);
    });
    const orderedIds = (statement: string, ...params: unknown[]) =>
      (q(statement, ...params).rows as { id: number }[]).map((r) => r.id);
    /** Without `order` rows come in the order of the path SQLite takes; these tests look at which rows, not how. */
    const ids = (statement: string, ...params: unknown[]) => orderedIds(statement, ...params).sort((a, b) => a - b);

    it('answers rows and their count', () => {
      expect(q('get docs select title where year = 2025')).to.deep.equal({
        rows: [{ id: 2, title: 'beta' }],
        count: 1,
      });
    });

    it('filters with and, or, not, in, has, like and is null', () => {
      expect(ids('get docs where owner = "ann" and year > 2000')).to.deep.equal([1]);
      expect(ids('get docs where owner = "cy" or year = 2025')).to.deep.equal([2, 4]);
      expect(ids('get docs where owner in ["bob", "cy"]')).to.deep.equal([2, 4]);
      expect(ids('get docs where year in $1', [2023, 2024])).to.deep.equal([1, 4]);
      expect(ids('get docs where tags has "ops"')).to.deep.equal([1]);
      expect(ids('get docs where title like "%TA"')).to.deep.equal([2, 4]);
      expect(ids('get docs where year is null')).to.deep.equal([3]);
      expect(ids('get docs where year is not null and done')).to.deep.equal([1]);
      expect(ids('get docs where lower(title) = "gamma"')).to.deep.equal([3]);
      expect(ids('get docs where len(tags) = 2')).to.deep.equal([1]);
    });

    it("reads fields named like json_each's own columns", () => {
      q('create collection kv (key text, value [text])');
      q('insert into kv {key: "k", value: ["a", "b"]}');
      expect(q('get kv where value has "a" count')).to.deep.equal({ count: 1 });
      expect(q('get kv where key in ["k"] and "b" in value count')).to.deep.equal({ count: 1 });
    });

    it('treats a comparison with null as false, so not of it is true', () => {
      expect(ids('get docs where year = 2025')).to.deep.equal([2]);
      expect(ids('get docs where not (year = 2025)')).to.deep.equal([1, 3, 4]);
      expect(ids('get docs where year != 2025')).to.deep.equal([1, 4]);
    });

    it('orders, limits and offsets, ties broken by id', () => {
      expect(orderedIds('get docs order year desc')).to.deep.equal([2, 1, 4, 3]);
      expect(orderedIds('get docs order owner, year desc limit 2 offset 1')).to.deep.equal([3, 2]);
      expect(orderedIds('get docs order owner limit $1 offset $2', 2, 2)).to.deep.equal([2, 4]);
      expect(orderedIds('get docs order title')).to.deep.equal([3, 1, 2, 4]);
      expect(refusal(() => q('get docs limit $1', -1)).code).to.equal('invalid_value');
    });

    it('answers a read of one row at most (an id, limit 1) under the answer cap as any other', () => {
      const capped = (statement: string, maxAnswerBytes: number, ...params: unknown[]) =>
        answerText(db.execute(statement, params, { maxAnswerBytes }), maxAnswerBytes);
      const beta = '{"rows":[{"id":2,"title":"beta"}],"count":1}';
      expect(capped('get docs select title where id = $1', 1000, 2)).to.equal(beta);
      expect(capped('get docs select title where 2 = id', 1000)).to.equal(beta);
      expect(capped('get docs select title where year > 2020 and id = 2', 1000)).to.equal(beta);
      expect(capped('get docs select title where year < 2020 and id = 2', 1000)).to.equal('{"rows":[],"count":0}');
      expect(capped('get docs select title where id = 99', 1000)).to.equal('{"rows":[],"count":0}');
      expect(capped('get docs select title order year desc limit 1', 1000)).to.equal(beta);
      const err = refusal(() => capped('get docs where id = 2', 60));
      expect(err.code).to.equal('answer_too_large');
      expect(err.message).to.contain('after 0 rows');
      // The refused read left nothing open: the file takes writes.
      expect(q('del docs where id = 2')).to.deep.equal({ count: 1 });
    });

    it('counts the rows that would be answered', () => {
      expect(q('get docs where owner = "ann" count')).to.deep.equal({ count: 2 });
      expect(q('get docs limit 3 count')).to.deep.equal({ count: 3 });
    });

    it('uses the @hash and @sorted indexes', () => {
      expect(db.explain('get docs where owner = "ann"').join('\n')).to.match(/USING INDEX i\.docs\.owner/);
      expect(db.explain('get docs where year > 2020').join('\n')).to.match(/USING INDEX i\.docs\.year/);
      expect(db.explain('get docs where code = "x"').join('\n')).to.match(/USING INDEX u\.docs\.code/);
      expect(db.explain('get docs where id = $1').join('\n')).to.match(/USING INTEGER PRIMARY KEY/);
    });
  });

  describe('statements as trees', () => {
    it('runs a tree with a condition embedded as parsed, never as text', async () => {
      const { parseCondition, parseStatement } = await import('../../shared/fenecql/parser.js');
      q('insert into docs [{title: "a", year: 2020}, {title: "b", year: 2025}]');
      const get = parseStatement('get docs select title') as import('../../shared/fenecql/ast.js').GetStmt;
      const tree = { ...get, where: parseCondition('year >= $1') };
      expect(db.executeStatement(tree, [2024])).to.deep.equal({ rows: [{ id: 2, title: 'b' }], count: 1 });
      expect(db.executeStatement(tree, [2000])).to.deep.equal({
        rows: [
          { id: 1, title: 'a' },
          { id: 2, title: 'b' },
        ],
        count: 2,
      });
    });
  });

  describe('schema', () => {
    it('describes collections with their fields, types and annotations', () => {
      q('create collection notes (text text required, at timestamp @sorted, v vector<4>)');
      const answer = q('schema notes') as { collections: { name: string; fields: unknown[] }[] };
      expect(answer.collections).to.have.length(1);
      expect(answer.collections[0]!.fields).to.deep.equal([
        { name: 'id', type: 'int', required: true, unique: true, annotations: [] },
        { name: 'text', type: 'text', required: true, unique: false, annotations: [] },
        { name: 'at', type: 'timestamp', required: false, unique: false, annotations: ['@sorted'] },
        { name: 'v', type: 'vector<4>', required: false, unique: false, annotations: [] },
      ]);
      expect((q('schema') as { collections: { name: string }[] }).collections.map((c) => c.name)).to.deep.equal([
        'docs',
        'notes',
      ]);
    });

    it('creates if not exists, drops if exists, and refuses the rest', () => {
      expect(q('create collection if not exists docs (x int)')).to.deep.equal({ created: false });
      expect(refusal(() => q('create collection docs (x int)')).code).to.equal('collection_exists');
      expect(refusal(() => q('create collection Docs (x int)')).code).to.equal('collection_exists');
      expect(q('drop collection docs')).to.deep.equal({ dropped: true });
      expect(q('drop collection if exists docs')).to.deep.equal({ dropped: false });
      const err = refusal(() => q('get docs'));
      expect(err.code).to.equal('unknown_collection');
      expect(err.status).to.equal(404);
    });

    it('adds a field, filling existing rows with its default, and drops one', () => {
      q('insert into docs {title: "a"}');
      q('alter collection docs add views int required default 7 @sorted');
      expect(q('get docs select views').rows).to.deep.equal([{ id: 1, views: 7 }]);
      expect(db.explain('get docs where views = 7').join('\n')).to.match(/USING INDEX i\.docs\.views/);
      q('alter collection docs drop owner');
      expect(refusal(() => q('get docs where owner = "x"')).code).to.equal('unknown_field');
      expect(refusal(() => q('alter collection docs add flag bool required')).code).to.equal('invalid_statement');
      expect(refusal(() => q('alter collection docs add title text')).code).to.equal('field_exists');
    });

    it('refuses a default of the wrong type when the collection is made', () => {
      expect(refusal(() => q('create collection c (n int default "x")')).code).to.equal('type_mismatch');
      expect((q('schema') as { collections: unknown[] }).collections).to.have.length(1);
    });

    it('compacts the file', () => {
      q('insert into docs [{title: "a"}, {title: "b"}]');
      q('del docs where true');
      const answer = q('compact');
      expect(answer).to.have.keys('count', 'bytes_before', 'bytes_after');
      expect(answer.bytes_after as number).to.be.at.most(answer.bytes_before as number);
    });
  });

  describe('files', () => {
    it('keeps every acknowledged write when reopened', () => {
      q('insert into docs {title: "kept"}');
      db.close();
      db = FenecDatabase.open({ file: temp.file('t.fenec'), readOnly: false, program: 'test' });
      expect(q('get docs select title').rows).to.deep.equal([{ id: 1, title: 'kept' }]);
    });

    it('reads, read-only, the file as it stood when opened, beside a writer', () => {
      q('insert into docs {title: "before"}');
      const reader = FenecDatabase.open({ file: temp.file('t.fenec'), readOnly: true, program: 'test' });
      try {
        q('insert into docs {title: "after"}');
        expect(reader.execute('get docs count')).to.deep.equal({ count: 1 });
        expect(q('get docs count')).to.deep.equal({ count: 2 });
        expect(refusal(() => reader.execute('insert into docs {title: "x"}')).code).to.equal('read_only');
      } finally {
        reader.close();
      }
    });

    it('refuses writes when asked to run read-only', () => {
      const err = refusal(() => db.execute('insert into docs {title: "x"}', [], { readOnly: true }));
      expect(err.code).to.equal('read_only');
      expect(err.status).to.equal(403);
      expect(db.execute('get docs count', [], { readOnly: true })).to.deep.equal({ count: 0 });
    });

    it('refuses a SQLite file that is not a fenecdb file', async () => {
      const { default: Database } = await import('better-sqlite3');
      const other = new Database(temp.file('other.db'));
      other.exec('create table t (x)');
      other.close();
      const err = refusal(() => FenecDatabase.open({ file: temp.file('other.db'), readOnly: false, program: 'test' }));
      expect(err.code).to.equal('cannot_open');
    });
  });
});
