/**
 * Index work never stalls serving (a real process; see test/fixtures/index-event-loop.ts): while
 * a few thousand 384-dim vectors are added in the background and the index (several megabytes,
 * several parts) is stored, the event loop's delay stays within 20 ms of what the same process sees
 * running 1 ms tasks back to back — the machine's own scheduling of a busy thread, which a shared
 * machine adds to both. A `near` beside the add answers (the pending rows scanned).
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Sandbox } from './processes.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/index-event-loop.js', import.meta.url));

describe('index work beside serving (monitorEventLoopDelay)', function () {
  this.timeout(300_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it('adds in the background and stores the snapshot in parts, never holding the loop for more than 20 ms', async () => {
    const run = await sandbox.run(
      FIXTURE,
      [path.join(sandbox.dir(), 'loop.fenec'), '3000'],
      {},
      { timeoutMs: 240_000 },
    );
    expect(run.code, run.stderr).to.equal(0);
    const result = JSON.parse(run.stdout) as {
      work: { max: number; p99: number };
      busy: { max: number; p99: number };
      searches: number;
      stored: number[];
      index: unknown;
      failed: string[];
    };
    process.stderr.write(`      ${run.stdout}`);
    expect(result.failed).to.deep.equal([]);
    expect(result.index).to.deep.equal({ rows: 4000, pending: 0, building: false });
    expect(result.stored.length, 'the snapshot was stored').to.be.greaterThan(0);
    expect(Math.max(...result.stored), 'an index of several parts (512 KB each)').to.be.greaterThan(3 * 1024 * 1024);
    expect(result.searches, 'near answered while the index filled').to.be.greaterThan(0);
    expect(result.work.p99, JSON.stringify(result)).to.be.at.most(20 + result.busy.p99);
  });
});
