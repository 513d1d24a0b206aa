import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openSnapshot, openWritable, type Connection } from '../../../node/storage/sqlite.js';
import { VectorStore, type VectorStoreEvent } from '../../../node/vector/store.js';
import { tempDir } from '../../helpers/temp.js';
import { seededRandom } from '../../helpers/vectors.js';
import { bruteForce, expectSameAnswer, randomVector, WRITER_SPECS } from '../../helpers/vector-table.js';

const WRITER = fileURLToPath(new URL('../../fixtures/vector-writer.js', import.meta.url));
/** At least the index's ntotal: the HNSW search visits every node it can reach, so it is exact. */
const EF_EXACT = 8192;

/** Starts the writer and resolves once it has opened the store (and so replayed what the last one left). */
function startWriter(file: string, seed: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [WRITER, file, String(seed)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve(child);
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`the writer ended before it was ready (${code ?? signal}): ${stderr}`)),
    );
  });
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** Every search of `queries` random vectors per field equals the brute-force answer over the rows. */
function checkAgainstRows(db: Connection, store: VectorStore, queries: number, seed: number, context: string): void {
  const random = seededRandom(seed);
  for (const spec of WRITER_SPECS) {
    for (let i = 0; i < queries; i++) {
      const q = randomVector(spec.dims, random);
      const k = 1 + Math.floor(random() * 20);
      const got = store.search(spec.collection, spec.field, q, k, null, EF_EXACT);
      expectSameAnswer(
        got,
        bruteForce(db, spec.collection, spec.field, q, spec.metric, k),
        `${context} ${spec.field} query ${i}`,
      );
    }
  }
}

describe('VectorStore after SIGKILL (node/vector/store)', function () {
  this.timeout(60_000);
  const temp = tempDir();
  const children = new Set<ChildProcess>();
  after(async () => {
    await Promise.all([...children].map(kill));
    temp.remove();
  });

  it('answers every search as an exact scan of the surviving rows, whenever the writer was killed', async () => {
    const file = temp.file('crash.fenec');
    const random = seededRandom(2024);
    const rounds = 7;
    const damaged: VectorStoreEvent[] = [];
    for (let round = 0; round < rounds; round++) {
      const child = await startWriter(file, 100 + round);
      children.add(child);
      await new Promise((resolve) => setTimeout(resolve, 150 + random() * 900));
      await kill(child);
      children.delete(child);

      // As a reader beside the writer would: the snapshot and the log as they stand, nothing written.
      const reader = openSnapshot(file);
      const store = VectorStore.open(reader, WRITER_SPECS, {
        readOnly: true,
        onEvent: (e) => e.kind === 'snapshot_damaged' && damaged.push(e),
      });
      try {
        await store.idle();
        for (const spec of WRITER_SPECS)
          expect(store.info(spec.collection, spec.field)!.serving, `round ${round} ${spec.field} served`).to.equal(
            true,
          );
        checkAgainstRows(reader, store, 10, round, `round ${round}`);
      } finally {
        store.close();
        reader.close();
      }
    }

    // Then as the next writer: open, replay, and 50 queries per field.
    const db = openWritable(file);
    const store = VectorStore.open(db, WRITER_SPECS, { readOnly: false });
    try {
      await store.idle();
      const rows = db.prepare('SELECT count(*) FROM c_docs').pluck().get() as number;
      expect(rows).to.be.greaterThan(300);
      checkAgainstRows(db, store, 50, 99, 'after the last kill');
    } finally {
      store.close();
      db.close();
    }
    expect(damaged, 'a snapshot is written in one transaction: never seen half-written').to.deep.equal([]);
  });
});
