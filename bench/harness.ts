/**
 * What every bench shares beside its statistics (stats.ts): the knobs it reads from the environment, its
 * progress lines, the programs it measures (fenec-server, fenec-router, the bare node:http yardstick),
 * each started as a process of its own on a free port, the admin calls it makes to them, the CPU they spend
 * (from /proc), the HTTP load it puts on them (autocannon, in turns, once each has settled), and the table and
 * results file it writes.
 */
import autocannon from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { programNodeArgs } from '../test/integration/processes.js';
import { median, percentile } from './stats.js';

/** The checkout: the programs are dist/ below it, the results bench/results/. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// Knobs ----------------------------------------------------------------------------------------------

/** A whole-number knob of at least `min`; `fallback` when unset or empty. */
export function intEnv(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number ≥ ${min}, not ${text}`);
  return value;
}

/** A positive-number knob (seconds, a spread); `fallback` when unset or empty. */
export function numberEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!(value > 0)) throw new Error(`${name} must be a positive number, not ${text}`);
  return value;
}

// Progress -------------------------------------------------------------------------------------------

const started = performance.now();

/** Seconds since the bench started. */
export function elapsedSeconds(): number {
  return (performance.now() - started) / 1000;
}

/** A line on stderr, stamped with the seconds since the bench started: stdout holds only the figures. */
export function progress(message: string): void {
  process.stderr.write(`[${elapsedSeconds().toFixed(1).padStart(6)} s] ${message}\n`);
}

// Programs -------------------------------------------------------------------------------------------

/** What of a program's log is kept, to show when it exits before or while it is measured. */
const LOG_TAIL = 8_000;
/** How long a program may take to stop on SIGTERM before it is killed. */
const STOP_GRACE_MS = 10_000;

export interface Program {
  /** The URL its `listening` log line names. */
  readonly url: string;
  readonly child: ChildProcess;
}

export interface StartOptions {
  /** Added to this process's environment (FENEC_TOKEN is always cleared: the benches pass tokens as flags). */
  readonly env?: Readonly<Record<string, string>>;
  /** How many `listening` lines to wait for: a `fenec-router --workers N` logs one per worker. Default 1. */
  readonly listeners?: number;
  /** The Node.js to run it on (default: this one's); the build before the worker threads runs on its own. */
  readonly node?: string;
  /** Cores to pin it to (taskset's list, `0-1`); undefined: not pinned. */
  readonly pin?: string;
  /** Flags for its Node.js (`--cpu-prof`, say). */
  readonly nodeArgs?: readonly string[];
}

/** The programs a bench started, each a process of its own, stopped together when it ends. */
export class Programs {
  private readonly children: ChildProcess[] = [];
  private readonly stopping = new WeakSet<ChildProcess>();

  /**
   * Starts `node ROOT/script ...args` (script may be absolute) and resolves once it has logged `listening`
   * (JSON lines on stderr, as the programs and bench/bare-server.ts log), with the URL it names. A program that exits
   * before then rejects with its log; one that exits later, not stopped here, prints its log.
   */
  start(script: string, args: readonly string[], options: StartOptions = {}): Promise<Program> {
    const file = path.resolve(ROOT, script);
    const node = [options.node ?? process.execPath, ...(options.nodeArgs ?? programNodeArgs(file)), file, ...args];
    const command = options.pin === undefined ? node : ['taskset', '-c', options.pin, ...node];
    const child = spawn(command[0]!, command.slice(1), {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, FENEC_TOKEN: '', ...options.env },
    });
    this.children.push(child);
    const wanted = options.listeners ?? 1;
    let listening = 0;
    let url: string | undefined;
    let log = '';
    let partial = '';
    return new Promise((resolve, reject) => {
      child.stderr!.on('data', (chunk: Buffer) => {
        const text = chunk.toString();
        log = (log + text).slice(-LOG_TAIL);
        if (listening === wanted) return;
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          const entry = parseLogLine(line);
          if (entry?.msg !== 'listening' || typeof entry.url !== 'string') continue;
          url ??= entry.url;
          if (++listening === wanted) resolve({ url, child });
        }
      });
      child.once('exit', (code, signal) => {
        if (listening < wanted) reject(new Error(`${script} exited (${code ?? signal}) before listening:\n${log}`));
        else if (!this.stopping.has(child))
          process.stderr.write(`${script} exited (${code ?? signal}) while the bench ran:\n${log}\n`);
      });
    });
  }

  /** SIGTERM, then SIGKILL after STOP_GRACE_MS; resolves once it has exited. */
  async stop(program: Program | ChildProcess): Promise<void> {
    const child = 'child' in program ? program.child : program;
    if (child.exitCode !== null || child.signalCode !== null) return;
    this.stopping.add(child);
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  stopAll(): Promise<void[]> {
    return Promise.all(this.children.map((child) => this.stop(child)));
  }
}

function parseLogLine(line: string): { msg?: unknown; url?: unknown } | undefined {
  try {
    return JSON.parse(line) as { msg?: unknown; url?: unknown };
  } catch {
    return undefined; // not a JSON line (a warning Node printed, say)
  }
}

/** One request with `token`; its answer's text. Throws with the answer when it is not a 2xx. */
export async function request(
  base: string,
  token: string,
  method: string,
  route: string,
  body?: unknown,
): Promise<string> {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${route} → ${response.status} ${text}`);
  return text;
}

/** One JSON call with `token` (an admin call, a statement); its parsed answer. */
export async function call(base: string, token: string, method: string, route: string, body?: unknown): Promise<any> {
  const text = await request(base, token, method, route, body);
  return text === '' ? undefined : JSON.parse(text);
}

// CPU ------------------------------------------------------------------------------------------------

/** A process's CPU time so far, user + system of every thread, in seconds (/proc/PID/stat). */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * cpuSeconds of a process and of every process below it (a `fenec-router --workers N`'s primary and its
 * workers): a parent's own figure counts a child only once it has exited and been waited for.
 */
export function treeCpuSeconds(pid: number): number {
  let total = cpuSeconds(pid);
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    const children = fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (children !== '') for (const child of children.split(' ')) total += treeCpuSeconds(Number(child));
  }
  return total;
}

/**
 * CPU time so far of a process's threads, in clock ticks (1/100 s), summed by the group `group` puts each in: by
 * default its name (the serving thread's, `WorkerThread`, `V8Worker`, `libuv-worker`…).
 */
export function threadTicks(
  pid: number,
  group: (tid: number, name: string) => string = (_, name) => name,
): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue; // the thread ended since the listing
    }
    const key = group(Number(task), stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks.set(key, (ticks.get(key) ?? 0) + Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/**
 * A bench's `--cores N`: the count, checked against the machine's. @throws Error for a count it does not have.
 */
export function coresFlag(flag: string | undefined): number | undefined {
  if (flag === undefined) return undefined;
  const cores = Number(flag);
  const all = os.cpus().length;
  if (!Number.isInteger(cores) || cores < 1 || cores > all) throw new Error(`--cores takes 1 … ${all}, not ${flag}`);
  return cores;
}

/**
 * The servers' cores for `--cores N` (taskset's list of the first N), with this process, the load generator, pinned
 * to the others when any are left; undefined (nothing pinned) without the flag.
 */
export function pinCores(cores: number | undefined): string | undefined {
  if (cores === undefined) return undefined;
  const all = os.cpus().length;
  if (cores < all) execFileSync('taskset', ['-pc', `${cores}-${all - 1}`, String(process.pid)], { stdio: 'ignore' });
  return `0-${cores - 1}`;
}

// Load -----------------------------------------------------------------------------------------------

export interface Measure {
  readonly target: string;
  readonly clients: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Requests answered with another status than 200, failed, or timed out: a run with any is not to be trusted. */
  readonly failed: number;
  /** The CPU each of the run's `cpu` clocks spent a request answered, in µs. */
  readonly cpuUsOf?: Readonly<Record<string, number>>;
}

export interface LoadRun {
  /** Names the run in the figures. */
  readonly target: string;
  readonly url: string;
  readonly clients: number;
  readonly seconds: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Where every answered request's latency is also put: the figures of several runs taken as one. */
  readonly latencies?: number[];
  /** CPU clocks (seconds so far: cpuSeconds, treeCpuSeconds) read around the run, by the name Measure.cpuUsOf gives. */
  readonly cpu?: Readonly<Record<string, () => number>>;
}

/**
 * POSTs `body` to `url` from `clients` connections for `seconds`. Latencies are every response's own
 * time (autocannon's histogram counts whole milliseconds).
 */
export async function load(run: LoadRun): Promise<Measure> {
  const latencies: number[] = [];
  let failed = 0;
  const instance = autocannon({
    url: run.url,
    connections: run.clients,
    duration: run.seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json', ...run.headers },
    body: run.body,
  });
  instance.on('response', (_client: unknown, status: number, _bytes: number, ms: number) => {
    if (status === 200) {
      latencies.push(ms);
      run.latencies?.push(ms);
    } else {
      failed += 1;
    }
  });
  const clocks = Object.entries(run.cpu ?? {});
  const cpu0 = clocks.map(([, clock]) => clock());
  const result = await instance;
  const cpuUsOf = Object.fromEntries(
    clocks.map(([name, clock], i) => [name, ((clock() - cpu0[i]!) * 1e6) / Math.max(1, latencies.length)]),
  );
  return {
    target: run.target,
    clients: run.clients,
    requestsPerSecond: latencies.length / result.duration,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    failed: failed + result.errors + result.timeouts,
    ...(clocks.length === 0 ? {} : { cpuUsOf }),
  };
}

/** The median of each figure over the runs (each figure on its own), failures summed. */
export function medianMeasure(runs: readonly Measure[]): Measure {
  const clocks = Object.keys(runs[0]!.cpuUsOf ?? {});
  return {
    target: runs[0]!.target,
    clients: runs[0]!.clients,
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    failed: runs.reduce((total, r) => total + r.failed, 0),
    ...(clocks.length === 0
      ? {}
      : { cpuUsOf: Object.fromEntries(clocks.map((name) => [name, median(runs.map((r) => r.cpuUsOf![name]!))])) }),
  };
}

/** A run without its length: what loadInTurns runs again each round. */
export type LoadTarget = Omit<LoadRun, 'seconds'>;

/** The unmeasured run before each measured one: the first requests open files, fill caches, warm the JIT. */
export const WARM_UP_SECONDS = 1;

/** A warm-up chunk's length, and the most chunks a target is given to settle. */
const SETTLE_SECONDS = 2;
const SETTLE_CHUNKS = 15;

/**
 * `target` loaded SETTLE_SECONDS at a time until the CPU a request costs (`cpu`, seconds so far, of whatever serves
 * it) stops falling: a chunk within 5 % of the one before. Node.js 24 moves a request path to its optimizing
 * compiler only after 6 000–14 000 requests, compiling on V8's helper threads meanwhile, so that a short warm-up
 * measures the compiler's work, not the server's (docs/performance.md). Returns the chunks it took and the CPU a
 * request of the last one, in µs.
 */
export async function settle(target: LoadTarget, cpu: () => number): Promise<{ chunks: number; cpuUs: number }> {
  let before = Infinity;
  let chunks = 0;
  while (chunks < SETTLE_CHUNKS) {
    chunks += 1;
    const cpu0 = cpu();
    const m = await load({ ...target, seconds: SETTLE_SECONDS });
    const us = ((cpu() - cpu0) * 1e6) / Math.max(1, m.requestsPerSecond * SETTLE_SECONDS);
    if (us > before * 0.95) break;
    before = us;
  }
  progress(
    `${target.target}: settled after ${chunks} warm-up runs of ${SETTLE_SECONDS} s (${Math.round(before)} µs a request)`,
  );
  return { chunks, cpuUs: before };
}

/** `run` after a WARM_UP_SECONDS run of the same requests, unmeasured. */
export async function warmedLoad(run: LoadRun): Promise<Measure> {
  await load({ ...run, seconds: WARM_UP_SECONDS });
  return load(run);
}

/**
 * Each target measured `rounds` times for `seconds`, each run after a WARM_UP_SECONDS warm-up, the
 * targets in a new order each round (`turnOrder`), so that whatever else the machine does falls on all
 * alike. `runs[t][r]` is target t's run of round r: runs of one round are next to each other in time.
 */
export async function loadInTurns(
  targets: readonly LoadTarget[],
  rounds: number,
  seconds: number,
): Promise<Measure[][]> {
  const runs = targets.map((): Measure[] => []);
  for (let round = 0; round < rounds; round++) {
    for (const t of turnOrder(targets.length, round)) {
      const result = await warmedLoad({ ...targets[t]!, seconds });
      progress(
        `${result.target}, ${result.clients} client(s): ${Math.round(result.requestsPerSecond)} req/s, p50 ${result.p50Ms.toFixed(3)} ms`,
      );
      runs[t]!.push(result);
    }
  }
  return runs;
}

/**
 * The order of `n` targets in round `round`: rotated by the round, so each goes first in turn; from three
 * targets on, reversed on odd rounds too, so that over six rounds three targets go in all six orders (two
 * targets are swapped by the rotation alone, which a reversal would undo).
 */
export function turnOrder(n: number, round: number): number[] {
  const order = Array.from({ length: n }, (_, i) => (i + round) % n);
  return n > 2 && round % 2 === 1 ? order.reverse() : order;
}

// Output ---------------------------------------------------------------------------------------------

/** A plain-text table: the first column left-aligned, the others right-aligned. */
export function table(header: readonly string[], lines: readonly (readonly string[])[]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...lines.map((line) => line[i]!.length)));
  const row = (cells: readonly string[]): string =>
    cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [row(header), ...lines.map(row)].join('\n');
}

/** Writes bench/results/<name>.json and says where on stdout. */
export function writeResults(name: string, json: unknown): void {
  const file = path.join(ROOT, 'bench/results', `${name}.json`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`written: ${path.relative(process.cwd(), file) || file}\n`);
}

/** A load run's first cells in a table, under LOAD_HEADER. */
export const LOAD_HEADER = ['target', 'clients', 'req/s', 'p50 ms', 'p99 ms'] as const;

export function loadCells(m: Measure): string[] {
  return [m.target, String(m.clients), String(Math.round(m.requestsPerSecond)), m.p50Ms.toFixed(3), m.p99Ms.toFixed(3)];
}

/** A ratio and its spread as two cells ('' where there is none: a baseline's row). */
export function ratioCells(ratio: number | undefined, range: readonly [number, number] | undefined): [string, string] {
  return [
    ratio === undefined ? '' : ratio.toFixed(2),
    range === undefined ? '' : `${range[0].toFixed(2)}–${range[1].toFixed(2)}`,
  ];
}

/** The line that says a run's figures are not to be trusted, when any request failed; '' when none did. */
export function failuresLine(measures: readonly Measure[]): string {
  const failures = measures.reduce((total, m) => total + m.failed, 0);
  return failures > 0 ? `${failures} requests failed or were refused: the figures are not to be trusted\n` : '';
}

/** What a results file says first: which bench, when, on what. */
export function runInfo(bench: string): { bench: string; date: string; node: string; cores: number } {
  return { bench, date: new Date().toISOString(), node: process.versions.node, cores: os.cpus().length };
}

/** "met" or "MISSED", for a target's line. */
export function verdict(met: boolean): string {
  return met ? 'met' : 'MISSED';
}

/** Writes `rows` rows as NDJSON to `file`, row i as `row(i)` gives it, a thousand lines a write. */
export function writeNdjson(file: string, rows: number, row: (i: number) => unknown): void {
  const out = fs.openSync(file, 'w');
  try {
    for (let start = 0; start < rows; start += 1000) {
      const lines: string[] = [];
      for (let i = start; i < Math.min(rows, start + 1000); i++) lines.push(JSON.stringify(row(i)));
      fs.writeSync(out, `${lines.join('\n')}\n`);
    }
  } finally {
    fs.closeSync(out);
  }
}

/**
 * `fenec import --url url collection file` in a process of its own, as a loader runs it (it waits until
 * the vector indexes hold every row); its time and its summary line. @throws Error when it exits non-zero.
 */
export async function fenecImport(
  url: string,
  collection: string,
  file: string,
  token: string,
): Promise<{ seconds: number; summary: Record<string, number> }> {
  const t0 = performance.now();
  const child = spawn(
    process.execPath,
    [path.join(ROOT, 'dist/node/cli/fenec.js'), 'import', '--url', url, collection, file],
    {
      env: { ...process.env, FENEC_TOKEN: token },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  const seconds = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`fenec import into ${collection} exited ${code}:\n${stderr}`);
  return { seconds, summary: JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, number> };
}
