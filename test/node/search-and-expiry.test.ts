import { expect } from 'chai';
import Database from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { FenecDatabase } from '../../node/database.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

type Rows = { rows: Record<string, unknown>[]; count: number };

describe('FenecDatabase search and expiry', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const q = (statement: string, ...params: unknown[]) => db.execute(statement, params);
  const rows = (statement: string, ...params: unknown[]) => (q(statement, ...params) as Rows).rows;

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('s.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  describe('match', () => {
    beforeEach(() => {
      q('create collection docs (title text @text, body text @text, year int, tags [text] @text)');
      q(`insert into docs [
        {title: "deploys", body: "the deploy runs on fridays", year: 2024, tags: ["ops"]},
        {title: "staging", body: "staging is in eu-west-1", year: 2025, tags: ["ops", "infra"]},
        {title: "cat", body: "the cat watches the fox", year: 2025, tags: []},
        {title: "fox", body: "a fox, a fox and another fox", year: 2023, tags: ["animals"]}
      ]`);
    });

    it('finds a row by any of the words, stemmed, best first with a snippet and a score', () => {
      const found = rows('get docs select body match body "when do we deploy" limit 5');
      expect(found.map((r) => r.body)).to.deep.equal(['the deploy runs on fridays']);
      expect(found[0]!.snippet).to.equal('the **deploy** runs on fridays');
      expect(found[0]!._score).to.be.a('number').above(0);
    });

    it('ranks by BM25: more of a rare word ranks higher', () => {
      const found = rows('get docs select title match body "fox"');
      expect(found.map((r) => r.title)).to.deep.equal(['fox', 'cat']);
      expect(found[0]!._score as number).to.be.above(found[1]!._score as number);
      expect(found[1]!.snippet).to.equal('the cat watches the **fox**');
    });

    it('searches one field, or every @text field with *', () => {
      expect(rows('get docs select title match title "fox"').map((r) => r.id)).to.deep.equal([4]);
      expect(rows('get docs select title match * "infra"').map((r) => r.id)).to.deep.equal([2]);
      expect(
        rows('get docs select title match tags "ops"')
          .map((r) => r.id)
          .sort(),
      ).to.deep.equal([1, 2]);
    });

    it('filters before the limit', () => {
      q(
        `insert into docs [${Array.from({ length: 20 }, (_, i) => `{title: "fox ${i}", body: "fox fox fox", year: 2000}`).join(', ')}]`,
      );
      const found = rows('get docs select year match body "fox" where year >= $1 limit 2', 2024);
      expect(found.map((r) => r.id)).to.deep.equal([3]);
      expect(rows('get docs match body "fox" where year = 2000 limit 5')).to.have.length(5);
      expect(q('get docs match body "fox" where year = 2000 count')).to.deep.equal({ count: 20 });
    });

    it('orders by fields when order says so, keeping the scores', () => {
      const found = rows('get docs select year match body "fox" order year desc');
      expect(found.map((r) => r.year)).to.deep.equal([2025, 2023]);
      expect(found.every((r) => typeof r._score === 'number')).to.equal(true);
    });

    it('never errors on what a user types, and answers no rows for no words', () => {
      const hostile = [
        "what's C++ (v2)?",
        '"',
        '""',
        '*',
        'NEAR(a b)',
        'a -b',
        'title:fox',
        '^fox',
        'a AND OR NOT',
        '{x}',
        '(((',
        '🦊',
        '東京',
        'ا',
        'x" OR 1=1 --',
        '\u0000',
        'é́',
        '',
      ];
      for (const text of hostile) {
        expect(() => q('get docs match * $1 limit 3', text), JSON.stringify(text)).to.not.throw();
      }
      expect(q('get docs match * $1', '?!')).to.deep.equal({ rows: [], count: 0 });
      expect(q('get docs match * $1 count', '')).to.deep.equal({ count: 0 });
    });

    it('keeps the index in step with set, put and del', () => {
      q('set docs {body: "now about wolves"} where id = 4');
      expect(rows('get docs select title match body "wolves"').map((r) => r.id)).to.deep.equal([4]);
      expect(rows('get docs select title match body "fox"').map((r) => r.id)).to.deep.equal([3]);
      q('put docs {id: 3, title: "dog", body: "the dog sleeps"}');
      expect(rows('get docs match body "fox"')).to.deep.equal([]);
      q('del docs where id = 4');
      expect(rows('get docs match body "wolves"')).to.deep.equal([]);
    });

    it('indexes the rows there are when a @text field is added', () => {
      q('alter collection docs add note text @text');
      q('set docs {note: "remember the milk"} where id = 1');
      expect(rows('get docs select title match note "milk"').map((r) => r.id)).to.deep.equal([1]);
      q('alter collection docs drop note');
      expect(rows('get docs select title match body "deploy"').map((r) => r.id)).to.deep.equal([1]);
    });

    it('refuses match on a field without @text, naming the ones with it', () => {
      const err = refusal(() => q('get docs match year "x"'));
      expect(err.code).to.equal('invalid_statement');
      expect(err.hint).to.contain('title, body, tags');
      expect(refusal(() => q('get docs match nope "x"')).code).to.equal('unknown_field');
      expect(refusal(() => q('get docs match body 5')).code).to.equal('type_mismatch');
    });
  });

  describe('expiry', () => {
    beforeEach(() => {
      q('create collection memories (text text required @text, tags [text], expires timestamp @ttl(1ms))');
    });

    it('takes a row out of every read the moment it expires, and the sweeper out of the file', async () => {
      q('insert into memories {text: "short lived", tags: ["session"], expires: now() + 300}');
      q('insert into memories {text: "kept for good", tags: ["session"], expires: null}');
      expect(q('get memories where tags has "session" count')).to.deep.equal({ count: 2 });
      expect(rows('get memories select text match text "short"')).to.have.length(1);
      await sleep(350);
      expect(q('get memories where tags has "session" count')).to.deep.equal({ count: 1 });
      expect(rows('get memories select text')).to.deep.equal([{ id: 2, text: 'kept for good' }]);
      expect(rows('get memories match text "short"')).to.deep.equal([]);
      expect(q('set memories {text: "revived"} where true')).to.deep.equal({ count: 1 });
      expect(q('del memories where text = "short lived"')).to.deep.equal({ count: 0 });

      const file = new Database(temp.file('s.fenec'), { readonly: true });
      const stored = () => file.prepare('SELECT count(*) FROM "c_memories"').pluck().get();
      expect(stored()).to.equal(2);
      expect(db.sweepExpired()).to.equal(1);
      expect(stored()).to.equal(1);
      file.close();
    });

    it('sweeps on its own at the interval it is given', async () => {
      db.close();
      db = FenecDatabase.open({ file: temp.file('s.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 50 });
      q('insert into memories {text: "gone soon", expires: now() + 20}');
      await sleep(200);
      const file = new Database(temp.file('s.fenec'), { readonly: true });
      expect(file.prepare('SELECT count(*) FROM "c_memories"').pluck().get()).to.equal(0);
      file.close();
    });

    it('deletes expired rows on compact and counts them', async () => {
      q('insert into memories [{text: "a", expires: now() - 1s}, {text: "b", expires: now() - 1s}, {text: "c"}]');
      expect((q('compact memories') as { count: number }).count).to.equal(2);
      expect(q('get memories count')).to.deep.equal({ count: 1 });
    });

    it('never reads the live-row filter through the index on the field, which serves the sweeper and a where on the field', () => {
      // Between sweeps nearly every row is live: through the index, the newest row of 10 000 sorted all 10 000.
      const plan = (text: string) => db.explain(text).join(' | ');
      expect(plan('get memories select id order id desc limit 1')).to.equal('SCAN c_memories');
      expect(plan('get memories where tags has "x"')).not.to.contain('i.memories.expires');
      expect(plan('get memories where expires > now() limit 3')).to.contain('USING INDEX i.memories.expires');
    });
  });
});
