/**
 * `alter collection C embed F` over a real server and the tests' own embedding server: the vectors of the rows that
 * have none are made in the background, their progress in `schema`; the server killed with SIGKILL part way and
 * started again goes on from its durable cursor, and no row whose vector was committed is embedded again (the inputs
 * counted at the embedding server).
 */
import Sqlite from 'better-sqlite3';
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { EmbedderRig } from '../../helpers/embedder-rig.js';

const DIMS = 16;
const BATCH = 16;
const WINDOW = 2;
const ROWS = 600;

const titleOf = (i: number): string => `note number ${i}`;

interface Progress {
  readonly rows: number;
  readonly pending: number;
  readonly building: boolean;
  readonly embedding?: { readonly done: number; readonly left: number };
}

describe('alter collection C embed F: a backfill of vectors', function () {
  this.timeout(120_000);
  const rig = new EmbedderRig({
    embedder: { dims: DIMS },
    flags: (dir) => [
      '--embedder-batch',
      String(BATCH),
      '--embedder-concurrency',
      String(WINDOW),
      '--audit',
      path.join(dir, 'audit.log'),
    ],
  });
  const { q } = rig;

  const progress = async (): Promise<Progress> =>
    (await q('schema docs')).json.collections[0].fields.find((f: { name: string }) => f.name === 'vec').index;
  /** Polls until `done` holds, or fails past `ms`. */
  const until = async (done: (p: Progress) => boolean, ms = 60_000): Promise<Progress> => {
    const end = Date.now() + ms;
    for (;;) {
      const p = await progress();
      if (done(p)) return p;
      if (Date.now() > end) throw new Error(`still ${JSON.stringify(p)} after ${ms} ms`);
      await sleep(25);
    }
  };
  /** The schema changes the audit recorded. */
  const audited = (): { statement: string; collection: string }[] =>
    fs
      .readFileSync(path.join(rig.dir, 'audit.log'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; statement: string; collection: string })
      .filter((line) => line.event === 'schema')
      .map(({ statement, collection }) => ({ statement, collection }));
  /** The fields of docs as they are defined: what `schema` says of them less their index state. */
  const definitions = async (): Promise<unknown[]> =>
    (await q('schema docs')).json.collections[0].fields.map(
      ({ name, type, annotations }: { name: string; type: string; annotations: string[] }) => ({
        name,
        type,
        annotations,
      }),
    );

  beforeEach(async () => {
    await rig.open();
    expect(
      (await q(`create collection docs (title text, vec vector<${DIMS}> @hnsw(cosine) @embed(title))`)).status,
    ).to.equal(200);
    // Rows that bring a null vector keep it: the rows of a file made before the embedder, as far as vectors go.
    const rows = Array.from({ length: ROWS }, (_, i) => ({ title: titleOf(i), vec: null }));
    expect((await q('insert into docs $1', [rows])).status).to.equal(200);
    rig.embedder.requests.length = 0;
  });
  afterEach(() => rig.close());

  it('fills the rows without vectors in the background, with its progress in schema', async () => {
    const fields = await definitions();
    expect((await q('get docs select vec where id = 1')).json.rows[0].vec).to.equal(null);
    rig.embedder.fault = { kind: 'slow', ms: 30 };
    const answer = await q('alter collection docs embed vec');
    expect(answer.json).to.deep.equal({ altered: true, embedding: ROWS });
    const part = await until((p) => p.embedding !== undefined && p.embedding.done > 0);
    expect(part.embedding!.done + part.embedding!.left).to.be.at.most(ROWS);
    const over = await until((p) => p.embedding === undefined && p.rows === ROWS && p.pending === 0);
    expect(over).to.deep.equal({ rows: ROWS, pending: 0, building: false });
    const inputs = rig.embedder.requests.flatMap((r) => r.input);
    expect(inputs).to.have.length(ROWS);
    expect(new Set(inputs).size).to.equal(ROWS);
    expect(rig.embedder.maxInFlight).to.be.at.most(WINDOW);
    const near = await q('get docs select title near vec $1 limit 1', [rig.embedder.vectorOf(titleOf(417))]);
    expect(near.json.rows[0].title).to.equal(titleOf(417));
    // It writes the rows' vectors (kinds.ts: writes), never the schema (a maintenance statement), and is audited.
    expect((await q('get docs select vec where id = 1')).json.rows[0].vec).to.have.length(DIMS);
    expect(await definitions()).to.deep.equal(fields);
    expect(audited()).to.deep.equal([
      { statement: 'create', collection: 'docs' },
      { statement: 'alter embed', collection: 'docs' },
    ]);
    // Run again with every row filled, it has nothing to do.
    expect((await q('alter collection docs embed vec')).json).to.deep.equal({ altered: true, embedding: 0 });
  });

  it('goes on after kill -9 from its durable cursor: no row committed is embedded again', async () => {
    rig.embedder.fault = { kind: 'slow', ms: 60 };
    await q('alter collection docs embed vec');
    await until((p) => (p.embedding?.done ?? 0) >= 5 * BATCH);
    await rig.sandbox.kill(rig.server.child);
    const before = rig.embedder.requests.flatMap((r) => r.input);
    // What the file holds after the kill: the rows whose vectors were committed.
    const killed = new Sqlite(rig.data, { readonly: true });
    const committed = new Set(
      (killed.prepare('SELECT id FROM "c_docs.vec"').pluck().all() as number[]).map((id) => titleOf(id - 1)),
    );
    killed.close();
    expect(committed.size).to.be.within(5 * BATCH, ROWS - 1);
    rig.embedder.fault = undefined;
    rig.embedder.requests.length = 0;
    await rig.start();
    await until((p) => p.embedding === undefined && p.rows === ROWS && p.pending === 0);
    // The rows' texts (the start probe's are not rows).
    const after = rig.embedder.requests.flatMap((r) => r.input).filter((text) => text.startsWith('note number'));
    // After the restart: exactly the rows not committed, each once, and none that was.
    expect(after.filter((text) => committed.has(text))).to.deep.equal([]);
    expect(new Set(after).size).to.equal(after.length);
    expect(after.length).to.equal(ROWS - committed.size);
    // Embedded twice: only the batches out at the kill, a window of them at most.
    const twice = after.filter((text) => before.includes(text));
    expect(twice.length).to.be.at.most(WINDOW * BATCH);
    expect((await q('get docs select vec where id = 600')).json.rows[0].vec).to.have.length(DIMS);
  });

  it('refuses a field that is not made with @embed, and one that does not exist', async () => {
    await q('alter collection docs add other vector<4>');
    const plain = await q('alter collection docs embed other');
    expect([plain.status, plain.json.error.code]).to.deep.equal([400, 'invalid_statement']);
    const missing = await q('alter collection docs embed nothing');
    expect([missing.status, missing.json.error.code]).to.deep.equal([400, 'unknown_field']);
    expect(
      audited().map((line) => line.statement),
      'a refused one is not audited',
    ).to.deep.equal(['create', 'alter add']);
  });
});
