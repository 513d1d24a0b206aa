/**
 * Loads into a collection with an `@embed` field, over a real server and the tests' own embedding server: an
 * `insert into C $1` of many rows is written a chunk at a time while the next chunks are embedded (the rows of the
 * first chunks are committed, and readable, while the embedder still works on the last); each text is embedded once,
 * with a bounded number of calls out; a batch whose embedding fails is refused whole, and the answer says how many
 * rows were committed before it. `fenec import` does the same through the server, its progress counting embedded rows.
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbedderRig } from '../../helpers/embedder-rig.js';
import type { EmbeddingServer } from '../../helpers/embedding-server.js';
import { FENEC, type Finished } from '../processes.js';

const DIMS = 16;
const BATCH = 16;
const CONCURRENCY = 2;

const rowOf = (i: number): Record<string, unknown> => ({ title: `row ${i}`, body: `the words of item${i}` });
const textOf = (i: number): string => `row ${i}\n\nthe words of item${i}`;
const ndjson = (rows: readonly unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

/** An answer of the right shape for every call up to `good`, then one of no embeddings (refused as embedder_failed). */
function failingAfter(embedder: EmbeddingServer, good: number): (inputs: string[]) => unknown {
  let calls = 0;
  return (inputs) =>
    ++calls <= good
      ? { data: inputs.map((text, index) => ({ index, embedding: embedder.vectorOf(text) })) }
      : { data: [] };
}

describe('loads that embed: insert into C $1 and fenec import', function () {
  this.timeout(120_000);
  const rig = new EmbedderRig({
    embedder: { dims: DIMS },
    flags: ['--embedder-batch', String(BATCH), '--embedder-concurrency', String(CONCURRENCY)],
  });
  const { q } = rig;
  let n = 0;

  const fresh = async (): Promise<string> => {
    const name = `docs${++n}`;
    const made = await q(
      `create collection ${name} (title text @text, body text, vec vector<${DIMS}> @hnsw(cosine) @embed(title, body))`,
    );
    expect(made.status, made.text).to.equal(200);
    rig.embedder.requests.length = 0;
    return name;
  };
  const count = async (name: string): Promise<number> => (await q(`get ${name} count`)).json.count as number;
  const inputs = (): string[] => rig.embedder.requests.flatMap((r) => r.input);

  before(() => rig.open());
  afterEach(() => (rig.embedder.fault = undefined));
  after(() => rig.close());

  it('writes insert into C $1 a chunk at a time while the next chunks are embedded, each text once', async () => {
    const name = await fresh();
    const rows = Array.from({ length: 800 }, (_, i) => rowOf(i));
    rig.embedder.fault = { kind: 'slow', ms: 40 };
    let answered = false;
    const insert = q(`insert into ${name} $1`, [rows]).finally(() => (answered = true));
    // Counted from another request while the insert runs: rows committed before the embedder is done.
    const seen: { at: number; count: number }[] = [];
    while (!answered) {
      seen.push({ at: performance.now(), count: await count(name) });
      await sleep(15);
    }
    const answer = await insert;
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.json.count).to.equal(800);
    expect(answer.json.ids).to.deep.equal(Array.from({ length: 800 }, (_, i) => i + 1));
    const lastCall = rig.embedder.requests.at(-1)!.at;
    const early = seen.find((s) => s.count > 0);
    expect(early, JSON.stringify(seen)).to.not.equal(undefined);
    expect(early!.count).to.be.below(800);
    // The first chunk was readable before the embedder was asked for the last batch: the writes overlap it.
    expect(early!.at).to.be.below(lastCall);
    // Every text once, in batches of --embedder-batch, never more calls out than --embedder-concurrency.
    expect(inputs()).to.have.length(800);
    expect(new Set(inputs()).size).to.equal(800);
    expect(rig.embedder.requests.every((r) => r.input.length <= BATCH)).to.equal(true);
    expect(rig.embedder.maxInFlight).to.be.at.most(CONCURRENCY);
    const stored = (await q(`get ${name} select vec where id = 601`)).json.rows[0].vec as number[];
    rig.embedder.vectorOf(textOf(600)).forEach((x, i) => expect(stored[i]).to.be.closeTo(x, 1e-6));
  });

  it('refuses the batch whose embedding fails, with the rows before it committed and counted', async () => {
    const name = await fresh();
    rig.embedder.fault = { kind: 'answer', answer: failingAfter(rig.embedder, 20) };
    const refused = await q(`insert into ${name} $1`, [Array.from({ length: 800 }, (_, i) => rowOf(i))]);
    expect(refused.status, refused.text).to.equal(502);
    const error = refused.json.error as { code: string; message: string; committed: number };
    expect(error.code).to.equal('embedder_failed');
    expect(error.committed).to.be.within(1, 20 * BATCH);
    expect(error.message).to.match(new RegExp(`the ${error.committed} rows before it were committed, none after$`));
    expect(await count(name)).to.equal(error.committed);
    // The rows committed are the first ones, in order; nothing from the refused batch on.
    expect((await q(`get ${name} where title = $1 count`, [`row ${error.committed - 1}`])).json.count).to.equal(1);
    expect((await q(`get ${name} where title = $1 count`, [`row ${error.committed}`])).json.count).to.equal(0);
    // A small insert is one statement still: refused whole, nothing committed.
    const small = await q(`insert into ${name} $1`, [[rowOf(900), rowOf(901)]]);
    expect([small.status, small.json.error.committed]).to.deep.equal([502, undefined]);
  });

  it('refuses a chunk with a row the insert refuses, naming the row by its place in the whole list', async () => {
    const name = await fresh();
    const rows: Record<string, unknown>[] = Array.from({ length: 800 }, (_, i) => rowOf(i));
    rows[500] = { ...rowOf(500), title: 5 };
    const refused = await q(`insert into ${name} $1`, [rows]);
    expect(refused.status, refused.text).to.equal(400);
    const error = refused.json.error as { code: string; row: number; committed: number };
    expect([error.code, error.row]).to.deep.equal(['type_mismatch', 500]);
    expect(error.committed).to.be.within(1, 500);
    expect(await count(name)).to.equal(error.committed);
  });

  describe('fenec import', () => {
    const runImport = (args: string[], stdin: string): Promise<Finished> =>
      rig.sandbox.run(
        FENEC,
        ['import', '--url', rig.server.url, '--no-wait', ...args],
        {},
        { timeoutMs: 60_000, stdin },
      );

    it('embeds the rows it loads, and counts them as embedded', async () => {
      const name = await fresh();
      const run = await runImport(
        ['--batch-bytes', '40000', name, '-'],
        ndjson(Array.from({ length: 3000 }, (_, i) => rowOf(i))),
      );
      expect(run.code, run.stderr).to.equal(0);
      const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as Record<string, number>;
      expect(summary).to.include({ rows: 3000, embedded: 3000 });
      expect(run.stderr).to.match(new RegExp(`3 000 rows embedded into ${name} in`));
      expect(await count(name)).to.equal(3000);
      expect(new Set(inputs()).size).to.equal(3000);
      expect(inputs()).to.have.length(3000);
    });

    it('stops at the batch whose embedding fails, naming its first line and what was committed', async () => {
      const name = await fresh();
      // About 1 000 rows a request: the failure falls inside the second.
      rig.embedder.fault = { kind: 'answer', answer: failingAfter(rig.embedder, 90) };
      const run = await runImport(
        ['--batch-bytes', '40000', name, '-'],
        ndjson(Array.from({ length: 3000 }, (_, i) => rowOf(i))),
      );
      expect(run.code, run.stdout).to.equal(1);
      const refusal = JSON.parse(run.stderr.trim().split('\n').at(-1)!) as {
        error: { code: string; message: string };
        line: number;
        committed: number;
      };
      expect(refusal.error.code).to.equal('embedder_failed');
      expect(refusal.committed).to.be.above(1000);
      expect(refusal.committed).to.be.at.most(90 * BATCH);
      expect(await count(name)).to.equal(refusal.committed);
      // One row a line: the refused chunk starts on the line after the last row committed.
      expect(refusal.line).to.equal(refusal.committed + 1);
      expect(refusal.error.message).to.match(
        /^the batch of lines \d+–\d+: the embedder failed: it answered 0 embeddings/,
      );
    });
  });
});
