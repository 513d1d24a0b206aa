/**
 * Where a one-file server runs its statements, over real processes: on its serving thread by default, in a worker
 * thread with --workers 1 (the CPU of its threads shows which), and what a quiet thread gives back after a load.
 * Verdicts on CPU shares and RSS, not on wall times: this file runs beside others.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { bigFile, SLOW_COUNT } from '../helpers/big-file.js';
import { FENEC_SERVER, processStat, query, Sandbox, threadStat } from './processes.js';

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

    it('refuses --workers 2 for one file with exit 2 and what it takes', async () => {
      const done = await sandbox.run(FENEC_SERVER, ['--file', file, '--port', '0', '--workers', '2']);
      expect(done.code, done.stderr).to.equal(2);
      expect(done.stderr).to.contain('--workers').and.contain('0 (statements on the serving thread) or 1');
    });
  });
});
