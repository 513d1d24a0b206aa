/**
 * `make before-bench`: this checkout's fenec-server against the build before the worker threads (commit
 * BEFORE_COMMIT, checked out and built into bench/before/ by bench/before.sh, on its own Node.js), in one run on
 * the same data, as ratios main ÷ before (issue 29):
 *
 * - `near`, filtered `near`, `match`, `fuse` (top 10) over BENCH_ROWS rows (default 50 000) of
 *   `docs (body text @text, vec vector<384> @hnsw(cosine), grp int @hash)` (bench/search-data.ts), one client over
 *   HTTP, p50 of BENCH_QUERIES queries (default 200), the two servers asked query by query in turns;
 * - each server's RSS once the rows are in and the index holds them;
 * - row by id (`get notes where id = $1` over 1 000 rows) at 1 and 8 clients (autocannon, in turns with a bare
 *   node:http server answering the same JSON), with the CPU each request costs the server: its process's user +
 *   system time from /proc (every thread) over the run, divided by the requests it answered; each server first
 *   warmed until that CPU stops falling (`settle`).
 *
 * Flags: `--workers N[,N…]` (this checkout's worker threads, each count a server of its own beside the build before,
 * which has none; default `0,1` for a one-file server — its statements on the serving thread, and in a worker thread
 * — and `1` for a tenant node), `--cores N` (the servers are
 * pinned to the first N cores with taskset, the load generator to the others when any are left; default: no pinning),
 * `--tenant` (this checkout as a tenant node, the statements under /t/bench/, rather than a one-file server).
 * Env: BENCH_ROWS, BENCH_QUERIES, BENCH_SECONDS (default 3) and BENCH_ROUNDS (default 3) of the row-by-id runs,
 * BEFORE_DIR (default bench/before), BEFORE_NODE (default: /usr/bin/node, the Node.js 20 it ran on, when present).
 * Writes bench/results/before.json.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  coresFlag,
  cpuSeconds,
  failuresLine,
  intEnv,
  load,
  numberEnv,
  pinCores,
  progress,
  Programs,
  ROOT,
  runInfo,
  settle,
  table,
  turnOrder,
  WARM_UP_SECONDS,
  writeResults,
  type LoadTarget,
  type Measure,
} from './harness.js';
import {
  docsWorkload,
  loadDocs,
  post as postWith,
  READS,
  rssMb,
  statement as statementWith,
  type ReadName,
  type Server,
} from './docs-load.js';
import { DIMS, type Workload } from './search-data.js';
import { median, percentile } from './stats.js';

const { values: flags } = parseArgs({
  options: {
    workers: { type: 'string' },
    cores: { type: 'string' },
    tenant: { type: 'boolean', default: false },
  },
});
const WORKERS = (flags.workers ?? (flags.tenant ? '1' : '0,1')).split(',').map(Number);
const CORES = coresFlag(flags.cores);
if (WORKERS.some((n) => !Number.isInteger(n) || n < (flags.tenant ? 1 : 0)))
  throw new Error(`--workers takes whole numbers (≥ 1 on a tenant node), not ${flags.workers}`);

const ROWS = intEnv('BENCH_ROWS', 50_000, 1_000);
const QUERIES = intEnv('BENCH_QUERIES', 200, 10);
const SECONDS = numberEnv('BENCH_SECONDS', 3);
// Odd: the median of two rounds is the higher one (stats.ts), the worse p50 and the better rate of each server.
const ROUNDS = intEnv('BENCH_ROUNDS', 3, 1);
const BEFORE_DIR = path.resolve(ROOT, process.env.BEFORE_DIR ?? 'bench/before');
const BEFORE_NODE = process.env.BEFORE_NODE ?? (fs.existsSync('/usr/bin/node') ? '/usr/bin/node' : process.execPath);
const TOKEN = randomBytes(16).toString('hex');
const TENANT = 'bench';
const NOTES = 1_000;
const ROW_ID = 500;
const ROW_BY_ID = 'get notes where id = $1';
const programs = new Programs();

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(BEFORE_DIR, 'dist/node/cli/fenec-server.js')))
    throw new Error(`${BEFORE_DIR} holds no build: run bash bench/before.sh (make before-bench does)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-before-'));
  const pin = pinCores(CORES);
  try {
    const mains: Server[] = [];
    for (const workers of WORKERS) mains.push(await startMain(dir, pin, workers));
    const before = await startBefore(dir, pin);
    const servers = [...mains, before];
    const work = docsWorkload(ROWS, QUERIES);
    progress(`loading ${ROWS} rows into both`);
    const loadSeconds = await Promise.all(servers.map((s) => loadDocs(s, work, ROWS, TOKEN)));
    const rss = servers.map((s) => rssMb(s.program.child.pid!));
    progress(`RSS after the load: ${rss.map((mb) => `${mb.toFixed(0)} MB`).join(', ')}`);
    const reads = await measureReads(servers, work);
    const answer = await seedNotes(servers);
    const bare = await programs.start('dist/bench/bare-server.js', [], { env: { BARE_ANSWER: answer }, pin });
    const byId = await measureRowById([...servers, { name: 'bare node:http', program: bare, query: `${bare.url}/` }]);
    report({ servers, loadSeconds, rss, reads, byId });
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function startMain(dir: string, pin: string | undefined, workers: number): Promise<Server> {
  const own = path.join(dir, `main-${workers}`);
  const where = flags.tenant ? ['--data-dir', own] : ['--file', `${own}.fenec`];
  if (flags.tenant) fs.mkdirSync(own);
  const program = await programs.start(
    'dist/node/cli/fenec-server.js',
    [...where, '--port', '0', '--http-token', TOKEN, '--workers', String(workers), '--tenant-rate', '1000000'],
    { pin },
  );
  const name = `main --workers ${workers}`;
  if (!flags.tenant) return { name, program, query: `${program.url}/query` };
  await post(`${program.url}/t/${TENANT}`, 'PUT', {});
  return { name, program, query: `${program.url}/t/${TENANT}/query` };
}

async function startBefore(dir: string, pin: string | undefined): Promise<Server> {
  const program = await programs.start(
    path.join(BEFORE_DIR, 'dist/node/cli/fenec-server.js'),
    ['--file', path.join(dir, 'before.fenec'), '--port', '0', '--http-token', TOKEN],
    { node: BEFORE_NODE, pin },
  );
  return { name: 'before', program, query: `${program.url}/query` };
}

/** Each read, query by query, each server in turn (the order swapped every query), after 20 unmeasured. */
async function measureReads(servers: readonly Server[], work: Workload) {
  const out: Record<ReadName, number[]> = { near: [], 'filtered near': [], match: [], fuse: [] };
  for (const name of Object.keys(READS) as ReadName[]) {
    const times = servers.map((): number[] => []);
    for (let q = -20; q < QUERIES; q++) {
      const i = ((q % QUERIES) + QUERIES) % QUERIES;
      const vector = Array.from(work.queries.subarray(i * DIMS, (i + 1) * DIMS));
      const words = work.words[i]!.join(' ');
      const params = name === 'match' ? [words] : name === 'fuse' ? [words, vector] : [vector];
      const body = JSON.stringify({ statement: READS[name], params });
      for (const s of turnOrder(servers.length, q + 20)) {
        const t0 = performance.now();
        await post(servers[s]!.query, 'POST', body);
        if (q >= 0) times[s]!.push(performance.now() - t0);
      }
    }
    for (let s = 0; s < servers.length; s++) out[name].push(percentile(times[s]!, 0.5));
    progress(`${name}: p50 ${out[name].map((ms) => ms.toFixed(3)).join(' / ')} ms`);
  }
  return out;
}

async function seedNotes(servers: readonly Server[]): Promise<string> {
  let answer = '';
  for (const server of servers) {
    await statement(server, 'create collection notes (title text, body text, n int)');
    const rows = Array.from(
      { length: NOTES },
      (_, i) => `{title: "note ${i + 1}", body: "the body of note ${i + 1}, a few words long", n: ${i + 1}}`,
    );
    await statement(server, `insert into notes [${rows.join(', ')}]`);
    answer = await post(server.query, 'POST', JSON.stringify({ statement: ROW_BY_ID, params: [ROW_ID] }));
  }
  return answer;
}

interface ByIdRun extends Measure {
  /** The server's CPU (every thread) per answered request, in µs. */
  readonly cpuUs: number;
}

/** A row-by-id run's target at `clients`: the statement, its parameter and the server token. */
function rowByIdRun(server: Server, clients: number): LoadTarget {
  return {
    target: server.name,
    url: server.query,
    clients,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ statement: ROW_BY_ID, params: [ROW_ID] }),
  };
}

/** Each server settled at 8 clients (harness.ts, settle), one after the other. */
async function settleAll(servers: readonly Server[]): Promise<void> {
  for (const server of servers) await settle(rowByIdRun(server, 8), () => cpuSeconds(server.program.child.pid!));
}

/** Row by id at 1 and 8 clients once each server has settled, in turns, ROUNDS rounds; the median of each figure. */
async function measureRowById(servers: readonly Server[]): Promise<ByIdRun[][]> {
  await settleAll(servers);
  const out: ByIdRun[][] = [];
  for (const clients of [1, 8]) {
    const runs = servers.map((): ByIdRun[] => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (const s of turnOrder(servers.length, round)) {
        const server = servers[s]!;
        const run = rowByIdRun(server, clients);
        await load({ ...run, seconds: WARM_UP_SECONDS });
        const cpu0 = cpuSeconds(server.program.child.pid!);
        const m = await load({ ...run, seconds: SECONDS });
        const cpu = cpuSeconds(server.program.child.pid!) - cpu0;
        runs[s]!.push({ ...m, cpuUs: (cpu * 1e6) / Math.max(1, m.requestsPerSecond * SECONDS) });
        progress(`${server.name}, ${clients} client(s): ${Math.round(m.requestsPerSecond)} req/s, p50 ${m.p50Ms}`);
      }
    }
    out.push(
      runs.map((r) => ({
        ...r[0]!,
        requestsPerSecond: median(r.map((x) => x.requestsPerSecond)),
        p50Ms: median(r.map((x) => x.p50Ms)),
        p99Ms: median(r.map((x) => x.p99Ms)),
        cpuUs: median(r.map((x) => x.cpuUs)),
        failed: r.reduce((t, x) => t + x.failed, 0),
      })),
    );
  }
  return out;
}

function report(r: {
  servers: readonly Server[];
  loadSeconds: number[];
  rss: number[];
  reads: Record<ReadName, number[]>;
  byId: ByIdRun[][];
}): void {
  const mains = r.servers.length - 1;
  /** A figure of each main, the build before's, each main's ÷ the build before's, then the bare server's (or ''). */
  const row = (what: string, figures: readonly number[], digits: number, bare?: number): string[] => {
    const before = figures[mains]!;
    return [
      what,
      ...figures.map((f) => f.toFixed(digits)),
      ...figures.slice(0, mains).map((f) => (f / before).toFixed(2)),
      bare === undefined ? '' : bare.toFixed(digits),
    ];
  };
  const lines: string[][] = [];
  for (const name of Object.keys(READS) as ReadName[]) lines.push(row(`${name} p50 ms`, r.reads[name], 3));
  lines.push(row('RSS after the load, MB', r.rss, 0));
  lines.push(row('load until indexed, s', r.loadSeconds, 1));
  for (const runs of r.byId) {
    const servers = runs.slice(0, -1);
    const bare = runs.at(-1)!;
    const c = bare.clients;
    lines.push(
      row(
        `row by id, ${c} client(s), req/s`,
        servers.map((m) => m.requestsPerSecond),
        0,
        bare.requestsPerSecond,
      ),
    );
    lines.push(
      row(
        `row by id, ${c} client(s), p50 ms`,
        servers.map((m) => m.p50Ms),
        3,
        bare.p50Ms,
      ),
    );
    lines.push(
      row(
        `row by id, ${c} client(s), CPU µs/request`,
        servers.map((m) => m.cpuUs),
        0,
        bare.cpuUs,
      ),
    );
  }
  const names = r.servers.slice(0, mains).map((s) => s.name);
  const shape = flags.tenant ? 'a tenant node' : 'a one-file server';
  process.stdout.write(
    `\nbefore-bench: main as ${shape} ÷ the build before the worker threads (${BEFORE_DIR}), ${ROWS} rows × ${DIMS}, ` +
      `${QUERIES} queries each, ${os.cpus().length} cores${CORES === undefined ? '' : `, servers on ${CORES}`}, ` +
      `Node ${process.versions.node} (before: ${execFileSync(BEFORE_NODE, ['--version']).toString().trim()})\n\n` +
      `${table(['', ...names, 'before', ...names.map((n) => `${n} ÷ before`), 'bare node:http'], lines)}\n\n` +
      `row by id, the seed's anchor (an M1): 0.027 ms a request, 122 000 requests a second at 8 clients\n` +
      failuresLine(r.byId.flat()),
  );
  const byName = (figures: readonly number[]): Record<string, number> =>
    Object.fromEntries(r.servers.map((s, i) => [s.name, figures[i]!]));
  writeResults('before', {
    ...runInfo('before'),
    rows: ROWS,
    queries: QUERIES,
    workers: WORKERS,
    cores: CORES,
    tenant: flags.tenant,
    rssMb: byName(r.rss),
    loadSeconds: byName(r.loadSeconds),
    readsP50Ms: r.reads,
    rowById: r.byId,
  });
}

function post(url: string, method: string, body: unknown): Promise<string> {
  return postWith(url, method, body, TOKEN);
}

function statement(server: Server, text: string): Promise<any> {
  return statementWith(server, text, TOKEN);
}

await main();
