/**
 * `make scaling-bench`: do tenants on workers of their own scale with the cores (issue 29, item 4)? A tenant node
 * (`--workers W`) holds T tenants, each BENCH_ROWS rows of text and 384-dim vectors (make before-bench's `docs`).
 * `near` top 10 from BENCH_CLIENTS clients a tenant: one tenant alone, then every tenant at once, in turns,
 * BENCH_ROUNDS rounds of BENCH_SECONDS. It reports the requests a second of each (all tenants summed), the scaling
 * (together ÷ alone: T at best, where T cores are free for the workers), and the CPU a request by thread — the
 * serving thread, the workers, the rest (V8's and libuv's helpers) — with the load generator's own (this process:
 * autocannon). The serving thread's share bounds a node however many cores it has (a second ÷ its µs a request);
 * the workers' share, what each further core adds: so the same figures, taken here, say what a larger node serves.
 *
 * Flags: --workers N [2], --tenants N [the workers], --cores N (the node pinned to the first N cores with taskset,
 * this process to the others when any are left; default: no pinning). Env: BENCH_ROWS [20000], BENCH_CLIENTS [2],
 * BENCH_SECONDS [5], BENCH_ROUNDS [3]. Writes bench/results/scaling.json.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { docsWorkload, loadDocs, post, READS, untilIdle, type Server } from './docs-load.js';
import {
  coresFlag,
  intEnv,
  load,
  numberEnv,
  pinCores,
  Programs,
  progress,
  runInfo,
  table,
  threadTicks,
  WARM_UP_SECONDS,
  writeResults,
  type Measure,
} from './harness.js';
import { DIMS } from './search-data.js';
import { median } from './stats.js';

const { values: flags } = parseArgs({
  options: { workers: { type: 'string' }, tenants: { type: 'string' }, cores: { type: 'string' } },
});
const WORKERS = Number(flags.workers ?? 2);
const TENANTS = Number(flags.tenants ?? WORKERS);
const CORES = coresFlag(flags.cores);
if (!Number.isInteger(WORKERS) || WORKERS < 1)
  throw new Error(`--workers takes a whole number ≥ 1, not ${flags.workers}`);
if (!Number.isInteger(TENANTS) || TENANTS < 1)
  throw new Error(`--tenants takes a whole number ≥ 1, not ${flags.tenants}`);

const ROWS = intEnv('BENCH_ROWS', 20_000, 100);
const CLIENTS = intEnv('BENCH_CLIENTS', 2, 1);
const SECONDS = numberEnv('BENCH_SECONDS', 5);
const ROUNDS = intEnv('BENCH_ROUNDS', 3, 1);
const TOKEN = randomBytes(16).toString('hex');
const AUTH = { authorization: `Bearer ${TOKEN}` };
const THREADS = ['serving', 'workers', 'helpers'] as const;
type Thread = (typeof THREADS)[number];
const programs = new Programs();

/** CPU time so far of the node's threads, in seconds: the serving thread (the process's id), the workers, the rest. */
function nodeCpu(pid: number): Record<Thread, number> {
  const ticks = threadTicks(pid, (tid, name) =>
    tid === pid ? 'serving' : name === 'WorkerThread' ? 'workers' : 'helpers',
  );
  return byThread((thread) => (ticks.get(thread) ?? 0) / 100);
}

/** A figure for each of THREADS. */
function byThread(figure: (thread: Thread) => number): Record<Thread, number> {
  return Object.fromEntries(THREADS.map((thread) => [thread, figure(thread)])) as Record<Thread, number>;
}

/** This process's CPU time so far, in seconds: the load generator's. */
function generatorCpu(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

interface Run {
  /** Requests a second, every tenant's summed. */
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  /** µs of CPU a request answered, by thread of the node, and the generator's. */
  readonly cpuUs: Record<Thread | 'generator', number>;
  readonly failed: number;
}

/** `near` from CLIENTS clients to each of `servers` at once for `seconds`. */
async function nearLoad(servers: readonly Server[], body: string, pid: number, seconds: number): Promise<Run> {
  const node0 = nodeCpu(pid);
  const gen0 = generatorCpu();
  const runs: Measure[] = await Promise.all(
    servers.map((server) =>
      load({ target: server.name, url: server.query, clients: CLIENTS, seconds, headers: AUTH, body }),
    ),
  );
  const node1 = nodeCpu(pid);
  const gen1 = generatorCpu();
  const answered = runs.reduce((sum, m) => sum + m.requestsPerSecond * seconds, 0);
  const us = (s: number): number => Math.round((s * 1e6) / Math.max(1, answered));
  return {
    requestsPerSecond: runs.reduce((sum, m) => sum + m.requestsPerSecond, 0),
    p50Ms: median(runs.map((m) => m.p50Ms)),
    cpuUs: {
      ...byThread((thread) => us(node1[thread] - node0[thread])),
      generator: us(gen1 - gen0),
    },
    failed: runs.reduce((sum, m) => sum + m.failed, 0),
  };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-scaling-'));
  const pin = pinCores(CORES);
  try {
    const node = await programs.start(
      'dist/node/cli/fenec-server.js',
      ['--data-dir', dir, '--port', '0', '--http-token', TOKEN, '--workers', String(WORKERS), '--max-body', '16mb'],
      { pin },
    );
    const pid = node.child.pid!;
    const servers: Server[] = [];
    for (let t = 0; t < TENANTS; t++) {
      const name = `t${t}`;
      // Generous rates: this bench measures work, not the request quotas.
      await post(`${node.url}/t/${name}`, 'PUT', { rate: 1_000_000, burst: 1_000_000, costMs: 0, maxRows: 0 }, TOKEN);
      servers.push({ name, program: node, query: `${node.url}/t/${name}/query` });
    }
    const work = docsWorkload(ROWS, 1);
    progress(`loading ${ROWS} rows into each of ${TENANTS} tenants`);
    for (const server of servers) await loadDocs(server, work, ROWS, TOKEN);
    await untilIdle(servers[0]!);
    const body = JSON.stringify({ statement: READS.near, params: [Array.from(work.queries.subarray(0, DIMS))] });
    await nearLoad(servers, body, pid, WARM_UP_SECONDS);

    const alone: Run[] = [];
    const together: Run[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // In turns, which goes first changing every round: a drift of the machine's falls on both.
      const order = round % 2 === 0 ? [false, true] : [true, false];
      for (const all of order) {
        const run = await nearLoad(all ? servers : servers.slice(0, 1), body, pid, SECONDS);
        (all ? together : alone).push(run);
        progress(
          `round ${round + 1}, ${all ? `${TENANTS} tenants at once` : 'one tenant alone'}: ${Math.round(run.requestsPerSecond)} req/s, ` +
            `CPU a request: serving ${run.cpuUs.serving} µs, workers ${run.cpuUs.workers}, helpers ${run.cpuUs.helpers}, ` +
            `generator ${run.cpuUs.generator}`,
        );
      }
    }
    report(alone, together);
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The median of each figure over the rounds. */
function medianRun(runs: readonly Run[]): Run {
  const cpuUs = Object.fromEntries(
    [...THREADS, 'generator'].map((k) => [k, median(runs.map((r) => r.cpuUs[k as Thread]))]),
  ) as Run['cpuUs'];
  return {
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    cpuUs,
    failed: runs.reduce((sum, r) => sum + r.failed, 0),
  };
}

function report(aloneRuns: readonly Run[], togetherRuns: readonly Run[]): void {
  const alone = medianRun(aloneRuns);
  const together = medianRun(togetherRuns);
  const scaling = together.requestsPerSecond / alone.requestsPerSecond;
  const rounds = togetherRuns.map((r, i) => r.requestsPerSecond / aloneRuns[i]!.requestsPerSecond);
  const row = (name: string, run: Run): string[] => [
    name,
    String(Math.round(run.requestsPerSecond)),
    run.p50Ms.toFixed(3),
    ...[...THREADS, 'generator'].map((k) => String(run.cpuUs[k as Thread])),
  ];
  // A node's ceiling: its one serving thread's second over its share of a request; a core's worth of workers,
  // a second over theirs. The helpers run beside both, on whichever core is free.
  const servingCeiling = 1e6 / together.cpuUs.serving;
  const perWorkerCore = 1e6 / together.cpuUs.workers;
  const cores16 = Math.min(servingCeiling, 15 * perWorkerCore);
  // Cores kept busy, the generator's share included: near the machine's count, the cores bound the scaling.
  const busy = (run: Run): number =>
    (run.requestsPerSecond * Object.values(run.cpuUs).reduce((sum, us) => sum + us, 0)) / 1e6;
  process.stdout.write(
    `\nscaling-bench: near top 10, ${ROWS} rows × ${DIMS} a tenant, ${CLIENTS} clients a tenant, --workers ${WORKERS}, ` +
      `${TENANTS} tenants, ${os.cpus().length} cores${CORES === undefined ? '' : `, the node on ${CORES}`}, Node ${process.versions.node}\n\n` +
      table(
        ['', 'req/s', 'p50 ms', 'serving µs', 'workers µs', 'helpers µs', 'generator µs'],
        [row('one tenant alone', alone), row(`${TENANTS} tenants at once`, together)],
      ) +
      `\n\n${TENANTS} tenants at once ÷ one alone: ${scaling.toFixed(2)} (rounds ${rounds.map((r) => r.toFixed(2)).join(', ')}; ` +
      `at best ${Math.min(TENANTS, WORKERS, CORES ?? os.cpus().length)}, a free core each); cores kept busy, the generator's included: ` +
      `${busy(alone).toFixed(2)} and ${busy(together).toFixed(2)} of ${os.cpus().length}\n` +
      `at this run's CPU a request, a node's serving thread carries at most ${Math.round(servingCeiling)} near a second ` +
      `and a worker's core ${Math.round(perWorkerCore)}: a 16-core node (15 workers) about ${Math.round(cores16)}, ` +
      `bound by ${cores16 === servingCeiling ? 'the serving thread' : 'the workers'} (a busier serving thread costs ` +
      `less a request: it takes several in a turn)\n` +
      (alone.failed + together.failed > 0
        ? `${alone.failed + together.failed} requests failed: the figures are not to be trusted\n`
        : ''),
  );
  writeResults('scaling', {
    ...runInfo('scaling'),
    rows: ROWS,
    clients: CLIENTS,
    workers: WORKERS,
    tenants: TENANTS,
    nodeCores: CORES,
    alone,
    together,
    scaling,
    scalingRounds: rounds,
    servingCeilingPerSecond: servingCeiling,
    perWorkerCorePerSecond: perWorkerCore,
    sixteenCoresPerSecond: cores16,
    busyCores: { alone: busy(alone), together: busy(together) },
  });
}

await main();
