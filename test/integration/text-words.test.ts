/**
 * Words as people write them, over /query of a real server: a new `@text` field stems English words
 * and leaves stop words out of the query; `@text(exact)` does not stem; a prefix is refused with a hint;
 * a file written before the choice (test/fixtures/layout-1) keeps FTS5's porter and answers as it did.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { query, Sandbox, type ServerProcess } from './processes.js';

const TOKEN = 'text-words-token';
const FIXTURE = new URL('../../../test/fixtures/layout-1/', import.meta.url);

interface Rows {
  readonly rows: Record<string, unknown>[];
}

describe('words as people write them', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;

  async function ok(statement: string, params: unknown[] = [], url = server.url): Promise<Rows> {
    const reply = await query(url, statement, params, TOKEN);
    expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
    return reply.json as Rows;
  }

  async function refused(statement: string, params: unknown[] = []): Promise<Record<string, string>> {
    const reply = await query(server.url, statement, params, TOKEN);
    expect(reply.status, reply.text).to.equal(400);
    return (reply.json as { error: Record<string, string> }).error;
  }

  const ids = (answer: Rows): unknown[] => answer.rows.map((r) => r.id);

  before(async () => {
    server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'w.fenec'), '--http-token', TOKEN]);
    await ok('create collection notes (text text @text, tags [text] @text, vec vector<2> @hnsw(cosine))');
    await ok('create collection words (text text @text(exact))');
    await ok('insert into notes $1', [
      [
        { text: 'the deploy runs on fridays', tags: ['ops'], vec: [1, 0] },
        { text: 'he deploys the service', tags: ['ops'], vec: [0, 1] },
        { text: 'the cat sat on the mat', tags: ['pets'], vec: [0.7, 0.7] },
      ],
    ]);
    await ok('insert into words $1', [[{ text: 'he deploys the service' }, { text: 'the cat' }]]);
  });
  after(() => sandbox.cleanUp());

  it('finds "deploys" for "deployment", and snips the word as written', async () => {
    const answer = await ok('get notes select id match text "deployment" limit 5');
    expect(ids(answer)).to.have.members([1, 2]);
    expect(answer.rows.map((r) => r.snippet)).to.have.members([
      'the **deploy** runs on fridays',
      'he **deploys** the service',
    ]);
  });

  it('answers no row that shares only stop words with the question', async () => {
    const answer = await ok('get notes select id match * $1 limit 5', ['what day is the deploy?']);
    expect(ids(answer)).to.have.members([1, 2]);
    expect(answer.rows.every((r) => (r._score as number) > 0)).to.equal(true);
    expect((await ok('get notes match * "what is the" limit 5')).rows).to.deep.equal([]);
    expect((await ok('get notes match * "what is the" count')) as unknown).to.deep.include({ count: 0 });
  });

  it('fuses stemmed words with the nearest vectors', async () => {
    const answer = await ok('get notes select id match text "deployment" near vec [0.7, 0.7] fuse limit 3');
    expect(ids(answer)).to.have.members([1, 2, 3]);
    const snippets = answer.rows.map((r) => r.snippet);
    expect(snippets).to.include('he **deploys** the service');
    // A question of stop words alone fuses the vectors' ranking only.
    const vectors = await ok('get notes select id match text "is it the" near vec [0.7, 0.7] fuse limit 1');
    expect(ids(vectors)).to.deep.equal([3]);
  });

  it('compares words as written in @text(exact), every word searched', async () => {
    expect(ids(await ok('get words select id match text "deployment" limit 5'))).to.deep.equal([]);
    expect(ids(await ok('get words select id match text "DEPLOYS" limit 5'))).to.deep.equal([1]);
    expect(ids(await ok('get words select id match text "the" limit 5'))).to.have.members([1, 2]);
  });

  it('refuses a prefix, saying to write whole words', async () => {
    const error = await refused('get notes match text $1 limit 5', ['data*']);
    expect(error.code).to.equal('invalid_value');
    expect(error.message).to.equal('match searches whole words; "data*" asks for the words that begin with "data"');
    expect(error.hint).to.match(/^write whole words without "\*"/);
    expect(ids(await ok('get notes select id match text "*deploy*" limit 5'))).to.have.members([1, 2]);
  });

  it("shows each field's tokenizer in schema, and refuses two in one collection", async () => {
    const schema = JSON.stringify(await ok('schema notes'));
    expect(schema).to.include('@text(english)');
    expect(JSON.stringify(await ok('schema words'))).to.include('@text(exact)');
    const error = await refused('create collection mixed (a text @text(exact), b text @text(english))');
    expect(error.code).to.equal('invalid_annotation');
    expect(error.message).to.equal(
      "a collection's @text fields share one tokenizer: mixed.b asks for english, mixed.a for exact",
    );
    const bare = await refused('create collection mixed (a text @text, b text @text(exact))');
    expect(bare.message).to.equal(
      "a collection's @text fields share one tokenizer: mixed.b asks for exact, mixed.a for english",
    );
    expect(bare.hint).to.equal('name the same one on each: @text(english), or @text(exact) on all');
    const added = await refused('alter collection words add title text @text(english)');
    expect(added.message).to.equal(
      "a collection's @text fields share one tokenizer: words.title asks for english, the @text fields of words for exact",
    );
    await ok('alter collection words add title text @text');
    expect(JSON.stringify(await ok('schema words'))).not.to.include('@text(english)');
  });

  describe('a file written before there was a choice', () => {
    let old: ServerProcess;
    before(async () => {
      const file = path.join(sandbox.dir(), 'old.fenec');
      fs.copyFileSync(new URL('notes.fenec', FIXTURE), file);
      old = await sandbox.startServer(['--file', file, '--http-token', TOKEN]);
    });

    it("keeps FTS5's porter and searches every word, as it did", async () => {
      const answers = JSON.parse(fs.readFileSync(new URL('answers.json', FIXTURE), 'utf8')) as { match: Rows };
      const tea = await ok('get notes select id match body "tea" limit 3', [], old.url);
      expect(tea.rows).to.deep.equal(answers.match.rows);
      expect(JSON.stringify(await ok('schema notes', [], old.url))).to.include('@text(porter)');
      // "about" is an English stop word: porter searches it all the same.
      const about = await ok('get notes select id match body "about" count', [], old.url);
      expect(about as unknown).to.deep.include({ count: 59 });
    });

    it('gives a @text field added to it porter too, and makes new collections stem', async () => {
      await ok('alter collection notes add title text @text', [], old.url);
      expect(JSON.stringify(await ok('schema notes', [], old.url))).not.to.include('@text(english)');
      await ok('create collection fresh (text text @text)', [], old.url);
      await ok('insert into fresh {text: "he deploys"}', [], old.url);
      expect(ids(await ok('get fresh select id match text "deployment"', [], old.url))).to.deep.equal([1]);
      expect(ids(await ok('get notes select id match body "tea" limit 3', [], old.url))).to.deep.equal([3, 6, 9]);
    });
  });
});
