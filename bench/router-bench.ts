/**
 * `make requests-bench`'s router hop: one row by id through fenec-router → tenant node, beside the
 * same tenant node asked directly, at 1 and 8 concurrent clients, measured in one run in alternating
 * rounds. Each program is a process of its own; the load generator (autocannon) runs in this one.
 *
 * Env: BENCH_SECONDS (default 5) per measured run, each after a 1 s warm-up; BENCH_ROUNDS (default 5).
 * Writes bench/results/router.json. Targets (issue 6): at 8 clients at least 0.4 of the direct
 * requests/s (on 2 cores the router and the node share what the load generator leaves: 0.5 is the
 * ceiling); at 1 client the p50 the hop adds under 0.3 ms.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { load as loadRun, median, type Measure } from './load.js';
import { call, ROOT, startProgram } from './processes.js';

const RESULTS = path.join(ROOT, 'bench/results/router.json');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CLIENTS = [1, 8] as const;
const TOKEN = randomBytes(16).toString('hex');
const TENANT = 'bench';
const STATEMENT = 'get notes where id = $1';
const ROW_ID = 500;
const TARGET_RATIO = 0.4;
const TARGET_ADDED_P50_MS = 0.3;

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-router-bench-'));
  const children: ChildProcess[] = [];
  try {
    const node = await startProgram(children, 'dist/node/cli/fenec-server.js', ['--data-dir', dir, '--port', '0', '--http-token', TOKEN]);
    const router = await startProgram(children, 'dist/router/cli.js', ['--port', '0', '--http-token', TOKEN, '--nodes', `n=${node}`]);
    await call(node, TOKEN, 'PUT', `/t/${TENANT}`, { rate: 10_000_000, burst: 10_000_000 });
    await call(node, TOKEN, 'POST', `/t/${TENANT}/query`, { statement: 'create collection notes (title text, n int)' });
    const rows = Array.from({ length: 1000 }, (_, i) => `{title: "note ${i + 1}", n: ${i + 1}}`);
    await call(node, TOKEN, 'POST', `/t/${TENANT}/query`, { statement: `insert into notes [${rows.join(', ')}]` });
    const targets = { direct: node, router };
    const measures: Measure[] = [];
    for (const clients of CLIENTS) {
      const runs: Record<string, Measure[]> = { direct: [], router: [] };
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? ['direct', 'router'] : ['router', 'direct'];
        for (const name of order) runs[name]!.push(await measure(name, targets[name as keyof typeof targets], clients));
      }
      measures.push(median(runs.direct!), median(runs.router!));
    }
    report(measures);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await Promise.all(children.map((child) => (child.exitCode === null ? once(child, 'exit') : undefined)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function measure(name: string, base: string, clients: number): Promise<Measure> {
  await load(name, base, clients, 1);
  const result = await load(name, base, clients, SECONDS);
  process.stderr.write(`  ${name}, ${clients} client(s): ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms.toFixed(3)} ms\n`);
  return result;
}

function load(name: string, base: string, clients: number, seconds: number): Promise<Measure> {
  return loadRun({
    target: name,
    url: `${base}/t/${TENANT}/query`,
    clients,
    seconds,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ statement: STATEMENT, params: [ROW_ID] }),
  });
}

function report(measures: readonly Measure[]): void {
  const find = (target: string, clients: number): Measure => measures.find((m) => m.target === target && m.clients === clients)!;
  const ratio8 = find('router', 8).requestsPerSecond / find('direct', 8).requestsPerSecond;
  const added1 = find('router', 1).p50Ms - find('direct', 1).p50Ms;
  const lines = measures.map((m) => `${m.target.padEnd(7)} ${String(m.clients).padStart(7)} ${String(Math.round(m.requestsPerSecond)).padStart(7)} ${m.p50Ms.toFixed(3).padStart(7)} ${m.p99Ms.toFixed(3).padStart(7)}`);
  const failures = measures.reduce((sum, m) => sum + m.failed, 0);
  process.stdout.write(
    `\nrouter-bench: ${STATEMENT} [${ROW_ID}] on tenant ${TENANT}, router → node against the node directly, medians of ${ROUNDS} rounds of ${SECONDS} s, ` +
      `${os.cpus().length} cores, Node ${process.versions.node}\n\n` +
      `target    clients   req/s  p50 ms  p99 ms\n${lines.join('\n')}\n\n` +
      `target: router ≥ ${TARGET_RATIO} of direct at 8 clients — ${ratio8.toFixed(2)} ${ratio8 >= TARGET_RATIO ? 'met' : 'MISSED'}\n` +
      `target: p50 added by the hop < ${TARGET_ADDED_P50_MS} ms at 1 client — ${added1.toFixed(3)} ms ${added1 < TARGET_ADDED_P50_MS ? 'met' : 'MISSED'}\n` +
      (failures > 0 ? `${failures} requests failed or were refused: the figures are not to be trusted\n` : ''),
  );
  fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
  fs.writeFileSync(RESULTS, `${JSON.stringify({ bench: 'router', date: new Date().toISOString(), node: process.versions.node, cores: os.cpus().length, seconds: SECONDS, rounds: ROUNDS, ratioAt8: ratio8, addedP50MsAt1: added1, results: measures }, null, 2)}\n`);
  process.stdout.write(`written: ${path.relative(process.cwd(), RESULTS) || RESULTS}\n`);
}

await main();
