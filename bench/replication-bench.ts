/**
 * `make requests-bench`, its last part: what replication (`--nats`, issue 31) costs a write. One tenant node with
 * `--nats` on a three-server JetStream cluster (three replicas, 127.0.0.1) beside one without, each asked in turns:
 *
 * - a write: `insert into notes {n: $1, body: $2}` one at a time from one client (p50, p99, writes/s);
 * - a bulk import: `insert into notes $1` of BENCH_BATCH rows a request (rows/s), sent as `fenec import` sends them
 *   (node/cli/server-client.ts's OrderedRequests: the next batch on a replicated node's 102, before the log's ack),
 *   and one batch at a time, each after the answer before it.
 *
 * Goals (issue 31): a replicated write's p50 within +1.5 ms of an unreplicated one; a bulk import at least 0.7 of
 * the unreplicated rows/s. Reads cost nothing extra (they never reach the log) and are not measured here.
 *
 * Env: BENCH_WRITES (default 2000) per round, BENCH_BATCHES (default 20) of BENCH_BATCH rows (default 1000),
 * BENCH_ROUNDS (default 3). Writes bench/results/replication.json.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { OrderedRequests, postQuery, type Outcome } from '../node/cli/server-client.js';
import { Sandbox } from '../test/integration/processes.js';
import { NatsCluster } from '../test/replication/nats-cluster.js';
import { intEnv } from './harness.js';

const WRITES = intEnv('BENCH_WRITES', 2000, 1);
const BATCHES = intEnv('BENCH_BATCHES', 20, 1);
const BATCH = intEnv('BENCH_BATCH', 1000, 1);
const ROUNDS = intEnv('BENCH_ROUNDS', 3, 1);
const TOKEN = 'replication-bench-token-0123456789abcdef';
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function post(base: string, pathname: string, body: string, method = 'POST'): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(pathname, base),
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function must(status: Promise<number>, what: string): Promise<void> {
  const code = await status;
  if (code !== 200 && code !== 201) throw new Error(`${what}: ${code}`);
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

interface Round {
  p50: number;
  p99: number;
  writesPerSecond: number;
  rowsPerSecond: number;
  oneAtATimeRowsPerSecond: number;
}

async function round(base: string, tenant: string): Promise<Round> {
  const query = `/t/${tenant}/query`;
  const times: number[] = [];
  const started = performance.now();
  for (let i = 0; i < WRITES; i++) {
    const body = JSON.stringify({ statement: 'insert into notes {n: $1, body: $2}', params: [i, `a note ${i}`] });
    const t = performance.now();
    await must(post(base, query, body), 'a write');
    times.push(performance.now() - t);
  }
  const writesPerSecond = WRITES / ((performance.now() - started) / 1000);
  const rows = Array.from({ length: BATCH }, (_, i) => ({ n: i, body: `a row of a bulk import, number ${i}` }));
  const batch = JSON.stringify({ statement: 'insert into notes $1', params: [rows] });
  const oneAtATimeStarted = performance.now();
  for (let i = 0; i < BATCHES; i++) await must(post(base, query, batch), 'a batch');
  const oneAtATimeRowsPerSecond = (BATCHES * BATCH) / ((performance.now() - oneAtATimeStarted) / 1000);
  const url = new URL(query, base);
  const ordered = new OrderedRequests<Outcome>();
  const answers: Promise<Outcome>[] = [];
  const bulkStarted = performance.now();
  for (let i = 0; i < BATCHES; i++) {
    const pushed = await ordered.push((committed) => postQuery(url, batch, TOKEN, committed));
    if (pushed === undefined) throw new Error('a batch failed');
    answers.push(pushed.done);
  }
  for (const answer of answers) if (!(await answer).ok) throw new Error(`a batch: ${(await answer).status}`);
  const rowsPerSecond = (BATCHES * BATCH) / ((performance.now() - bulkStarted) / 1000);
  times.sort((a, b) => a - b);
  return {
    p50: percentile(times, 0.5),
    p99: percentile(times, 0.99),
    writesPerSecond,
    rowsPerSecond,
    oneAtATimeRowsPerSecond,
  };
}

const sandbox = new Sandbox();
let cluster: NatsCluster | undefined;
try {
  cluster = await NatsCluster.start(3);
  const common = ['--workers', '1', '--tenant-rate', '100000', '--tenant-burst', '100000', '--max-body', '8mb'];
  const plain = await sandbox.startServer(['--data-dir', sandbox.dir(), ...common], { FENEC_TOKEN: TOKEN });
  const replicated = await sandbox.startServer(
    ['--data-dir', sandbox.dir(), ...common, '--nats', cluster.urls, '--node-name', 'bench'],
    { FENEC_TOKEN: TOKEN },
  );
  const targets = [
    { name: 'unreplicated', url: plain.url },
    { name: 'replicated (--nats, 3 replicas)', url: replicated.url },
  ];
  const results = new Map<string, Round[]>(targets.map((t) => [t.name, []]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const target of r % 2 === 0 ? targets : [...targets].reverse()) {
      const tenant = `bench-${r}`;
      await must(post(target.url, `/t/${tenant}`, '{"maxRows": 0}', 'PUT'), 'PUT tenant');
      await must(
        post(
          target.url,
          `/t/${tenant}/query`,
          JSON.stringify({ statement: 'create collection notes (n int, body text)' }),
        ),
        'create collection',
      );
      results.get(target.name)!.push(await round(target.url, tenant));
    }
  }
  const summary = targets.map((target) => {
    const rounds = results.get(target.name)!;
    return {
      target: target.name,
      p50Ms: median(rounds.map((x) => x.p50)),
      p99Ms: median(rounds.map((x) => x.p99)),
      writesPerSecond: median(rounds.map((x) => x.writesPerSecond)),
      bulkRowsPerSecond: median(rounds.map((x) => x.rowsPerSecond)),
      oneAtATimeRowsPerSecond: median(rounds.map((x) => x.oneAtATimeRowsPerSecond)),
    };
  });
  const [base, repl] = summary as [(typeof summary)[0], (typeof summary)[0]];
  console.log(
    `\nReplication (issue 31): ${WRITES} writes and ${BATCHES}×${BATCH} bulk rows a round, ${ROUNDS} rounds, medians`,
  );
  console.log(
    '| target | write p50 ms | write p99 ms | writes/s | bulk rows/s (as fenec import) | one batch at a time |',
  );
  console.log('|---|---|---|---|---|---|');
  for (const s of summary)
    console.log(
      `| ${s.target} | ${s.p50Ms.toFixed(2)} | ${s.p99Ms.toFixed(2)} | ${s.writesPerSecond.toFixed(0)} | ${s.bulkRowsPerSecond.toFixed(0)} | ${s.oneAtATimeRowsPerSecond.toFixed(0)} |`,
    );
  const extra = repl.p50Ms - base.p50Ms;
  const bulk = repl.bulkRowsPerSecond / base.bulkRowsPerSecond;
  console.log(`write p50 +${extra.toFixed(2)} ms (goal ≤ +1.5 ms): ${extra <= 1.5 ? 'met' : 'not met'}`);
  const oneAtATime = repl.oneAtATimeRowsPerSecond / base.oneAtATimeRowsPerSecond;
  console.log(`bulk import ${bulk.toFixed(2)} of unreplicated (goal ≥ 0.7): ${bulk >= 0.7 ? 'met' : 'not met'}`);
  console.log(`one batch at a time, each after the answer before: ${oneAtATime.toFixed(2)} of unreplicated`);
  const out = path.join('bench', 'results');
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(
    path.join(out, 'replication.json'),
    `${JSON.stringify({ at: new Date().toISOString(), writes: WRITES, batches: BATCHES, batch: BATCH, rounds: ROUNDS, summary }, null, 2)}\n`,
  );
} finally {
  agent.destroy();
  await sandbox.cleanUp();
  await cluster?.stop();
}
