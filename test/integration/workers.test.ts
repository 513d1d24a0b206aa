/**
 * Statements off the serving thread, over real processes: two tenants on a node, one running a
 * statement that takes seconds (a filter that lowers every row's text a hundred times), the other's
 * requests answered meanwhile; the time limit; SIGTERM during a long statement; the cost quota;
 * the answer cap. Assertions are on the order of events and on counts, not on tight timings.
 */
import Database from 'better-sqlite3';
import { expect } from 'chai';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bigFile, SLOW_COUNT, SLOW_FILTER } from '../helpers/big-file.js';
import { query, request, Sandbox, threadStat, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'workers-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

/** A thread's nice value (field 19 of /proc/PID/task/TID/stat). */
function threadNice(pid: number, tid: number): number {
  return Number(threadStat(pid, tid)[16]);
}

const tq = (node: ServerProcess, tenant: string, statement: string, params: readonly unknown[] = []): Promise<Reply> =>
  request(node.url, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: AUTH,
    body: JSON.stringify({ statement, params }),
  });
const put = (node: ServerProcess, tenant: string, quotas: unknown): Promise<Reply> =>
  request(node.url, { method: 'PUT', path: `/t/${tenant}`, headers: AUTH, body: JSON.stringify(quotas) });

/** Sends `statement` to `tenant` one request after another until `until` settles; answers every reply's status. */
async function readWhile(
  node: ServerProcess,
  tenant: string,
  statement: string,
  until: Promise<unknown>,
): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true));
  const statuses: number[] = [];
  while (!done) statuses.push((await tq(node, tenant, statement)).status);
  return statuses;
}

describe('statements in worker threads', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  describe('a tenant node with two workers', () => {
    let node: ServerProcess;

    before(async () => {
      const dir = sandbox.dir();
      // A second or more of the heavy statement (8 s over 30 000 rows on a loaded 2-core machine): hundreds of reads.
      bigFile(path.join(dir, 'heavy.fenec'), 10_000);
      node = await sandbox.startServer(
        [
          '--data-dir',
          dir,
          '--workers',
          '2',
          '--statement-timeout',
          '60s',
          '--tenant-rate',
          '100000',
          '--tenant-burst',
          '100000',
          '--tenant-cost',
          '0',
        ],
        { FENEC_TOKEN: TOKEN },
      );
      for (const tenant of ['quiet', 'heavy']) expect((await put(node, tenant, {})).status).to.be.oneOf([200, 201]);
      expect((await tq(node, 'quiet', 'create collection notes (title text)')).status).to.equal(200);
      expect((await tq(node, 'quiet', 'insert into notes {title: "hello"}')).status).to.equal(200);
    });

    it("answers the quiet tenant's reads, all of them, while the heavy tenant's statement runs on the other worker", async () => {
      const heavy = tq(node, 'heavy', SLOW_COUNT);
      const statuses = await readWhile(node, 'quiet', 'get notes where id = 1', heavy);
      const answer = await heavy;
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.json).to.deep.equal({ count: 0 });
      // Seconds of the heavy statement; a read by id answers in milliseconds even on a busy machine.
      expect(statuses.length).to.be.greaterThan(20);
      expect(statuses.every((status) => status === 200)).to.equal(true);
    });

    it("runs statements below the serving thread's priority, and index builds below them (Linux)", async function () {
      if (process.platform !== 'linux') this.skip();
      expect((await tq(node, 'quiet', 'create collection docs (v vector<32> @hnsw(cosine))')).status).to.equal(200);
      const rows = Array.from({ length: 2000 }, (_, i) => ({
        v: Array.from({ length: 32 }, (_, d) => Math.round(Math.sin((i + 1) * (d + 1)) * 1e4) / 1e4),
      }));
      expect((await tq(node, 'quiet', 'insert into docs $1', [rows])).status).to.equal(200);
      // The index takes them in the background, on libuv's threads: wait until it holds them.
      for (
        let i = 0;
        i < 100 && !(await tq(node, 'quiet', 'schema docs')).text.includes('"pending":0,"building":false');
        i++
      )
        await new Promise((r) => setTimeout(r, 100));
      const serving = threadNice(node.pid, node.pid);
      const nices = fs.readdirSync(`/proc/${node.pid}/task`).map((tid) => threadNice(node.pid, Number(tid)));
      // Threads a worker starts (libuv's, for its index) are made at its priority, until they build.
      expect(nices.filter((nice) => nice === serving + 5).length, 'the two workers').to.be.at.least(2);
      expect(nices.filter((nice) => nice === serving + 10).length, 'a thread that built the index').to.be.at.least(1);
      expect(Math.min(...nices), 'no thread above the serving thread').to.equal(serving);
    });
  });

  describe('the time limit (--statement-timeout), one worker for two tenants', () => {
    let node: ServerProcess;

    before(async () => {
      const dir = sandbox.dir();
      bigFile(path.join(dir, 'heavy.fenec'), 30_000);
      node = await sandbox.startServer(
        [
          '--data-dir',
          dir,
          '--workers',
          '1',
          '--statement-timeout',
          '300ms',
          '--tenant-rate',
          '100000',
          '--tenant-burst',
          '100000',
          '--tenant-cost',
          '0',
        ],
        { FENEC_TOKEN: TOKEN },
      );
      for (const tenant of ['quiet', 'heavy']) expect((await put(node, tenant, {})).status).to.be.oneOf([200, 201]);
      expect((await tq(node, 'quiet', 'create collection notes (title text)')).status).to.equal(200);
      expect((await tq(node, 'quiet', 'insert into notes {title: "hello"}')).status).to.equal(200);
    });

    it('stops a statement past it with 504 statement_timeout, and answers the requests queued behind it on the same worker', async () => {
      const heavy = tq(node, 'heavy', SLOW_COUNT);
      // Sent while the heavy statement holds the only worker: they wait for it to be stopped, then run on its
      // successor.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const queued = await Promise.all([
        tq(node, 'quiet', 'get notes where id = 1'),
        tq(node, 'heavy', 'get big select n where n = 7'),
        tq(node, 'quiet', 'get notes count'),
      ]);
      const stopped = await heavy;
      expect(stopped.status, stopped.text).to.equal(504);
      expect(stopped.json.error.code).to.equal('statement_timeout');
      expect(stopped.json.error.message).to.contain('300 ms');
      expect(stopped.json.error.hint).to.contain('where id > $1 order id limit N');
      expect(queued.map((reply) => reply.status)).to.deep.equal([200, 200, 200]);
      expect(queued[0]!.json.rows).to.deep.equal([{ id: 1, title: 'hello' }]);
      expect(queued[1]!.json.rows).to.deep.equal([{ id: 8, n: 7 }]);
    });

    it('stops a statement inside SQLite: the worker that ran it goes on, its threads the same (Linux)', async function () {
      if (process.platform !== 'linux') this.skip();
      const serving = threadNice(node.pid, node.pid);
      // The worker and the threads it made run at its priority; a worker terminated and replaced would leave new ids.
      const workerThreads = (): string[] =>
        fs
          .readdirSync(`/proc/${node.pid}/task`)
          .filter((tid) => threadNice(node.pid, Number(tid)) === serving + 5)
          .sort();
      expect((await tq(node, 'quiet', 'get notes count')).status).to.equal(200);
      const before = workerThreads();
      expect(before.length, 'the worker').to.be.at.least(1);
      for (let i = 0; i < 3; i++) {
        const stopped = await tq(node, 'heavy', SLOW_COUNT);
        expect(stopped.status, stopped.text).to.equal(504);
        expect(stopped.json.error.code).to.equal('statement_timeout');
      }
      expect((await tq(node, 'quiet', 'get notes where id = 1')).json.rows).to.deep.equal([{ id: 1, title: 'hello' }]);
      expect(workerThreads()).to.deep.equal(before);
    });

    it("stops a statement while another tenant's vector index takes rows in the background on that worker, and the node goes on", async () => {
      // Statements stopped on a worker whose other tenant's index takes rows in the background (on libuv's
      // threads) must leave that index whole. Its own statements get time enough; the heavy tenant's, on the
      // same (only) worker, are stopped at 300 ms.
      expect((await put(node, 'vectors', { statementTimeoutMs: 60_000 })).status).to.be.oneOf([200, 201]);
      expect(
        (await tq(node, 'vectors', 'create collection docs (body text, v vector<384> @hnsw(cosine))')).status,
      ).to.equal(200);
      const rows = Array.from({ length: 1500 }, (_, i) => ({
        body: `Row ${i} Of The Vectors`,
        v: Array.from({ length: 384 }, (_, d) => Math.round(Math.sin((i + 1) * (d + 1) * 0.37 + i * i) * 1e4) / 1e4),
      }));
      for (let round = 0; round < 6; round++) {
        expect(
          (await tq(node, 'vectors', 'insert into docs $1', [rows.slice(round * 250, round * 250 + 250)])).status,
        ).to.equal(200);
        const stopped = await tq(node, 'heavy', SLOW_COUNT);
        expect(stopped.status, stopped.text).to.equal(504);
      }
      expect((await request(node.url, { path: '/_health' })).status).to.equal(200);
      const count = await tq(node, 'vectors', 'get docs count');
      expect(count.json).to.deep.equal({ count: 1500 });
      const near = await tq(node, 'vectors', 'get docs select id near v $1 limit 1', [rows[42]!.v]);
      expect(near.status, near.text).to.equal(200);
      expect(near.json.rows[0].id).to.equal(43);
      expect((await tq(node, 'quiet', 'get notes count')).json).to.deep.equal({ count: 1 });
    });

    it('rolls back a write it stopped: no row is changed', async () => {
      const stopped = await tq(node, 'heavy', `set big {n: -1} where ${SLOW_FILTER} or n >= 0`);
      expect(stopped.status, stopped.text).to.equal(504);
      const changed = await tq(node, 'heavy', 'get big where n = -1 count');
      expect(changed.json).to.deep.equal({ count: 0 });
    });

    it('holds each tenant to its own statementTimeoutMs quota', async () => {
      expect((await put(node, 'heavy', { statementTimeoutMs: 60_000 })).status).to.equal(200);
      // Four of the ten alternatives: a second or more, past the node's 300 ms, within the tenant's 60 s.
      const heavy = tq(node, 'heavy', `get big where ${SLOW_FILTER.split(' or ').slice(0, 4).join(' or ')} count`);
      const statuses = await readWhile(node, 'quiet', 'get notes count', heavy);
      const answer = await heavy;
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.json).to.deep.equal({ count: 0 });
      // The quiet tenant waited at most for that statement (one worker), each time.
      expect(statuses.every((status) => status === 200)).to.equal(true);
      expect((await put(node, 'heavy', { statementTimeoutMs: 0 })).status).to.equal(400);
    });
  });

  describe('a write lock another program holds on a tenant file', () => {
    it('stops a write waiting for it at the time limit (504), never past it, and the node goes on; a write waits --busy-timeout at most (503 file_busy)', async () => {
      const dir = sandbox.dir();
      // A busy timeout of 1 s (5 s by default) still outlasts the watchdog (the 300 ms limit and 0.5 s).
      const node = await sandbox.startServer(
        [
          ...['--data-dir', dir, '--workers', '1', '--statement-timeout', '300ms', '--tenant-cost', '0'],
          ...['--busy-timeout', '1s'],
        ],
        { FENEC_TOKEN: TOKEN },
      );
      for (const tenant of ['locked', 'other']) {
        expect((await put(node, tenant, {})).status).to.be.oneOf([200, 201]);
        expect((await tq(node, tenant, 'create collection notes (title text)')).status).to.equal(200);
      }
      expect((await put(node, 'patient', { statementTimeoutMs: 10_000 })).status).to.be.oneOf([200, 201]);
      expect((await tq(node, 'patient', 'create collection notes (title text)')).status).to.equal(200);
      // Another program (this test's own connection) holds a write on the tenants' files.
      const holders = ['locked', 'patient'].map((tenant) => {
        const db = new Database(path.join(dir, `${tenant}.fenec`));
        db.exec('BEGIN IMMEDIATE');
        db.prepare("INSERT INTO _fenec_meta (key, value) VALUES ('held', 'by the test')").run();
        return db;
      });
      try {
        const stopped = await tq(node, 'locked', 'insert into notes {title: "waits"}');
        expect(stopped.status, stopped.text).to.equal(504);
        expect(stopped.json.error.code).to.equal('statement_timeout');
        expect(stopped.json.error.message).to.contain('for a lock that another program holds on the file');
        // Before, the wait ran its busy timeout (1 s) past the watchdog (0.8 s), which ended the worker in it,
        // and better-sqlite3 throwing SQLITE_BUSY into the ending thread aborted the whole node.
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        expect(node.child.exitCode, node.stderr()).to.equal(null);
        expect((await tq(node, 'other', 'insert into notes {title: "beside"}')).json).to.deep.equal({
          count: 1,
          ids: [1],
        });
        expect((await tq(node, 'locked', 'get notes count')).json).to.deep.equal({ count: 0 });
        const asked = Date.now();
        const busy = await tq(node, 'patient', 'insert into notes {title: "waits 1 s"}');
        expect(busy.status, busy.text).to.equal(503);
        expect(busy.json.error.code).to.equal('file_busy');
        expect(busy.json.error.hint).to.contain('fuser');
        // The busy timeout, not the tenant's 10 s limit nor the default 5 s.
        expect(Date.now() - asked).to.be.within(900, 4_000);
      } finally {
        for (const db of holders) db.close();
      }
      expect((await tq(node, 'locked', 'insert into notes {title: "after"}')).json).to.deep.equal({
        count: 1,
        ids: [1],
      });
      expect(node.stderr()).not.to.contain('FATAL');
    });
  });

  describe('SIGTERM', () => {
    it('lets a running statement end within its time limit, answers it, and exits 0', async () => {
      const dir = sandbox.dir();
      const file = path.join(dir, 'one.fenec');
      bigFile(file, 30_000);
      const server = await sandbox.startServer(['--file', file, '--statement-timeout', '1s']);
      const long = query(server.url, SLOW_COUNT);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const exited = once(server.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      let answeredFirst = false;
      const answered = long.then((reply) => {
        answeredFirst = server.child.exitCode === null;
        return reply;
      });
      server.child.kill('SIGTERM');
      const reply = await answered;
      expect(reply.status, reply.text).to.equal(504);
      expect(answeredFirst).to.equal(true);
      const [code] = await exited;
      expect(code).to.equal(0);
      expect(fs.existsSync(`${file}.lock`)).to.equal(false);
    });
  });

  describe('the cost quota (worker time per second)', () => {
    it('refuses a tenant past its costMs with 429, Retry-After and a count on /_metrics, and leaves the other tenant alone', async () => {
      const dir = sandbox.dir();
      bigFile(path.join(dir, 'heavy.fenec'), 10_000);
      const node = await sandbox.startServer(
        ['--data-dir', dir, '--workers', '2', '--tenant-rate', '100000', '--tenant-burst', '100000'],
        { FENEC_TOKEN: TOKEN },
      );
      expect((await put(node, 'heavy', { costMs: 10, statementTimeoutMs: 5_000 })).status).to.equal(201);
      expect((await put(node, 'quiet', {})).status).to.equal(201);
      expect((await tq(node, 'quiet', 'create collection notes (title text)')).status).to.equal(200);
      // Banked: at most one time limit's worth (5 s here) — spent by statements of a few hundred ms each.
      let refused: Reply | undefined;
      for (let i = 0; i < 100 && refused === undefined; i++) {
        const reply = await tq(node, 'heavy', SLOW_COUNT);
        if (reply.status === 429) refused = reply;
        else expect(reply.status, reply.text).to.equal(200);
      }
      expect(refused, 'the heavy tenant was never refused').to.not.equal(undefined);
      expect(refused!.json.error.code).to.equal('quota_exceeded');
      expect(refused!.json.error.message).to.contain('10 ms per second');
      expect(Number(refused!.headers['retry-after'])).to.be.at.least(1);
      expect((await tq(node, 'quiet', 'get notes count')).status).to.equal(200);
      const metrics = await request(node.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(metrics.text).to.match(/fenec_tenant_quota_refusals_total\{quota="cost"\} [1-9]/);
    });
  });

  describe('the answer cap on /query (--max-answer, maxAnswerBytes)', () => {
    let server: ServerProcess;

    before(async () => {
      const dir = sandbox.dir();
      const file = path.join(dir, 'capped.fenec');
      bigFile(file, 5_000);
      server = await sandbox.startServer(['--file', file, '--max-answer', '64kb', '--workers', '1']);
    });

    it('refuses an answer past the cap with 413 answer_too_large, its figures and how to page', async () => {
      const reply = await query(server.url, 'get big');
      expect(reply.status, reply.text.slice(0, 300)).to.equal(413);
      expect(reply.json.error.code).to.equal('answer_too_large');
      expect(reply.json.error.message).to.match(/passes 65536 bytes after \d+ rows/);
      expect(reply.json.error.hint).to.contain('where id > $1');
      expect(reply.json.error.hint).to.contain('--max-answer');
    });

    it('pages through the whole collection as the hint says, each page under the cap', async () => {
      const limit = Number(/order id limit (\d+)/.exec((await query(server.url, 'get big')).json.error.hint)![1]);
      let last = 0;
      let rows = 0;
      for (;;) {
        const page = await query(server.url, `get big where id > $1 order id limit ${limit}`, [last]);
        expect(page.status, page.text.slice(0, 300)).to.equal(200);
        expect(page.text.length).to.be.at.most(64 * 1024);
        if (page.json.count === 0) break;
        rows += page.json.count;
        last = page.json.rows.at(-1).id;
      }
      expect(rows).to.equal(5_000);
    });

    it('answers an answer within the cap whole', async () => {
      const reply = await query(server.url, 'get big select n where n < 10 order n');
      expect(reply.status).to.equal(200);
      expect(reply.json.rows.map((row: { n: number }) => row.n)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
  });
});
