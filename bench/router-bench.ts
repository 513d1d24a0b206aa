/**
 * `make requests-bench`'s router hop: one row by id through fenec-router → tenant node, beside the same
 * tenant node asked directly, at 1 and 8 concurrent clients, for a router of one worker process and one
 * of two (`--workers 1`, `--workers 2`: node:cluster on one port), all in one run: the three targets are
 * measured in turns, in another order every round (harness.ts, loadInTurns). Each program is a process
 * of its own; the load generator (autocannon) runs in this one.
 *
 * Reported for each router: the median of the per-round ratios of its requests/s to the direct node's
 * (the runs of a round are next to each other in time), their spread, and the p50 the hop adds.
 *
 * Env: BENCH_SECONDS (default 5) per measured run, each after a 1 s warm-up; BENCH_ROUNDS (default 5).
 * Writes bench/results/router.json. Targets (issue 6): at 8 clients at least 0.4 of the direct
 * requests/s; at 1 client the p50 the hop adds under 0.3 ms. On 2 cores the router, the node and the
 * load generator share them: a second router worker has no core of its own there, so the figure for
 * two workers says what the cluster costs, and what it gains wants a machine with more cores.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  call,
  failuresLine,
  intEnv,
  LOAD_HEADER,
  loadCells,
  loadInTurns,
  medianMeasure,
  numberEnv,
  Programs,
  ratioCells,
  runInfo,
  table,
  verdict,
  writeResults,
  type LoadTarget,
  type Measure,
} from './harness.js';
import { pairedRatio } from './stats.js';

const SECONDS = numberEnv('BENCH_SECONDS', 5);
const ROUNDS = intEnv('BENCH_ROUNDS', 5, 1);
const CLIENTS = [1, 8] as const;
/** The router settings measured: `--workers N`. */
const WORKERS = [1, 2] as const;
const TOKEN = randomBytes(16).toString('hex');
const TENANT = 'bench';
const STATEMENT = 'get notes where id = $1';
const ROW_ID = 500;
const TARGET_RATIO = 0.4;
const TARGET_ADDED_P50_MS = 0.3;

interface Row extends Measure {
  /** Router rows: the median of the per-round ratios of requests/s to the direct node's, and their spread. */
  ratioToDirect?: number;
  ratioSpread?: [number, number];
  /** Router rows: p50 less the direct node's p50. */
  addedP50Ms?: number;
}

interface Hop {
  readonly workers: number;
  readonly ratioAt8: number;
  readonly ratioAt8Spread: [number, number];
  readonly addedP50MsAt1: number;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-router-bench-'));
  const programs = new Programs();
  try {
    const node = (
      await programs.start('dist/node/cli/fenec-server.js', ['--data-dir', dir, '--port', '0', '--http-token', TOKEN])
    ).url;
    const routers = await Promise.all(
      WORKERS.map(async (workers) => ({
        workers,
        url: (
          await programs.start(
            'dist/router/cli.js',
            ['--port', '0', '--http-token', TOKEN, '--nodes', `n=${node}`, '--workers', String(workers)],
            { listeners: workers },
          )
        ).url,
      })),
    );
    await call(node, TOKEN, 'PUT', `/t/${TENANT}`, { rate: 10_000_000, burst: 10_000_000 });
    await call(node, TOKEN, 'POST', `/t/${TENANT}/query`, { statement: 'create collection notes (title text, n int)' });
    const rows = Array.from({ length: 1000 }, (_, i) => `{title: "note ${i + 1}", n: ${i + 1}}`);
    await call(node, TOKEN, 'POST', `/t/${TENANT}/query`, { statement: `insert into notes [${rows.join(', ')}]` });
    const targets = [
      { name: 'direct', url: node },
      ...routers.map((r) => ({ name: routerName(r.workers), url: r.url })),
    ];

    const measures: Row[] = [];
    for (const clients of CLIENTS) {
      const [directRuns, ...routerRuns] = await loadInTurns(
        targets.map((t) => loadTarget(t.name, t.url, clients)),
        ROUNDS,
        SECONDS,
      );
      const direct = medianMeasure(directRuns!);
      measures.push(direct);
      for (const runs of routerRuns) {
        const paired = pairedRatio(
          runs.map((r) => r.requestsPerSecond),
          directRuns!.map((r) => r.requestsPerSecond),
        );
        const median = medianMeasure(runs);
        measures.push({
          ...median,
          ratioToDirect: paired.ratio,
          ratioSpread: paired.spread,
          addedP50Ms: median.p50Ms - direct.p50Ms,
        });
      }
    }
    report(measures);
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function routerName(workers: number): string {
  return `router, ${workers} worker${workers === 1 ? '' : 's'}`;
}

function loadTarget(name: string, base: string, clients: number): LoadTarget {
  return {
    target: name,
    url: `${base}/t/${TENANT}/query`,
    clients,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ statement: STATEMENT, params: [ROW_ID] }),
  };
}

function report(measures: readonly Row[]): void {
  const find = (target: string, clients: number): Row =>
    measures.find((m) => m.target === target && m.clients === clients)!;
  const hops: Hop[] = WORKERS.map((workers) => {
    const at8 = find(routerName(workers), 8);
    return {
      workers,
      ratioAt8: at8.ratioToDirect!,
      ratioAt8Spread: at8.ratioSpread!,
      addedP50MsAt1: find(routerName(workers), 1).addedP50Ms!,
    };
  });
  const lines = measures.map((m) => [
    ...loadCells(m),
    m.addedP50Ms === undefined ? '' : m.addedP50Ms.toFixed(3),
    ...ratioCells(m.ratioToDirect, m.ratioSpread),
  ]);
  const targets = hops.flatMap((hop) => [
    `target: ${routerName(hop.workers)} ≥ ${TARGET_RATIO} of direct at 8 clients — ${hop.ratioAt8.toFixed(2)} ${verdict(hop.ratioAt8 >= TARGET_RATIO)}`,
    `target: ${routerName(hop.workers)}, p50 added by the hop < ${TARGET_ADDED_P50_MS} ms at 1 client — ${hop.addedP50MsAt1.toFixed(3)} ms ${verdict(hop.addedP50MsAt1 < TARGET_ADDED_P50_MS)}`,
  ]);
  process.stdout.write(
    `\nrouter-bench: ${STATEMENT} [${ROW_ID}] on tenant ${TENANT}, router → node against the node directly, medians of ${ROUNDS} rounds of ${SECONDS} s, ` +
      `${os.cpus().length} cores, Node ${process.versions.node}\n\n` +
      `${table([...LOAD_HEADER, 'p50 added', 'vs direct', 'per round'], lines)}\n\n` +
      `${targets.join('\n')}\n` +
      failuresLine(measures),
  );
  writeResults('router', {
    ...runInfo('router'),
    loadAverage: os.loadavg(),
    seconds: SECONDS,
    rounds: ROUNDS,
    targets: { ratioAt8: TARGET_RATIO, addedP50MsAt1: TARGET_ADDED_P50_MS },
    hops,
    results: measures,
  });
}

await main();
