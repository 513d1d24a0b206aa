/**
 * `@embed` fields and `near` with words over real HTTP /query, against the tests' own embedding server (its requests
 * counted, its vectors known): what is embedded, when, and what is not; the catalogue's model; the refusals.
 */
import { expect } from 'chai';
import { EmbedderRig } from '../../helpers/embedder-rig.js';
import { startEmbeddingServer } from '../../helpers/embedding-server.js';

const DIMS = 16;
const NOTES = `create collection notes (title text @text, body text @text, vec vector<${DIMS}> @hnsw(cosine) @embed(title, body))`;

function close(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => Math.abs(x - b[i]!) < 1e-6);
}

describe('@embed fields and near with words (/query)', function () {
  this.timeout(60_000);
  const rig = new EmbedderRig({ embedder: { dims: DIMS, maxInputTokens: 20 } });
  const { q } = rig;
  const calls = (): string[][] => rig.embedder.requests.map((r) => r.input);
  const vecOf = async (id: number): Promise<number[] | null> =>
    (await q('get notes select vec where id = $1', [id])).json.rows[0].vec;

  beforeEach(async () => {
    await rig.open();
    expect((await q(NOTES)).status).to.equal(200);
    rig.embedder.requests.length = 0;
  });
  afterEach(() => rig.close());

  it('records the model in the catalogue, as schema shows it', async () => {
    const fields = (await q('schema notes')).json.collections[0].fields;
    expect(fields.find((f: { name: string }) => f.name === 'vec').annotations).to.deep.equal([
      '@hnsw(cosine)',
      '@embed(title, body, model = "fenec-test-embed")',
    ]);
  });

  it('embeds each row written without its vector: the texts of its fields, joined, in one call per statement', async () => {
    expect((await q('insert into notes {title: "deploy", body: "the deploy runs on fridays"}')).json.ids).to.deep.equal(
      [1],
    );
    expect((await q('insert into notes [{title: "cats"}, {body: "dogs bark"}, {}]')).json.ids).to.deep.equal([2, 3, 4]);
    expect((await q('insert into notes $1', [[{ title: 'a bulk row' }]])).json.ids).to.deep.equal([5]);
    expect((await q('put notes {id: 9, title: "put row"}')).status).to.equal(200);
    expect(calls()).to.deep.equal([
      ['deploy\n\nthe deploy runs on fridays'],
      ['cats', 'dogs bark'],
      ['a bulk row'],
      ['put row'],
    ]);
    expect(close((await vecOf(1))!, rig.embedder.vectorOf('deploy\n\nthe deploy runs on fridays'))).to.equal(true);
    expect(await vecOf(4), 'a row with none of the texts has no vector').to.equal(null);
  });

  it('keeps a vector the row brings (null too), calling nothing', async () => {
    const own = Array.from({ length: DIMS }, (_, i) => (i === 0 ? 1 : 0));
    await q('insert into notes {title: "mine", vec: $1}', [own]);
    await q('insert into notes $1', [[{ title: 'none', vec: null }]]);
    expect(calls()).to.deep.equal([]);
    expect(await vecOf(1)).to.deep.equal(own);
    expect(await vecOf(2)).to.equal(null);
  });

  it('embeds again on a set that changes the texts, and not on one that leaves them as they were', async () => {
    await q('insert into notes [{title: "one", body: "first"}, {title: "two", body: "second"}]');
    rig.embedder.requests.length = 0;
    expect((await q('set notes {body: "first"} where id = 1')).json).to.deep.equal({ count: 1 });
    expect((await q('set notes {title: "two"} where true')).json).to.deep.equal({ count: 2 });
    expect(calls(), 'unchanged texts embed nothing').to.deep.equal([['two\n\nfirst']]);
    expect(close((await vecOf(1))!, rig.embedder.vectorOf('two\n\nfirst'))).to.equal(true);
    expect(close((await vecOf(2))!, rig.embedder.vectorOf('two\n\nsecond'))).to.equal(true);
  });

  it('finds rows by words: near vec "…", near vec $1, inside fuse, the query embedded once (cached)', async () => {
    await q(
      'insert into notes [{title: "deploy", body: "the deploy runs on fridays"}, {title: "cats", body: "cats sleep"}]',
    );
    rig.embedder.requests.length = 0;
    const near = await q('get notes select title near vec "when do we ship?" limit 1');
    expect(near.json.rows.map((r: { title: string }) => r.title)).to.deep.equal(['deploy']);
    const again = await q('get notes select title near vec $1 limit 1', ['when do we ship?']);
    expect(again.json.rows[0].title).to.equal('deploy');
    const fused = await q('get notes select title match * "cats" near vec "when do we ship?" fuse limit 2');
    expect(fused.json.rows.map((r: { title: string }) => r.title)).to.have.members(['deploy', 'cats']);
    expect(calls(), 'one call for the three reads').to.deep.equal([['when do we ship?']]);
    const words = await q('get notes select title match * "when do we ship?" limit 2');
    expect(words.json.rows, 'BM25 alone shares no word with it').to.deep.equal([]);
  });

  it('refuses an @embed of a field that is missing or not text, and dropping a field another embeds', async () => {
    const unknown = await q(`create collection a (t text, v vector<${DIMS}> @embed(title))`);
    expect(unknown.json.error.code).to.equal('unknown_field');
    expect(unknown.json.error.message).to.include('a.v embeds title');
    const notText = await q(`create collection b (n int, v vector<${DIMS}> @embed(n))`);
    expect(notText.json.error.code).to.equal('invalid_annotation');
    const wrongDims = await q('create collection c (t text, v vector<8> @embed(t))');
    expect(wrongDims.json.error.code).to.equal('embedder_mismatch');
    expect(wrongDims.json.error.message).to.include(`makes vectors of ${DIMS} dimensions`);
    const drop = await q('alter collection notes drop body');
    expect(drop.json.error.message).to.include('notes.vec embeds body');
    const onText = await q('create collection d (t text @embed(t))');
    expect(onText.json.error.code).to.equal('invalid_annotation');
  });

  it("refuses an input past the model's length naming its row and field, writing nothing", async () => {
    const long = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
    const refused = await q('insert into notes [{title: "short"}, {title: $1}]', [long]);
    expect(refused.status, refused.text).to.equal(502);
    expect(refused.json.error.code).to.equal('embedder_failed');
    expect(refused.json.error.message).to.match(/^row 1, field vec: .*longer than the model takes/);
    expect((await q('get notes count')).json.count).to.equal(0);
  });

  it('refuses an @embed statement on a server without an embedder; writes that bring their vectors still run', async () => {
    await rig.sandbox.kill(rig.server.child);
    await rig.start(null);
    const write = await q('insert into notes {title: "no embedder"}');
    expect(write.status).to.equal(409);
    expect(write.json.error.code).to.equal('embedder_missing');
    expect(write.json.error.hint).to.include('--embedder-url');
    const near = await q('get notes near vec "words" limit 1');
    expect(near.json.error.code).to.equal('embedder_missing');
    const own = Array.from({ length: DIMS }, () => 0.25);
    expect((await q('insert into notes {title: "mine", vec: $1}', [own])).status).to.equal(200);
    expect((await q('create collection e (t text, v vector<4> @embed(t))')).json.error.code).to.equal(
      'embedder_missing',
    );
    expect((await q('create collection f (t text, v vector<4> @embed(t, model = "named"))')).status).to.equal(200);
  });

  it('refuses a field made with another model, naming both', async () => {
    await rig.sandbox.kill(rig.server.child);
    const other = await startEmbeddingServer({ dims: DIMS, model: 'another-model' });
    try {
      await rig.start(other);
      for (const statement of ['insert into notes {title: "x"}', 'get notes near vec "x" limit 1']) {
        const refused = await q(statement);
        expect(refused.status, refused.text).to.equal(409);
        expect(refused.json.error.code).to.equal('embedder_mismatch');
        expect(refused.json.error.message).to.include('fenec-test-embed').and.to.include('another-model');
      }
      expect(other.requests).to.have.length(1);
    } finally {
      await other.close();
    }
  });
});
