/**
 * The embedder's faults over real HTTP /query: a slow embedder, 429 then 200, 500, vectors of the wrong dimension,
 * malformed JSON, a refused connection, a batch answered out of order. Each write that fails is refused whole with
 * its code and status, and nothing is written.
 */
import { expect } from 'chai';
import { EmbedderRig } from '../../helpers/embedder-rig.js';

const DIMS = 16;

describe('the embedder’s faults (/query)', function () {
  this.timeout(60_000);
  const rig = new EmbedderRig({
    embedder: { dims: DIMS },
    flags: ['--embedder-timeout', '400ms', '--embedder-retries', '2', '--embedder-total-timeout', '3s'],
  });
  const { q } = rig;
  let rows = 0;

  before(async () => {
    await rig.open();
    const made = await q(`create collection notes (title text, vec vector<${DIMS}> @hnsw(cosine) @embed(title))`);
    expect(made.status, made.text).to.equal(200);
  });
  afterEach(() => {
    rig.embedder.fault = undefined;
  });
  after(() => rig.close());

  /** A write refused with `status` and `code`, the collection's rows as they were. */
  async function refusedWrite(status: number, code: string): Promise<{ message: string; retryAfter?: string }> {
    const reply = await q('insert into notes [{title: "one"}, {title: "two"}]');
    expect(reply.status, reply.text).to.equal(status);
    expect(reply.json.error.code).to.equal(code);
    expect((await q('get notes count')).json.count, 'nothing was written').to.equal(rows);
    const near = await q('get notes near vec "a query not cached yet, for this fault" limit 1');
    expect(near.json.error?.code, 'a read by words is refused alike').to.equal(code);
    return { message: reply.json.error.message, retryAfter: reply.headers['retry-after'] as string | undefined };
  }

  async function writes(): Promise<void> {
    const reply = await q('insert into notes [{title: "one"}, {title: "two"}]');
    expect(reply.status, reply.text).to.equal(200);
    rows += 2;
  }

  it('a slow embedder, past every try: 503 embedder_unavailable with Retry-After', async () => {
    rig.embedder.fault = { kind: 'slow', ms: 2_000 };
    const { message, retryAfter } = await refusedWrite(503, 'embedder_unavailable');
    expect(message).to.include('no answer from');
    expect(retryAfter).to.match(/^\d+$/);
  });

  it('429 then 200: waits the Retry-After and writes', async () => {
    rig.embedder.fault = { kind: 'status', status: 429, times: 1, retryAfter: '1' };
    const started = performance.now();
    await writes();
    expect(performance.now() - started).to.be.at.least(950);
  });

  it('500 past the retries: 502 embedder_failed quoting it', async () => {
    rig.embedder.fault = {
      kind: 'status',
      status: 500,
      times: 100,
      body: '{"error": {"message": "CUDA out of memory"}}',
    };
    const { message } = await refusedWrite(502, 'embedder_failed');
    expect(message).to.include('CUDA out of memory');
  });

  it('vectors of the wrong dimension: 502 embedder_failed naming both', async () => {
    rig.embedder.fault = { kind: 'wrong-dimension', dims: DIMS + 1 };
    const { message } = await refusedWrite(502, 'embedder_failed');
    expect(message).to.include(`has ${DIMS + 1} components where the model made ${DIMS}`);
  });

  it('malformed JSON: 502 embedder_failed', async () => {
    rig.embedder.fault = { kind: 'malformed' };
    const { message } = await refusedWrite(502, 'embedder_failed');
    expect(message).to.include('not JSON');
  });

  it('a batch answered out of order: each row gets its own text’s vector', async () => {
    rig.embedder.fault = { kind: 'out-of-order' };
    const reply = await q('insert into notes $1', [[{ title: 'first' }, { title: 'second' }, { title: 'third' }]]);
    expect(reply.status, reply.text).to.equal(200);
    rows += 3;
    const stored = await q('get notes select title, vec where id in $1', [reply.json.ids]);
    for (const row of stored.json.rows as { title: string; vec: number[] }[]) {
      const expected = rig.embedder.vectorOf(row.title);
      expect(
        row.vec.every((x, i) => Math.abs(x - expected[i]!) < 1e-6),
        row.title,
      ).to.equal(true);
    }
  });

  it('a refused connection: 503 embedder_unavailable with Retry-After', async () => {
    await rig.embedder.close();
    const { message, retryAfter } = await refusedWrite(503, 'embedder_unavailable');
    expect(message).to.include('ECONNREFUSED');
    expect(retryAfter).to.match(/^\d+$/);
  });
});
