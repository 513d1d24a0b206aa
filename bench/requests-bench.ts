/**
 * `make requests-bench`: one row by id through `POST /query` of a real fenec-server, beside a bare
 * node:http server answering the same JSON, at 1 and 8 concurrent clients, measured in one run. The
 * fenec-server is asked twice: with its server token, and with a JSON Web Token (HS256, its key a
 * KeyObject built at start) held to the policy `notes read where owner = $jwt.sub`.
 *
 * Each server runs in a process of its own and the load generator (autocannon) in this one: on a
 * two-core machine that is one core for the generator and one for the server. Latency percentiles
 * are taken from every response's own time (autocannon's histogram counts whole milliseconds).
 *
 * The two servers are measured in turns, BENCH_ROUNDS times (default 5) for each number of clients,
 * the order swapped every round, and the medians reported with the spread of the per-round ratios:
 * on two cores one run alone moves with whatever else the machine does.
 *
 * Env: BENCH_SECONDS (default 5) per measured run, each after a 1 s warm-up; BENCH_ROUNDS (default 5).
 * Writes bench/results/requests.json. Targets (issue 2): at 8 clients at least 0.40 of the bare
 * server's requests/s; at 1 client a p50 under 0.3 ms. Issue 4: JWT requests at least 0.9 of the
 * server token's requests/s, at 8 clients.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { load as loadRun, median, type Measure as Figures } from './load.js';
import { mintToken } from '../shared/auth/token.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FENEC_SERVER = path.join(ROOT, 'dist/node/cli/fenec-server.js');
const BARE_SERVER = path.join(ROOT, 'dist/bench/bare-server.js');
const RESULTS = path.join(ROOT, 'bench/results/requests.json');

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const WARM_UP_SECONDS = 1;
const CLIENTS = [1, 8] as const;
const ROWS = 1000;
const ROW_ID = 500;
const STATEMENT = 'get notes where id = $1';
const TOKEN = randomBytes(16).toString('hex');
const JWT_SECRET = randomBytes(32).toString('hex');
const SUB = 'bench';
const POLICY = 'notes read where owner = $jwt.sub\n';
const JWT = mintToken({ secret: JWT_SECRET, tenant: 'bench', sub: SUB, ttlSeconds: 86_400 });
const TARGET_RATIO = 0.4;
const TARGET_P50_MS = 0.3;
const TARGET_JWT_RATIO = 0.9;

interface Target {
  readonly name: string;
  readonly url: string;
  readonly child: ChildProcess;
  /** The bearer token its requests carry. */
  readonly token: string;
}

interface Measure extends Figures {
  ratioToBare?: number;
  /** The lowest and highest of the per-round ratios to the bare server. */
  ratioSpread?: [number, number];
  /** JWT runs: the median of the per-round ratios of requests/s to the server token's, and their spread. */
  ratioToServerToken?: number;
  ratioToServerTokenSpread?: [number, number];
}

async function main(): Promise<void> {
  if (!(SECONDS > 0)) throw new Error(`BENCH_SECONDS must be a positive number, not ${process.env.BENCH_SECONDS}`);
  if (!(Number.isInteger(ROUNDS) && ROUNDS > 0)) throw new Error(`BENCH_ROUNDS must be a whole number ≥ 1, not ${process.env.BENCH_ROUNDS}`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-bench-'));
  const targets: Target[] = [];
  try {
    const policy = path.join(dir, 'policy.txt');
    fs.writeFileSync(policy, POLICY);
    const fenec = await startFenec(path.join(dir, 'bench.fenec'), policy);
    targets.push(fenec);
    const answer = await seed(fenec.url);
    const bare = await startBare(answer);
    targets.push(bare);
    // The same server process, asked with a JWT: the only difference is the credential and its policy.
    const fenecJwt: Target = { ...fenec, name: 'fenec-server (JWT)', token: JWT };
    await checkJwtAnswer(fenecJwt, answer);

    const measures: Measure[] = [];
    for (const clients of CLIENTS) {
      const order = [bare, fenec, fenecJwt];
      const runs = new Map<Target, Measure[]>(order.map((target) => [target, []]));
      for (let round = 0; round < ROUNDS; round++) {
        // Each target goes first, second and third in turn, and the two fenec runs swap every round.
        const turn = order.map((_, i) => order[(i + round) % order.length]!);
        if (round % 2 === 1) turn.reverse();
        for (const target of turn) runs.get(target)!.push(await measure(target, clients));
      }
      const bareRuns = runs.get(bare)!;
      const baseline = median(bareRuns);
      measures.push(baseline);
      for (const target of [fenec, fenecJwt]) {
        const ours: Measure = { ...median(runs.get(target)!) };
        ours.ratioToBare = ours.requestsPerSecond / baseline.requestsPerSecond;
        ours.ratioSpread = spread(runs.get(target)!, bareRuns);
        measures.push(ours);
      }
      // The JWT and server-token runs of a round are next to each other in time: their ratio, round by
      // round, is less moved by the rest of the machine than the ratio of two medians.
      const jwtMeasure = measures.at(-1)!;
      const paired = ratios(runs.get(fenecJwt)!, runs.get(fenec)!);
      jwtMeasure.ratioToServerToken = middle(paired);
      jwtMeasure.ratioToServerTokenSpread = [Math.min(...paired), Math.max(...paired)];
    }
    report(measures);
  } finally {
    await Promise.all(targets.map((target) => stop(target.child)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The per-round ratios of `runs` to `baseline` (requests/s). */
function ratios(runs: readonly Measure[], baseline: readonly Measure[]): number[] {
  return runs.map((run, i) => run.requestsPerSecond / baseline[i]!.requestsPerSecond);
}

/** The lowest and highest of the per-round ratios of `runs` to `baseline`. */
function spread(runs: readonly Measure[], baseline: readonly Measure[]): [number, number] {
  const each = ratios(runs, baseline);
  return [Math.min(...each), Math.max(...each)];
}

function middle(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
}

async function startFenec(file: string, policy: string): Promise<Target> {
  const args = [FENEC_SERVER, '--file', file, '--port', '0', '--http-token', TOKEN, '--jwt-secret', JWT_SECRET, '--policy', policy];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const line = await firstLine(child, child.stderr!, (entry) => entry.msg === 'listening');
  return { name: 'fenec-server', url: String(line.url), child, token: TOKEN };
}

async function startBare(answer: string): Promise<Target> {
  const child = spawn(process.execPath, [BARE_SERVER], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, BARE_ANSWER: answer },
  });
  const line = await firstLine(child, child.stdout!, (entry) => typeof entry.port === 'number');
  return { name: 'bare node:http', url: `http://127.0.0.1:${String(line.port)}`, child, token: TOKEN };
}

/** The first JSON line a child writes on `stream` that `accept` takes. */
function firstLine(
  child: ChildProcess,
  stream: NodeJS.ReadableStream,
  accept: (entry: Record<string, unknown>) => boolean,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      for (const line of text.split('\n')) {
        try {
          const entry = JSON.parse(line) as Record<string, unknown>;
          if (accept(entry)) resolve(entry);
        } catch {
          // not a whole JSON line (yet)
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before listening:\n${text}`)));
  });
}

/** Creates the collection and its rows; answers the JSON of the row the bench reads. */
async function seed(url: string): Promise<string> {
  await post(url, 'create collection notes (title text, body text, n int, owner text @hash)', []);
  const rows = Array.from({ length: ROWS }, (_, i) =>
    `{title: ${JSON.stringify(`note ${i + 1}`)}, body: ${JSON.stringify(`the body of note ${i + 1}, a few words long`)}, n: ${i + 1}, owner: ${JSON.stringify(SUB)}}`);
  await post(url, `insert into notes [${rows.join(', ')}]`, []);
  const answer = await post(url, STATEMENT, [ROW_ID]);
  if ((JSON.parse(answer) as { count: number }).count !== 1) throw new Error(`row ${ROW_ID} not found: ${answer}`);
  return answer;
}

/** The JWT reads the same row, under its policy, as the server token does. */
async function checkJwtAnswer(target: Target, answer: string): Promise<void> {
  const seen = await post(target.url, STATEMENT, [ROW_ID], target.token);
  if (seen !== answer) throw new Error(`the JWT reads ${seen}, the server token ${answer}`);
}

async function post(url: string, statement: string, params: unknown[], token = TOKEN): Promise<string> {
  const response = await fetch(`${url}/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ statement, params }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${statement} → ${response.status} ${text}`);
  return text;
}

/** A warm-up run, then a measured one. */
async function measure(target: Target, clients: number): Promise<Measure> {
  await load(target, clients, WARM_UP_SECONDS);
  const result = await load(target, clients, SECONDS);
  process.stderr.write(`  ${target.name}, ${clients} client(s): ${Math.round(result.requestsPerSecond)} req/s\n`);
  return result;
}

function load(target: Target, clients: number, seconds: number): Promise<Measure> {
  return loadRun({
    target: target.name,
    url: `${target.url}/query`,
    clients,
    seconds,
    headers: { authorization: `Bearer ${target.token}` },
    body: JSON.stringify({ statement: STATEMENT, params: [ROW_ID] }),
  });
}

function report(measures: readonly Measure[]): void {
  const header = ['target', 'clients', 'req/s', 'p50 ms', 'p99 ms', 'vs bare', 'per round', 'vs token', 'per round'];
  const lines = measures.map((m) => [
    m.target,
    String(m.clients),
    String(Math.round(m.requestsPerSecond)),
    m.p50Ms.toFixed(3),
    m.p99Ms.toFixed(3),
    m.ratioToBare === undefined ? '' : m.ratioToBare.toFixed(2),
    m.ratioSpread === undefined ? '' : `${m.ratioSpread[0].toFixed(2)}–${m.ratioSpread[1].toFixed(2)}`,
    m.ratioToServerToken === undefined ? '' : m.ratioToServerToken.toFixed(2),
    m.ratioToServerTokenSpread === undefined ? '' : `${m.ratioToServerTokenSpread[0].toFixed(2)}–${m.ratioToServerTokenSpread[1].toFixed(2)}`,
  ]);
  const widths = header.map((cell, i) => Math.max(cell.length, ...lines.map((line) => line[i]!.length)));
  const row = (cells: string[]): string => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const at8 = measures.find((m) => m.target === 'fenec-server' && m.clients === 8);
  const at1 = measures.find((m) => m.target === 'fenec-server' && m.clients === 1);
  const jwtAt8 = measures.find((m) => m.ratioToServerToken !== undefined && m.clients === 8);
  const failures = measures.reduce((sum, m) => sum + m.failed, 0);
  process.stdout.write(
    `\nrequests-bench: ${STATEMENT} [${ROW_ID}] over ${ROWS} rows, medians of ${ROUNDS} rounds of ${SECONDS} s, ` +
      `${os.cpus().length} cores, Node ${process.versions.node}\n\n` +
      `${[row(header), ...lines.map(row)].join('\n')}\n\n` +
      `target: ≥ ${TARGET_RATIO} of bare at 8 clients — ${at8?.ratioToBare?.toFixed(2)} ${at8 !== undefined && at8.ratioToBare! >= TARGET_RATIO ? 'met' : 'MISSED'}\n` +
      `target: p50 < ${TARGET_P50_MS} ms at 1 client — ${at1?.p50Ms.toFixed(3)} ms ${at1 !== undefined && at1.p50Ms < TARGET_P50_MS ? 'met' : 'MISSED'}\n` +
      `target: JWT ≥ ${TARGET_JWT_RATIO} of the server token at 8 clients — ${jwtAt8?.ratioToServerToken?.toFixed(2)} ` +
      `${jwtAt8 !== undefined && jwtAt8.ratioToServerToken! >= TARGET_JWT_RATIO ? 'met' : 'MISSED'}\n` +
      (failures > 0 ? `${failures} requests failed or were refused: the figures are not to be trusted\n` : ''),
  );
  fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
  const json = {
    bench: 'requests',
    date: new Date().toISOString(),
    node: process.versions.node,
    cores: os.cpus().length,
    statement: STATEMENT,
    rows: ROWS,
    seconds: SECONDS,
    rounds: ROUNDS,
    policy: POLICY.trim(),
    targets: { ratioToBareAt8: TARGET_RATIO, p50MsAt1: TARGET_P50_MS, jwtRatioToServerTokenAt8: TARGET_JWT_RATIO },
    results: measures,
  };
  fs.writeFileSync(RESULTS, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`written: ${path.relative(process.cwd(), RESULTS) || RESULTS}\n`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

await main();
