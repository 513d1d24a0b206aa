/**
 * A fenec-server killed with SIGKILL while it inserts, changes and deletes rows of an @hnsw
 * collection: after a restart, every vector search answers what an exact scan of the rows that
 * survived answers — the same scores, each row under the vector it holds now. A `set … where n = $2`
 * gives every row of that n one vector, so rows tie exactly; which of a tie the index takes at the
 * edge of an answer is its choice (fenecql.md, "Exact or approximate"), and the ids are compared
 * only where the scores differ.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '../helpers/vectors.js';
import { query, Sandbox, type ServerProcess } from './processes.js';

const DIMS = 8;
const ROUNDS = 3;
const QUERIES = 30;

describe('vector search after a crash', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  const random = seededRandom(11);
  const vector = () => Array.from({ length: DIMS }, () => random() * 2 - 1);
  let file: string;
  let server: ServerProcess;

  const run = async (statement: string, params: unknown[] = []) => {
    const reply = await query(server.url, statement, params);
    expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
    return reply.json as { rows: { id: number; vec: number[]; _score: number }[] };
  };

  before(async () => {
    file = path.join(sandbox.dir(), 'crash.fenec');
    server = await sandbox.startServer(['--file', file]);
    // ef at its largest makes the index search exhaustively at this size: the test is of the index
    // holding what the rows say after a crash, not of HNSW's recall (bench/search-bench measures that).
    await run(`create collection v (vec vector<${DIMS}> @hnsw(cosine, m = 16, ef = 4096), n int)`);
  });
  after(() => sandbox.cleanUp());

  /** Writes until the server dies under it: each request either answers or fails with the connection. */
  async function writeUntilKilled(worker: number): Promise<void> {
    for (let i = 0; ; i++) {
      const step = (worker + i) % 4;
      const statement =
        step === 3
          ? 'del v where n = $1'
          : step === 2
            ? 'set v {vec: $1} where n = $2'
            : `insert into v ${JSON.stringify(Array.from({ length: 40 }, () => ({ vec: vector(), n: Math.floor(random() * 1000) })))}`;
      const params =
        step === 3 ? [Math.floor(random() * 7)] : step === 2 ? [vector(), Math.floor(random() * 1000)] : [];
      try {
        await query(server.url, statement, params);
      } catch {
        return;
      }
    }
  }

  for (let round = 1; round <= ROUNDS; round++) {
    it(`answers as an exact scan after kill ${round} of ${ROUNDS}`, async () => {
      const writers = [0, 1, 2, 3].map(writeUntilKilled);
      await sleep(400 + Math.floor(random() * 1200));
      await sandbox.kill(server.child);
      await Promise.all(writers);

      server = await sandbox.startServer(['--file', file]);
      const survivors = (await run('get v select vec')).rows;
      expect(survivors.length).to.be.above(0);
      const byId = new Map(survivors.map((row) => [row.id, row]));
      for (let i = 0; i < QUERIES; i++) {
        const q = vector();
        const found = (await run('get v near vec $1 limit 10', [q])).rows;
        const exact = exactCosine(survivors, q, 10);
        expect(
          found.map((r) => r._score),
          `query ${i}: the scores of the exact 10 nearest`,
        ).to.have.lengthOf(exact.length);
        found.forEach((r, j) => {
          expect(r._score, `query ${i}, place ${j}`).to.be.closeTo(exact[j]!.score, 1e-4);
          const row = byId.get(r.id);
          expect(row, `query ${i}: row ${r.id} survived`).to.not.equal(undefined);
          // The index holds the row's vector as it is now, not one from before the crash.
          expect(r._score, `query ${i}: row ${r.id}'s score`).to.be.closeTo(cosine(row!.vec, q), 1e-4);
        });
        expect(new Set(found.map((r) => r.id)).size, `query ${i}: no row twice`).to.equal(found.length);
        // Every row scoring above the last place's tie (float32 scores: within 1e-5) is in the answer.
        const edge = exact[exact.length - 1]!.score;
        const ids = found.map((r) => r.id);
        for (const e of exact)
          if (e.score > edge + 1e-5) expect(ids, `query ${i}: row ${e.id} (${e.score})`).to.include(e.id);
      }
    });
  }
});

function cosine(v: number[], q: number[]): number {
  const norm = (x: number[]) => Math.sqrt(x.reduce((s, c) => s + c * c, 0));
  return v.reduce((s, c, i) => s + c * q[i]!, 0) / (norm(v) * norm(q));
}

function exactCosine(rows: { id: number; vec: number[] }[], q: number[], k: number): { id: number; score: number }[] {
  return rows
    .map((r) => ({ id: r.id, score: cosine(r.vec, q) }))
    .sort((a, b) => b.score - a.score || a.id - b.id)
    .slice(0, k);
}
