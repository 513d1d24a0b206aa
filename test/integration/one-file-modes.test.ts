/**
 * Where a one-file server runs its statements, over real processes: on its serving thread by default, in a worker
 * thread with --workers 1 (the CPU of its threads shows which), and what a quiet thread gives back after a load.
 * Verdicts on CPU shares and RSS, not on wall times: this file runs beside others.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FenecDatabase } from '../../node/database.js';
import { SNAPSHOT_PART_TABLE, SNAPSHOT_TABLE } from '../../node/vector/vector-log.js';
import { bigFile, SLOW_COUNT } from '../helpers/big-file.js';
import { FENEC, FENEC_SERVER, processStat, programNodeArgs, query, Sandbox, threadStat } from './processes.js';

describe('a one-file server', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  describe("a one-file server's statements: on its serving thread by default, in a worker thread with --workers 1", () => {
    let file: string;

    before(() => {
      file = path.join(sandbox.dir(), 'one.fenec');
      bigFile(file, 5_000);
    });

    for (const [where, args, servingShare] of [
      ['on the serving thread', [], (share: number) => expect(share).to.be.above(0.7)],
      ['in a worker thread', ['--workers', '1'], (share: number) => expect(share).to.be.below(0.3)],
    ] as const) {
      it(`runs them ${where}, as the CPU of its threads shows, and says so at start`, async function () {
        if (process.platform !== 'linux') this.skip(); // per-thread CPU from /proc
        const server = await sandbox.startServer(['--file', file, '--statement-timeout', '30s', ...args]);
        try {
          expect(server.stderr()).to.contain(`"statements":"${where}"`);
          // utime + stime, in clock ticks of 10 ms: the serving thread's (its id is the process's), and every thread's.
          const ticks = (fields: string[]): number => Number(fields[11]) + Number(fields[12]);
          const all = (): number => ticks(processStat(server.pid));
          const serving0 = ticks(threadStat(server.pid, server.pid));
          const all0 = all();
          const reply = await query(server.url, SLOW_COUNT);
          expect(reply.status, reply.text).to.equal(200);
          expect(reply.json.count).to.equal(0);
          const spent = all() - all0;
          expect(spent, 'ticks the statement took').to.be.at.least(10);
          servingShare((ticks(threadStat(server.pid, server.pid)) - serving0) / spent);
        } finally {
          await sandbox.kill(server.child);
        }
      });
    }

    it('gives back what a load made its heap hold once it has been quiet a second', async function () {
      if (process.platform !== 'linux') this.skip(); // RSS from /proc
      const server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'loaded.fenec')]);
      try {
        const rssMb = (): number => Number(processStat(server.pid)[21]) / 256; // field 24, in 4 KiB pages
        expect((await query(server.url, 'create collection docs (body text @text, vec vector<384>)')).status).to.equal(
          200,
        );
        const vector = (i: number): string =>
          `[${Array.from({ length: 384 }, (_, d) => (((i * 7 + d) % 13) - 6) / 8).join(', ')}]`;
        for (let start = 0; start < 4_000; start += 200) {
          const rows = Array.from(
            { length: 200 },
            (_, i) => `{body: "row ${start + i} of the load", vec: ${vector(start + i)}}`,
          );
          const reply = await query(server.url, `insert into docs [${rows.join(', ')}]`);
          expect(reply.status, reply.text).to.equal(200);
        }
        const loaded = rssMb();
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        expect(rssMb(), `RSS ${loaded.toFixed(0)} MB right after the load`).to.be.below(loaded * 0.8);
      } finally {
        await sandbox.kill(server.child);
      }
    });

    describe("gives back a stored index's bytes and the allocator's free pages once quiet after the index is built", () => {
      // The index is built as the file is opened, and stored after, with no request: any quiet second after a request
      // has passed when the stored index's bytes become garbage. Without the collection and malloc_trim after the index
      // was stored, a server held 93 MB against a baseline of 44–48 MB (the index's vectors 9 MB, its serialized
      // bytes, the rows read for it, the allocator's free pages); 52 MB with.
      const [rows, dims] = [3_000, 768];
      let baseline: number;
      let unstored: string;

      before(async function () {
        if (process.platform !== 'linux') this.skip(); // anonymous memory from /proc
        unstored = path.join(sandbox.dir(), 'unstored.fenec');
        unstoredIndex(unstored, rows, dims);
        const idle = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'empty.fenec')]);
        baseline = anonMb(idle.pid);
        await sandbox.kill(idle.child);
      });

      async function givesBack(pid: number): Promise<void> {
        await untilCpuIdle(pid);
        const bound = baseline + (3 * rows * dims * 4) / 2 ** 20;
        let held = anonMb(pid);
        for (const until = Date.now() + 3_000; held > bound && Date.now() < until; held = anonMb(pid))
          await new Promise((resolve) => setTimeout(resolve, 250));
        expect(held, `anonymous MB held (an empty file's server: ${baseline.toFixed(0)} MB)`).to.be.at.most(bound);
      }

      /** A copy of the file, for one program: the program stores the index it builds. */
      function copy(): string {
        const file = path.join(sandbox.dir(), 'unstored.fenec');
        fs.copyFileSync(unstored, file);
        return file;
      }

      it('fenec-server --file', async () => {
        const file = copy();
        const server = await sandbox.startServer(['--file', file]);
        try {
          await givesBack(server.pid);
          const schema = await query(server.url, 'schema docs');
          const field = (schema.json.collections[0].fields as { index?: unknown }[]).find((f) => f.index !== undefined);
          expect(field?.index, 'the index was built').to.deep.equal({ rows, pending: 0, building: false });
        } finally {
          await sandbox.kill(server.child);
        }
      });

      it('fenec mcp --file (stdio), its statements on its one thread', async () => {
        const file = copy();
        // Its stdin held open: the session lasts until it ends.
        const child = spawn(process.execPath, [...programNodeArgs(FENEC), FENEC, 'mcp', '--file', file], {
          stdio: ['pipe', 'ignore', 'pipe'],
        });
        try {
          let log = '';
          await new Promise<void>((resolve, reject) => {
            child.stderr!.on('data', (chunk: Buffer) => {
              log += chunk.toString();
              if (log.includes('serving MCP on stdio')) resolve();
            });
            child.once('exit', (code) => reject(new Error(`fenec mcp exited (${code}):\n${log}`)));
          });
          await givesBack(child.pid!);
        } finally {
          child.kill('SIGKILL');
          if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
        }
      });
    });

    it('refuses --workers 2 for one file with exit 2 and what it takes', async () => {
      const done = await sandbox.run(FENEC_SERVER, ['--file', file, '--port', '0', '--workers', '2']);
      expect(done.code, done.stderr).to.equal(2);
      expect(done.stderr).to.contain('--workers').and.contain('0 (statements on the serving thread) or 1');
    });

    it("refuses a replicated node's flags without --nats, with exit 2 and what to add", async () => {
      const dir = sandbox.dir();
      for (const [flags, said] of [
        [['--node-name', 'a'], '--node-name names a replicated node: give --nats too'],
        [['--standby'], "--standby keeps copies of a replicated node's tenants: give --nats too"],
      ] as const) {
        const done = await sandbox.run(FENEC_SERVER, ['--data-dir', dir, '--port', '0', ...flags]);
        expect(done.code, done.stderr).to.equal(2);
        expect(done.stderr).to.contain(said);
      }
    });
  });
});

/** The process's anonymous memory (RssAnon), MB. */
function anonMb(pid: number): number {
  return Number(/^RssAnon:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** Once the process's threads took under 5 ticks (50 ms) of CPU in a second. */
async function untilCpuIdle(pid: number): Promise<void> {
  const ticks = (): number => Number(processStat(pid)[11]) + Number(processStat(pid)[12]);
  for (const until = Date.now() + 60_000; Date.now() < until;) {
    const before = ticks();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    if (ticks() - before < 5) return;
  }
  throw new Error('the server did not go idle within 60 s');
}

/** A file of `rows` random `dims`-dim vectors under @hnsw whose index is not stored: a server builds it as it opens. */
function unstoredIndex(file: string, rows: number, dims: number): void {
  const db = FenecDatabase.open({ file, readOnly: false, program: 'one-file-modes-test', sweepIntervalMs: 0 });
  let seed = 1;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31 - 0.5;
  try {
    db.execute(`create collection docs (vec vector<${dims}> @hnsw(cosine))`);
    for (let start = 0; start < rows; start += 150) {
      const batch = Array.from(
        { length: 150 },
        () => `{vec: [${Array.from({ length: dims }, () => random().toFixed(3)).join(',')}]}`,
      );
      db.execute(`insert into docs [${batch.join(', ')}]`);
    }
  } finally {
    db.close();
  }
  const raw = new Database(file);
  raw.exec(`DELETE FROM ${SNAPSHOT_PART_TABLE}; DELETE FROM ${SNAPSHOT_TABLE}`);
  raw.close();
}
