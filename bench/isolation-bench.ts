/**
 * `make isolation-bench`: does one tenant's work stall another's? A tenant node (fenec-server --data-dir) holds `heavy`
 * (BENCH_ROWS rows, default 100 000: Zipf text `@text`, 384-dim clustered vectors `@hnsw`) and `quiet` (1 000 rows).
 * Quiet's row-by-id p50/p99, one client, is measured alone and beside each of:
 *   (a) two clients of `fuse` on heavy;
 *   (b) a loop of heavy reads past the answer cap (heavy's maxAnswerBytes set to 1 MB);
 *   (c) a BENCH_ROWS-row load into a new heavy collection through `fenec import` (its own process, as a
 *       loader is), until its HNSW index holds every row — quiet is measured for the whole of it;
 *   (d) heavy statements hitting the time limit (heavy's statementTimeoutMs set to 1 s, or to a third
 *       of what the statement takes unstopped when that is less: at a small BENCH_ROWS). heavy's own collection is
 *       loaded the same way, and its index built, before any phase. Throughout, the serving thread's event-loop delay
 *       max is read from /_metrics (prom-client's nodejs_eventloop_lag_max_seconds, monitorEventLoopDelay, reset at
 *       each scrape), beside a bystander's (bench/bystander.ts: a process doing nothing but a 1 ms timer on the same
 *       cores) and the steal time the host took in the same window, so that a stall of the machine's is told apart
 *       from one of the server's. Then one tenant's row-by-id throughput at 8 clients with --workers 1, 2 and 4,
 *       beside a bare node:http server (bench/bare-server.ts), and its p50 at one client, each run after a 1 s
 *       warm-up; and heavy's fuse, near and match p50 at one client (their raw FTS5/Faiss baselines are make
 *       search-bench's).
 *
 * Targets (issue 11): quiet's p99 beside ≤ 2× alone in (a)–(d); event-loop delay max ≤ 20 ms; 8-client throughput ≥ 0.6
 * of bare node:http; 1-client p50 ≤ 0.2 ms.
 *
 * Env: BENCH_ROWS (100000), BENCH_SECONDS (5) per measured run. Writes bench/results/isolation.json. Run it on a
 * machine doing nothing else: every figure here is about contention.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  call,
  fenecImport,
  intEnv,
  load,
  numberEnv,
  Programs,
  progress,
  request,
  warmedLoad,
  writeNdjson,
  writeResults,
  type Measure,
  type Program,
} from './harness.js';
import { vectorJson, zipfWorkload } from './search-data.js';
import { median, percentile } from './stats.js';

const ROWS = intEnv('BENCH_ROWS', 100_000, 1000);
const SECONDS = numberEnv('BENCH_SECONDS', 5);
const DIMS = 384;
const QUIET_ROWS = 1000;
const TOKEN = randomBytes(16).toString('hex');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const ROW_BY_ID = JSON.stringify({ statement: 'get notes where id = $1', params: [500] });
const TARGET_P99_RATIO = 2;
const TARGET_LOOP_DELAY_MS = 20;
const TARGET_THROUGHPUT_RATIO = 0.6;
const TARGET_P50_MS = 0.2;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-isolation-'));
  const programs = new Programs();
  try {
    const {
      bodies: texts,
      vectors,
      queries,
      words,
    } = zipfWorkload({
      seed: 11,
      rows: ROWS,
      queries: 64,
      vocabulary: 5000,
      zipfExponent: 1.1,
      minWords: 8,
      maxWords: 20,
      dims: DIMS,
      clusters: 32,
      spread: 0.05,
    });

    const bystander = await programs.start('dist/bench/bystander.js', []);
    const node = await startNode(programs, path.join(dir, 'node'), 2);
    await admin(node, 'quiet', {});
    await admin(node, 'heavy', {});
    await seedQuiet(node);
    const answer = await statement(node, 'quiet', 'get notes where id = $1', [500]);
    const rows = path.join(dir, 'heavy.ndjson');
    // heavy's rows as NDJSON, as a loader would have them.
    writeNdjson(rows, texts.length, (i) => ({ body: texts[i]!, v: vectorJson(vectors, i, DIMS) }));
    progress(`loading ${ROWS} heavy rows (fenec import, until the index holds them)`);
    await loadHeavy(node, 'docs', rows);

    const fuse = (i: number): string =>
      JSON.stringify({
        statement: 'get docs select id match body $1 near v $2 fuse limit 10',
        params: [
          words[i % words.length]!.join(' '),
          Array.from(queries.subarray((i % 64) * DIMS, ((i % 64) + 1) * DIMS)),
        ],
      });
    const phases: Record<string, unknown> = {};
    const alone = await quietBeside(node, bystander, 'alone', async () => undefined);
    phases.alone = alone;
    phases.a_fuse = await quietBeside(node, bystander, '(a) 2 clients of fuse', () =>
      load({
        target: 'fuse',
        url: `${node.url}/t/heavy/query`,
        clients: 2,
        seconds: SECONDS + 1,
        headers: AUTH,
        body: fuse(0),
      }),
    );
    await admin(node, 'heavy', { maxAnswerBytes: 1024 * 1024 });
    phases.b_answer_cap = await quietBeside(node, bystander, '(b) reads past the answer cap', () =>
      loop(node, SECONDS + 1, JSON.stringify({ statement: 'get docs select *' }), 413),
    );
    await admin(node, 'heavy', {});
    phases.c_load = await quietBeside(
      node,
      bystander,
      '(c) a load with its HNSW build and snapshot',
      () => loadHeavy(node, 'more', rows),
      { whole: true },
    );
    const slow = `get docs where ${Array.from({ length: 30 }, (_, i) => `${'lower('.repeat(10)}body${')'.repeat(10)} like "%never-${i}%"`).join(' or ')} count`;
    await admin(node, 'heavy', { statementTimeoutMs: await timeLimitFor(node, slow) });
    phases.d_time_limit = await quietBeside(node, bystander, '(d) statements hitting the time limit', () =>
      loop(node, SECONDS + 1, JSON.stringify({ statement: slow }), 504),
    );
    await admin(node, 'heavy', {});

    const search: Record<string, number> = {};
    for (const [name, body] of [
      ['fuse', fuse(1)],
      [
        'near',
        JSON.stringify({
          statement: 'get docs select id near v $1 limit 10',
          params: [Array.from(queries.subarray(0, DIMS))],
        }),
      ],
      [
        'match',
        JSON.stringify({ statement: 'get docs select id match body $1 limit 10', params: [words[0]!.join(' ')] }),
      ],
    ] as const) {
      search[name] = (
        await load({
          target: name,
          url: `${node.url}/t/heavy/query`,
          clients: 1,
          seconds: SECONDS,
          headers: AUTH,
          body,
        })
      ).p50Ms;
    }
    await programs.stop(node);

    const throughput: Record<string, unknown> = {};
    const bare = await programs.start('dist/bench/bare-server.js', [], { env: { BARE_ANSWER: answer } });
    const bareRun = await rowById(bare.url, 8);
    throughput.bare = bareRun;
    for (const workers of [1, 2, 4]) {
      const one = await startNode(programs, path.join(dir, 'node'), workers);
      const eight = await rowById(`${one.url}/t/quiet`, 8);
      const single = await rowById(`${one.url}/t/quiet`, 1);
      throughput[`workers_${workers}`] = {
        clients8: eight,
        ratioToBare: eight.requestsPerSecond / bareRun.requestsPerSecond,
        clients1P50Ms: single.p50Ms,
      };
      await programs.stop(one);
    }
    const results = {
      rows: ROWS,
      seconds: SECONDS,
      loadAverage: os.loadavg(),
      phases,
      search,
      throughput,
      targets: {
        p99Ratio: TARGET_P99_RATIO,
        loopDelayMs: TARGET_LOOP_DELAY_MS,
        throughputRatio: TARGET_THROUGHPUT_RATIO,
        p50Ms: TARGET_P50_MS,
      },
    };
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    writeResults('isolation', results);
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

interface Beside {
  readonly quiet: Measure;
  readonly p99RatioToAlone?: number;
  readonly loopDelayMaxMs: number;
  /** The bystander's loop delay max in the same window (bench/bystander.ts): the machine's share of a stall. */
  readonly bystanderLoopDelayMaxMs: number;
  /** CPU time the host took from this machine's cores in the window (steal, /proc/stat), all cores summed. */
  readonly stealMs: number;
}

let aloneP99: number | undefined;

/**
 * Quiet's row-by-id at one client while `heavy` runs — for SECONDS, or (`whole`) in runs of SECONDS
 * until heavy's work is done, its percentiles over every request of them — and the serving thread's
 * largest event-loop delay meanwhile.
 */
async function quietBeside(
  node: Program,
  bystander: Program,
  name: string,
  heavy: () => Promise<unknown>,
  options: { whole?: boolean } = {},
): Promise<Beside> {
  await loopDelayMaxMs(node);
  await bystanderMaxMs(bystander);
  const stealBefore = stealMs();
  let done = false;
  const background = heavy().finally(() => (done = true));
  const runs: Measure[] = [];
  const latencies: number[] = [];
  do {
    runs.push(
      await load({
        target: `quiet, ${name}`,
        url: `${node.url}/t/quiet/query`,
        clients: 1,
        seconds: SECONDS,
        headers: AUTH,
        body: ROW_BY_ID,
        latencies,
      }),
    );
  } while (options.whole === true && !done);
  await background;
  const loopDelay = await loopDelayMaxMs(node);
  const quiet = runs.length === 1 ? runs[0]! : merged(runs, latencies);
  const alone = (aloneP99 ??= quiet.p99Ms);
  const result: Beside = {
    quiet,
    p99RatioToAlone: quiet.p99Ms / alone,
    loopDelayMaxMs: loopDelay,
    bystanderLoopDelayMaxMs: await bystanderMaxMs(bystander),
    stealMs: stealMs() - stealBefore,
  };
  progress(
    `${name}: quiet p50 ${quiet.p50Ms.toFixed(2)} ms, p99 ${quiet.p99Ms.toFixed(2)} ms (×${result.p99RatioToAlone!.toFixed(2)}${runs.length > 1 ? `, ${runs.length} runs` : ''}), loop delay max ${loopDelay.toFixed(1)} ms (a bystander's ${result.bystanderLoopDelayMaxMs.toFixed(1)} ms; steal ${result.stealMs} ms)`,
  );
  return result;
}

/** Runs of one target as one: requests per second their median, the percentiles over all their requests. */
function merged(runs: readonly Measure[], latencies: number[]): Measure {
  return {
    target: runs[0]!.target,
    clients: runs[0]!.clients,
    requestsPerSecond: median(runs.map((run) => run.requestsPerSecond)),
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    failed: runs.reduce((sum, run) => sum + run.failed, 0),
  };
}

/** The largest event-loop delay since the last scrape (prom-client resets its histogram at each). */
async function loopDelayMaxMs(node: Program): Promise<number> {
  const metrics = await (await fetch(`${node.url}/_metrics`, { headers: AUTH })).text();
  const value = /^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(metrics)?.[1];
  return value === undefined ? NaN : Number(value) * 1000;
}

/** The bystander's largest event-loop delay since the last read. */
async function bystanderMaxMs(bystander: Program): Promise<number> {
  return ((await (await fetch(bystander.url)).json()) as { maxMs: number }).maxMs;
}

/** The machine's steal time so far, every core summed, in ms (/proc/stat counts it in USER_HZ, 100 a second). */
function stealMs(): number {
  const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
  return Number(cpu[8] ?? 0) * 10;
}

/** Sends `body` to heavy, one after another, for `seconds`; every answer must have `status`. */
async function loop(node: Program, seconds: number, body: string, status: number): Promise<void> {
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    const response = await fetch(`${node.url}/t/heavy/query`, { method: 'POST', headers: AUTH, body });
    await response.arrayBuffer();
    if (response.status !== status && response.status !== 429)
      throw new Error(`heavy answered ${response.status}, not ${status}`);
  }
}

/**
 * Heavy's time limit for phase (d): 1 s, or a third of what `slow` takes unstopped when that is less
 * (its cost grows with heavy's rows: at a small BENCH_ROWS it would end inside 1 s, and never be stopped).
 */
async function timeLimitFor(node: Program, slow: string): Promise<number> {
  const t0 = performance.now();
  const response = await fetch(`${node.url}/t/heavy/query`, {
    method: 'POST',
    headers: AUTH,
    body: JSON.stringify({ statement: slow }),
  });
  await response.arrayBuffer();
  const ms = performance.now() - t0;
  // 504: past the default limit of 5 s, so well past 1 s.
  if (response.status !== 200 && response.status !== 504)
    throw new Error(`heavy answered ${response.status} to the slow statement`);
  return response.status === 504 ? 1000 : Math.max(1, Math.min(1000, Math.floor(ms / 3)));
}

function rowById(url: string, clients: number): Promise<Measure> {
  return warmedLoad({
    target: `row by id, ${clients} client(s)`,
    url: `${url}/query`,
    clients,
    seconds: SECONDS,
    headers: AUTH,
    body: ROW_BY_ID,
  });
}

async function seedQuiet(node: Program): Promise<void> {
  await statement(node, 'quiet', 'create collection notes (title text, body text, n int)');
  const rows = Array.from({ length: QUIET_ROWS }, (_, i) => ({
    title: `note ${i + 1}`,
    body: `the body of note ${i + 1}, a few words long`,
    n: i + 1,
  }));
  await statement(node, 'quiet', 'insert into notes $1', [rows]);
}

/**
 * Loads `file` into heavy's `collection` with `fenec import` (another process), which waits until the index holds every
 * row.
 */
async function loadHeavy(node: Program, collection: string, file: string): Promise<void> {
  await statement(
    node,
    'heavy',
    `create collection if not exists ${collection} (body text @text, v vector<${DIMS}> @hnsw(cosine))`,
  );
  await fenecImport(`${node.url}/t/heavy`, collection, file, TOKEN);
}

function statement(node: Program, tenant: string, text: string, params: unknown[] = []): Promise<string> {
  return request(node.url, TOKEN, 'POST', `/t/${tenant}/query`, { statement: text, params });
}

function admin(node: Program, tenant: string, quotas: Record<string, number>): Promise<unknown> {
  // Generous rates: this bench measures work, not the request quotas.
  return call(node.url, TOKEN, 'PUT', `/t/${tenant}`, {
    rate: 1_000_000,
    burst: 1_000_000,
    costMs: 0,
    maxRows: 0,
    ...quotas,
  });
}

function startNode(programs: Programs, dir: string, workers: number): Promise<Program> {
  return programs.start('dist/node/cli/fenec-server.js', [
    '--data-dir',
    dir,
    '--port',
    '0',
    '--workers',
    String(workers),
    '--max-body',
    '16mb',
    '--http-token',
    TOKEN,
  ]);
}

await main();
