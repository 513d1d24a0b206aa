/**
 * `alter collection C embed F` over a real server and the tests' own embedding server: the vectors of the rows that
 * have none are made in the background, their progress in `schema`; the server killed with SIGKILL part way and
 * started again goes on from its durable cursor, and no row whose vector was committed is embedded again (the inputs
 * counted at the embedding server).
 */
import Sqlite from 'better-sqlite3';
import { expect } from 'chai';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startEmbeddingServer, type EmbeddingServer } from '../../helpers/embedding-server.js';
import { query, Sandbox, type ServerProcess } from '../processes.js';

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
  const sandbox = new Sandbox();
  let embedder: EmbeddingServer;
  let server: ServerProcess;
  let file: string;

  const q = (statement: string, params: readonly unknown[] = []) => query(server.url, statement, params);
  const start = async (): Promise<ServerProcess> =>
    sandbox.startServer([
      '--file',
      file,
      '--embedder-url',
      embedder.url,
      '--embedder-model',
      embedder.model,
      '--embedder-batch',
      String(BATCH),
      '--embedder-concurrency',
      String(WINDOW),
    ]);
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

  beforeEach(async () => {
    embedder = await startEmbeddingServer({ dims: DIMS });
    file = path.join(sandbox.dir(), 'backfill.fenec');
    server = await start();
    expect(
      (await q(`create collection docs (title text, vec vector<${DIMS}> @hnsw(cosine) @embed(title))`)).status,
    ).to.equal(200);
    // Rows that bring a null vector keep it: the rows of a file made before the embedder, as far as vectors go.
    const rows = Array.from({ length: ROWS }, (_, i) => ({ title: titleOf(i), vec: null }));
    expect((await q('insert into docs $1', [rows])).status).to.equal(200);
    embedder.requests.length = 0;
  });
  afterEach(async () => {
    await sandbox.cleanUp();
    await embedder.close();
  });

  it('fills the rows without vectors in the background, with its progress in schema', async () => {
    embedder.fault = { kind: 'slow', ms: 30 };
    const answer = await q('alter collection docs embed vec');
    expect(answer.json).to.deep.equal({ altered: true, embedding: ROWS });
    const part = await until((p) => p.embedding !== undefined && p.embedding.done > 0);
    expect(part.embedding!.done + part.embedding!.left).to.be.at.most(ROWS);
    const over = await until((p) => p.embedding === undefined && p.rows === ROWS && p.pending === 0);
    expect(over).to.deep.equal({ rows: ROWS, pending: 0, building: false });
    const inputs = embedder.requests.flatMap((r) => r.input);
    expect(inputs).to.have.length(ROWS);
    expect(new Set(inputs).size).to.equal(ROWS);
    expect(embedder.maxInFlight).to.be.at.most(WINDOW);
    const near = await q('get docs select title near vec $1 limit 1', [embedder.vectorOf(titleOf(417))]);
    expect(near.json.rows[0].title).to.equal(titleOf(417));
    // Run again with every row filled, it has nothing to do.
    expect((await q('alter collection docs embed vec')).json).to.deep.equal({ altered: true, embedding: 0 });
  });

  it('goes on after kill -9 from its durable cursor: no row committed is embedded again', async () => {
    embedder.fault = { kind: 'slow', ms: 60 };
    await q('alter collection docs embed vec');
    await until((p) => (p.embedding?.done ?? 0) >= 5 * BATCH);
    await sandbox.kill(server.child);
    const before = embedder.requests.flatMap((r) => r.input);
    // What the file holds after the kill: the rows whose vectors were committed.
    const killed = new Sqlite(file, { readonly: true });
    const committed = new Set(
      (killed.prepare('SELECT id FROM "c_docs.vec"').pluck().all() as number[]).map((id) => titleOf(id - 1)),
    );
    killed.close();
    expect(committed.size).to.be.within(5 * BATCH, ROWS - 1);
    embedder.fault = undefined;
    embedder.requests.length = 0;
    server = await start();
    await until((p) => p.embedding === undefined && p.rows === ROWS && p.pending === 0);
    // The rows' texts (the start probe's are not rows).
    const after = embedder.requests.flatMap((r) => r.input).filter((text) => text.startsWith('note number'));
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
  });
});
