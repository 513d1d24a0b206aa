/**
 * What one hostile body can make a server hold (issue 29; docs/hosting.md "One-file servers and memory"): a read
 * whose answer is just under the cap, sent three times, each raising the server's peak RSS over what it held just
 * before by no more than the file's pages it reads plus five answers at the cap. `make test` runs it at an 8 MB cap,
 * `make reliability` at the default 32 MB.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { parseByteSize } from '../../shared/cli/options.js';
import { query, Sandbox, type ServerProcess } from '../integration/processes.js';
import { report, rssKiB, scaled } from './harness.js';

const MAX_ANSWER = `${scaled(8, 32)}mb`;
const CAP = parseByteSize(MAX_ANSWER, '--max-answer');
const TEXT = 'x'.repeat(10_000);
/** Rows whose answer is about 92% of the cap (each row's JSON is its text and about 30 bytes more). */
const ROWS = Math.floor((0.92 * CAP) / (TEXT.length + 30));

const mib = (bytes: number): number => Math.round(bytes / 1024 ** 2);

describe('reliability: the memory one request may make a server hold', function () {
  this.timeout(scaled(60_000, 300_000));
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let file: string;

  before(async () => {
    file = path.join(sandbox.dir(), 'answer.fenec');
    server = await sandbox.startServer(['--file', file, '--max-answer', MAX_ANSWER]);
    expect((await query(server.url, 'create collection big (t text)')).status).to.equal(200);
    for (let done = 0; done < ROWS; done += 50) {
      const rows = Array.from({ length: Math.min(50, ROWS - done) }, () => ({ t: TEXT }));
      const reply = await query(server.url, 'insert into big $1', [rows]);
      expect(reply.status, reply.text.slice(0, 300)).to.equal(200);
    }
  });
  after(() => sandbox.cleanUp());

  it(`answers a read just under the ${MAX_ANSWER} cap holding at most the file's pages and five answers more`, async () => {
    const rises: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      // The peak (VmHWM) starts again from the RSS now: writing 5 to clear_refs resets it (Linux).
      fs.writeFileSync(`/proc/${server.pid}/clear_refs`, '5');
      const before = rssKiB(server.pid) * 1024;
      const reply = await query(server.url, 'get big');
      expect(reply.status, reply.text.slice(0, 300)).to.equal(200);
      expect(reply.text.length).to.be.within(0.85 * CAP, CAP);
      const rise = rssKiB(server.pid, 'VmHWM') * 1024 - before;
      const fileBytes = fs.statSync(file).size + (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0);
      const bound = fileBytes + 5 * CAP;
      expect(rise, `read ${i + 1}: the peak rose ${mib(rise)} MiB, bound ${mib(bound)} MiB`).to.be.at.most(bound);
      rises.push(rise);
    }
    report(
      'one answer at the cap',
      `${ROWS} rows, ${mib(CAP)} MiB cap: the peak rose ${rises.map(mib).join(', ')} MiB (bound: the file + 5 caps)`,
    );
  });
});
