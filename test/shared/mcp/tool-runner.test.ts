import { expect } from 'chai';
import { FenecDatabase, type ExecuteOptions } from '../../../node/database.js';
import { parsePolicy } from '../../../shared/auth/policy.js';
import { printStatement } from '../../../shared/fenecql/print.js';
import { createMemories } from '../../../shared/mcp/memory.js';
import { ToolRunner, type ToolCaller, type ToolOutcome } from '../../../shared/mcp/tool-runner.js';
import { bm25Term } from '../../helpers/bm25.js';
import { expectFitsOutputSchema } from '../../helpers/tool-output.js';
import { tempDir } from '../../helpers/temp.js';

const SEED_MEMORIES =
  'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))';
const SERVER: ToolCaller<ExecuteOptions> = { options: {}, scoped: false };
const POLICY = parsePolicy(
  'memories  read,write  where owner = $jwt.sub\ndocs  read  where year >= 2024\n',
  'policy.txt',
);
const scoped = (sub: string): ToolCaller<ExecuteOptions> => ({
  options: { jwt: { sub }, policy: POLICY },
  scoped: true,
});

describe('ToolRunner', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let runner: ToolRunner<ExecuteOptions>;
  const call = (name: string, args: unknown, caller = SERVER): ToolOutcome =>
    runner.call(runner.tool(name)!, args, caller);
  const ok = (name: string, args: unknown, caller = SERVER): any => {
    const outcome = call(name, args, caller);
    if (!outcome.ok) expect.fail(`${name} ${JSON.stringify(args)}: ${outcome.error.code}: ${outcome.error.message}`);
    expect(JSON.parse(outcome.text)).to.deep.equal(outcome.answer);
    expectFitsOutputSchema(name, outcome.answer);
    return outcome.answer;
  };
  const refused = (name: string, args: unknown, caller = SERVER) => {
    const outcome = call(name, args, caller);
    if (outcome.ok) expect.fail(`${name} ${JSON.stringify(args)} answered ${outcome.text}`);
    return outcome;
  };

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('t.fenec'), readOnly: false, program: 'test' });
    db.execute(
      'create collection docs (title text @text, body text @text, year int @sorted, tags [text], emb vector<3> @hnsw(cosine))',
    );
    db.execute(
      'insert into docs [{title: "fox", body: "the quick brown fox", year: 2023, emb: [1, 0, 0]}, {title: "dog", body: "a lazy dog", year: 2024, emb: [0, 1, 0]}, {title: "cat", body: "the cat watches the fox", year: 2025, emb: [0, 0, 1]}]',
    );
    runner = new ToolRunner<ExecuteOptions>(db, { write: true, memory: 'memories', readOnly: false });
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  describe('search', () => {
    it("answers the seed's call with the seed's answer, scored by BM25 over the three rows", () => {
      const answer = ok('search', { collection: 'docs', text: 'fox', filter: 'year >= $1', params: [2024] });
      expect(answer.count).to.equal(1);
      const { _score, ...row } = answer.rows[0];
      expect(row).to.deep.equal({
        id: 3,
        title: 'cat',
        body: 'the cat watches the fox',
        year: 2025,
        tags: null,
        snippet: 'the cat watches the **fox**',
      });
      // fox is in 2 of the 3 rows; this row holds it once in 6 words of title and body, the rows 15 words.
      expect(_score).to.be.closeTo(bm25Term(3, 2, 1, 6, 15 / 3), 1e-9);
      expect(Object.keys(answer.rows[0])).to.deep.equal(['id', 'title', 'body', 'year', 'tags', 'snippet', '_score']);
    });

    it('finds by vector, leaving vector fields out of the rows, and keeps them when fields names them', () => {
      const near = ok('search', { collection: 'docs', vector: [0.9, 0.1, 0], limit: 1 });
      expect(near.rows.map((r: any) => r.title)).to.deep.equal(['fox']);
      expect(near.rows[0]).not.to.have.property('emb');
      expect(
        ok('search', { collection: 'docs', vector: [1, 0, 0], limit: 1, fields: ['title', 'emb'] }).rows[0],
      ).to.deep.include({ title: 'fox', emb: [1, 0, 0] });
    });

    it('fuses words and a vector', () => {
      expect(
        ok('search', { collection: 'docs', text: 'dog', vector: [0, 0.1, 1], limit: 2 }).rows.map((r: any) => r.title),
      ).to.have.members(['dog', 'cat']);
    });

    it('refuses an argument it does not take, naming the one meant (400)', () => {
      const { error } = refused('search', { collection: 'docs', txt: 'fox' });
      expect([error.code, error.status]).to.deep.equal(['invalid_argument', 400]);
      expect(error.message).to.contain('did you mean text?');
    });

    it('refuses arguments of the wrong type (400)', () => {
      for (const args of [
        { collection: 7 },
        { collection: 'docs', limit: 2.5 },
        { collection: 'docs', limit: 0 },
        { collection: 'docs', vector: ['a'] },
        { collection: 'docs', fields: 'title' },
      ]) {
        expect(refused('search', args).error.code, JSON.stringify(args)).to.equal('invalid_argument');
      }
      expect(refused('search', [1]).error.code).to.equal('invalid_argument');
    });

    it("refuses a vector of another length than the field's, naming the field's (400)", () => {
      const { error } = refused('search', { collection: 'docs', vector: [1, 0] });
      expect([error.code, error.status]).to.deep.equal(['vector_length', 400]);
      expect(error.message).to.contain('vector<3>').and.contain('emb');
    });

    it('refuses a filter with a second statement (400)', () => {
      const { error } = refused('search', {
        collection: 'docs',
        text: 'fox',
        filter: 'year >= $1; del docs where true',
        params: [0],
      });
      expect([error.code, error.status]).to.deep.equal(['multiple_statements', 400]);
      expect(db.execute('get docs count')).to.deep.equal({ count: 3 });
    });

    it('refuses a filter with a parenthesis closing on the statement around it (400)', () => {
      for (const filter of ['year >= $1) or (true', 'true) limit 100 --', 'year > 1 limit 1', 'year > 1 order title']) {
        const { error } = refused('search', { collection: 'docs', text: 'fox', filter, params: [0] });
        expect(error.status, filter).to.equal(400);
        expect(error.code, filter).to.equal('syntax_error');
      }
    });

    it('refuses a filter that uses a parameter params does not give (400)', () => {
      expect(
        refused('search', { collection: 'docs', text: 'fox', filter: 'year >= $2', params: [1] }).error.code,
      ).to.equal('missing_parameter');
    });

    it("checks names against FenecQL's rule (400)", () => {
      for (const args of [{ collection: 'docs; drop' }, { collection: 'docs', fields: ['title', 'a b'] }]) {
        expect(refused('search', args).error.code).to.equal('invalid_name');
      }
    });

    it('answers an unknown collection with 404, as /query does', () => {
      expect(refused('search', { collection: 'nope', text: 'x' }).error.status).to.equal(404);
    });
  });

  describe('query', () => {
    it('runs a read with params, vectors left out even under select *', () => {
      expect(ok('query', { statement: 'get docs select * where year = $1', params: [2024] }).rows).to.deep.equal([
        { id: 2, title: 'dog', body: 'a lazy dog', year: 2024, tags: null },
      ]);
      expect(ok('query', { statement: 'get docs select title, emb where id = 1' }).rows).to.deep.equal([
        { id: 1, title: 'fox' },
      ]);
    });

    it('says that a vector field its select names is left out, and that include_vectors keeps it', () => {
      for (const statement of [
        'get docs select title, emb where id = 1',
        'get docs select title, emb where year >= 2023',
      ]) {
        const answer = ok('query', { statement });
        expect(answer.rows[0]).to.deep.equal({ id: 1, title: 'fox' });
        expect(answer.note).to.be.a('string').that.contains('emb').and.contains('"include_vectors": true');
      }
      const kept = ok('query', { statement: 'get docs select title, emb where id = 1', include_vectors: true });
      expect(kept).to.deep.equal({ rows: [{ id: 1, title: 'fox', emb: [1, 0, 0] }], count: 1 });
      expect(ok('query', { statement: 'get docs select title where id = 1' })).not.to.have.property('note');
      expect(ok('query', { statement: 'get docs where id = 1' })).not.to.have.property('note');
    });

    it('keeps vectors with include_vectors', () => {
      expect(ok('query', { statement: 'get docs where id = 1', include_vectors: true }).rows[0].emb).to.deep.equal([
        1, 0, 0,
      ]);
      expect(
        ok('query', { statement: 'get docs select emb where id = 1', include_vectors: true }).rows[0],
      ).to.deep.equal({ id: 1, emb: [1, 0, 0] });
    });

    it('answers count and schema', () => {
      expect(ok('query', { statement: 'get docs where year > $1 count', params: [2023] })).to.deep.equal({ count: 2 });
      expect(ok('query', { statement: 'schema docs' }).collections[0].name).to.equal('docs');
    });

    it('refuses a statement that writes or changes a schema (403), and runs none of it', () => {
      for (const statement of [
        'del docs where true',
        'insert into docs {title: "x"}',
        'drop collection docs',
        'compact',
      ]) {
        const { error } = refused('query', { statement });
        expect([error.code, error.status], statement).to.deep.equal(['forbidden', 403]);
      }
      expect(db.execute('get docs count')).to.deep.equal({ count: 3 });
    });

    it('names the kind of statement it refuses, with its article', () => {
      expect(refused('query', { statement: 'insert into docs {title: "x"}' }).error.message).to.match(
        /this statement is an insert$/,
      );
      expect(refused('query', { statement: 'explain get docs' }).error.message).to.match(
        /this statement is an explain$/,
      );
      expect(refused('query', { statement: 'compact' }).error.message).to.match(/this statement is a compact$/);
    });
  });

  describe('schema', () => {
    it('lists the collections with their fields', () => {
      expect(ok('schema', {}).collections.map((c: any) => c.name)).to.deep.equal(['docs']);
      expect(ok('schema', { collection: 'docs' }).collections[0].fields.map((f: any) => f.name)).to.deep.equal([
        'id',
        'title',
        'body',
        'year',
        'tags',
        'emb',
      ]);
    });

    it('lists for a scoped token only what its policy lets it read, counting no rows', () => {
      db.execute(SEED_MEMORIES);
      db.execute('create collection secrets (x text)');
      const answer = ok('schema', {}, scoped('alice'));
      expect(answer.collections.map((c: any) => c.name)).to.deep.equal(['docs', 'memories']);
      expect(JSON.stringify(answer)).not.to.match(/"count"|"rows"/);
    });
  });

  describe('write', () => {
    it('inserts one row or many, puts, sets and deletes', () => {
      expect(ok('write', { collection: 'docs', insert: { title: 'owl', year: 2026, tags: ['bird'] } })).to.deep.equal({
        count: 1,
        ids: [4],
      });
      expect(
        ok('write', { collection: 'docs', insert: [{ title: 'a' }, { title: 'b', emb: [0, 1, 1] }] }),
      ).to.deep.equal({ count: 2, ids: [5, 6] });
      expect(ok('write', { collection: 'docs', put: { id: 5, title: 'A', year: 1999 } })).to.deep.equal({
        count: 1,
        ids: [5],
      });
      expect(
        ok('write', { collection: 'docs', set: { year: 2000 }, filter: 'title = $1', params: ['A'] }),
      ).to.deep.equal({ count: 1 });
      expect(ok('write', { collection: 'docs', del: true, filter: 'year < $1', params: [2001] })).to.deep.equal({
        count: 1,
      });
      expect(db.execute('get docs select title order id')).to.deep.include({ count: 5 });
    });

    it('binds every value as a parameter: text that looks like FenecQL stays text', () => {
      ok('write', { collection: 'docs', insert: { title: '"}); drop collection docs; --' } });
      expect((db.execute('get docs where id = 4') as any).rows[0].title).to.equal('"}); drop collection docs; --');
    });

    it('refuses a call with no verb or two, a set or del without a filter, and a filter on insert', () => {
      for (const args of [
        { collection: 'docs' },
        { collection: 'docs', insert: {}, del: true, filter: 'true' },
        { collection: 'docs', del: true },
        { collection: 'docs', set: { year: 1 } },
        { collection: 'docs', insert: { title: 'x' }, filter: 'true' },
        { collection: 'docs', del: false, filter: 'true' },
      ]) {
        expect(refused('write', args).error.code, JSON.stringify(args)).to.equal('invalid_argument');
      }
    });

    it('inserts more rows than parameters there are ($99), all of them', () => {
      const rows = Array.from({ length: 60 }, (_, i) => ({ title: `r${i}`, year: i, tags: ['a', `${i}`] }));
      expect(ok('write', { collection: 'docs', insert: rows }).count).to.equal(60);
      expect((db.execute('get docs where year = 59 and tags has "59"') as any).rows[0].title).to.equal('r59');
    });

    it('refuses a field name that is not a name', () => {
      expect(refused('write', { collection: 'docs', insert: { 'title) values': 'x' } }).error.code).to.equal(
        'invalid_name',
      );
    });

    it('never builds a schema change: a scoped token is held to its grants (403)', () => {
      const { error } = refused('write', { collection: 'docs', insert: { title: 'x', year: 2030 } }, scoped('alice'));
      expect([error.code, error.status]).to.deep.equal(['forbidden', 403]);
    });
  });

  describe('memory', () => {
    it('makes the collection at the first remember exactly as the seed writes it, with the vector field of the first vector', () => {
      expect(
        ok('remember', { text: 'the deploy runs on fridays', tags: ['ops'], vector: [0.9, 0.1, 0] }),
      ).to.deep.equal({ count: 1, ids: [1] });
      const seed = db.execute('schema memories');
      const temp2 = tempDir();
      const other = FenecDatabase.open({ file: temp2.file('o.fenec'), readOnly: false, program: 'test' });
      other.execute(SEED_MEMORIES);
      // As the seed writes it; the index state (schema's `index`) differs by the memory held.
      const withoutIndex = (answer: any): unknown => ({
        collections: answer.collections.map((c: any) => ({ ...c, fields: c.fields.map(({ index, ...f }: any) => f) })),
      });
      expect(withoutIndex(seed)).to.deep.equal(withoutIndex(other.execute('schema memories')));
      expect((seed as any).collections[0].fields.at(-1).index).to.deep.equal({ rows: 1, pending: 0, building: false });
      other.close();
      temp2.remove();
      expect(printStatement(createMemories('memories', 3))).to.equal(SEED_MEMORIES);
    });

    it('makes it without a vector field, and adds one at the first memory that brings a vector', () => {
      ok('remember', { text: 'the deploy runs on fridays', tags: ['ops'] });
      expect((db.execute('schema memories') as any).collections[0].fields.map((f: any) => f.name)).to.deep.equal([
        'id',
        'text',
        'tags',
        'owner',
        'at',
        'expires',
      ]);
      ok('remember', { text: 'staging is in eu-west-1', tags: ['ops'], vector: [0, 0.2, 1] });
      expect((db.execute('schema memories') as any).collections[0].fields.at(-1)).to.deep.include({
        name: 'vector',
        type: 'vector<3>',
        annotations: ['@hnsw(cosine)'],
      });
      expect(refused('remember', { text: 'x', vector: [1, 2] }).error.code).to.equal('vector_length');
    });

    it("runs the seed's scenario: remember, recall by words, words and vector, tag, latest first; forget", () => {
      ok('remember', { text: 'the deploy runs on fridays', tags: ['ops'], vector: [0.9, 0.1, 0] });
      ok('remember', { text: 'staging is in eu-west-1', tags: ['ops'], vector: [0, 0.2, 1] });
      ok('remember', { text: 'the user is debugging the login page', tags: ['session'], expires_in: '10s' });
      expect(ok('recall', { text: 'when do we deploy' }).rows[0].text).to.equal('the deploy runs on fridays');
      expect(ok('recall', { text: 'which region', vector: [0, 0.1, 1] }).rows[0].text).to.equal(
        'staging is in eu-west-1',
      );
      expect(ok('recall', { tags: ['session'] }).rows.map((r: any) => r.text)).to.deep.equal([
        'the user is debugging the login page',
      ]);
      const latest = ok('recall', {});
      expect(latest.rows[0].text).to.equal('the user is debugging the login page');
      expect(Object.keys(latest.rows[0])).to.deep.equal(['id', 'text', 'tags', 'at']);
      expect((db.execute('get memories select expires where id = 3') as any).rows[0].expires).to.be.a('string');
      expect(ok('forget', { id: 1 })).to.deep.equal({ count: 1 });
      expect(ok('forget', { id: 1 })).to.deep.equal({ count: 0 });
      expect(ok('recall', { text: 'when do we deploy' }).rows).to.deep.equal([]);
    });

    it('recalls nothing, and forgets nothing, before the first memory', () => {
      expect(ok('recall', { text: 'anything' })).to.deep.equal({ rows: [], count: 0 });
      expect(ok('forget', { id: 1 })).to.deep.equal({ count: 0 });
    });

    it('refuses an expires_in that is not a duration', () => {
      expect(refused('remember', { text: 'x', expires_in: '10 minutes' }).error.code).to.equal('invalid_argument');
    });

    it('tells a scoped token the statement the server token must run, and makes nothing', () => {
      const { error } = refused('remember', { text: 'x', vector: [1, 0, 0] }, scoped('alice'));
      expect([error.code, error.status]).to.deep.equal(['forbidden', 403]);
      expect(error.message).to.contain(SEED_MEMORIES);
      expect((db.execute('schema') as any).collections.map((c: any) => c.name)).to.deep.equal(['docs']);
    });

    it("keeps each token's memories its own: owner filled from sub, recall and forget see only their own", () => {
      db.execute(SEED_MEMORIES);
      ok('remember', { text: 'alice likes tabs', tags: ['prefs'] }, scoped('alice'));
      ok('remember', { text: 'bob likes spaces', tags: ['prefs'] }, scoped('bob'));
      expect((db.execute('get memories select owner order id') as any).rows.map((r: any) => r.owner)).to.deep.equal([
        'alice',
        'bob',
      ]);
      expect(ok('recall', { tags: ['prefs'] }, scoped('alice')).rows.map((r: any) => r.text)).to.deep.equal([
        'alice likes tabs',
      ]);
      expect(ok('recall', { text: 'likes' }, scoped('bob')).rows.map((r: any) => r.text)).to.deep.equal([
        'bob likes spaces',
      ]);
      expect(ok('forget', { id: 1 }, scoped('bob'))).to.deep.equal({ count: 0 });
      expect(ok('forget', { id: 1 }, scoped('alice'))).to.deep.equal({ count: 1 });
    });

    it('holds search and query to the policy, as /query is', () => {
      expect(
        ok('search', { collection: 'docs', text: 'fox' }, scoped('alice')).rows.map((r: any) => r.title),
      ).to.deep.equal(['cat']);
      expect(ok('query', { statement: 'get docs count' }, scoped('alice'))).to.deep.equal({ count: 2 });
      db.execute('create collection secrets (x text)');
      const { error } = refused('query', { statement: 'get secrets' }, scoped('alice'));
      expect(error.status).to.equal(404);
    });
  });

  describe('bounds', () => {
    const wide = 'word '.repeat(150);
    beforeEach(() => {
      const rows = Array.from({ length: 150 }, (_, i) => ({ title: `t${i}`, body: `${wide}${i}`, year: 1900 + i }));
      ok('write', { collection: 'docs', insert: rows.slice(0, 90) });
      ok('write', { collection: 'docs', insert: rows.slice(90) });
    });

    it('refuses 101 rows whole (413) with the rows found and a narrower call that fits', () => {
      const outcome = refused('query', { statement: 'get docs select title where year >= $1', params: [1900] });
      if (outcome.ok) return;
      expect([outcome.error.code, outcome.error.status]).to.deep.equal(['answer_too_large', 413]);
      expect(outcome.error.message).to.contain('153 rows').and.contain('100 rows');
      expect(outcome.details).to.deep.include({ rows: 153, bound: { rows: 100, bytes: 65536 } });
      const next = (outcome.details as any).try;
      expect(next.arguments.statement).to.equal('get docs select title where year >= $1 limit 100');
      expect(ok(next.name, next.arguments).count).to.equal(100);
    });

    it('refuses an answer past 64 KB whole (413) with its bytes, and the same search with a limit and fields that fits', () => {
      const outcome = refused('search', { collection: 'docs', text: 'word', limit: 100 });
      if (outcome.ok) return;
      expect(outcome.error.code).to.equal('answer_too_large');
      expect((outcome.details as any).bytes).to.be.above(65536);
      expect(outcome.error.message).to.match(/\d[\d ]* bytes in 100 rows/);
      const next = (outcome.details as any).try;
      expect(next.name).to.equal('search');
      expect(next.arguments).to.deep.include({ collection: 'docs', text: 'word' });
      expect(next.arguments.fields).to.be.an('array').that.does.not.include('body');
      const answer = ok(next.name, next.arguments);
      expect(Buffer.byteLength(JSON.stringify(answer))).to.be.at.most(65536);
      expect(outcome.error.hint).to.contain('"limit":');
    });

    it('says that the call which fits pages (its answer carries next_cursor), and gives no figure it has not got', () => {
      const outcome = refused('query', { statement: 'get docs select title where year >= $1', params: [1900] });
      if (outcome.ok) return;
      expect(outcome.error.hint).to.contain('next_cursor').and.contain('cursor');
      expect(outcome.details).to.have.property('rows', 153);
      expect(outcome.details).not.to.have.property('bytes');
      // The call it names, then its next_cursor, read every row.
      const next = (outcome.details as any).try;
      const titles: string[] = [];
      let page = ok(next.name, next.arguments);
      titles.push(...page.rows.map((r: any) => r.title));
      while (page.next_cursor !== undefined) {
        page = ok(next.name, { ...next.arguments, cursor: page.next_cursor });
        titles.push(...page.rows.map((r: any) => r.title));
      }
      expect(new Set(titles).size).to.equal(153);
    });

    it('answers 100 rows and up to 64 KB', () => {
      expect(ok('query', { statement: 'get docs select title limit 100' }).count).to.equal(100);
    });

    it('refuses 65 KB within the row bound', () => {
      const outcome = refused('query', { statement: 'get docs where year >= 1900 limit 95' });
      expect(outcome.error.code).to.equal('answer_too_large');
    });
  });
});
