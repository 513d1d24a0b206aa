/**
 * What every reliability suite shares: how many rounds to run, the seed, and the judge every answer
 * from a server under hostile input is held to.
 *
 * `make test` runs a small count of each suite; `make reliability` sets FENEC_RELIABILITY=full and
 * runs the full count. FENEC_RELIABILITY_SEED replays a run: every suite prints the seed it used, and
 * a fast-check failure prints the seed and path of the input that failed.
 */
import * as fs from 'node:fs';
import { request, type Reply, type RequestOptions } from '../integration/processes.js';

/** True under `make reliability`: the full counts. */
export const FULL = process.env.FENEC_RELIABILITY === 'full';

/** The count of a suite: `fast` inside `make test`, `full` under `make reliability`. */
export function scaled(fast: number, full: number): number {
  return FULL ? full : fast;
}

/** The seed of this run: FENEC_RELIABILITY_SEED when given, else a fresh one. */
export const SEED =
  process.env.FENEC_RELIABILITY_SEED === undefined
    ? Math.floor(Math.random() * 0x7fffffff)
    : Number(process.env.FENEC_RELIABILITY_SEED);

/** The slowest answer taken: past it an input is held to stall the server. */
export const ANSWER_LIMIT_MS = 1000;
/** How many times a slow input is sent before its cost counts as its own. */
export const TRIES = 3;
/** How long a request may go unanswered before it counts as a hang (and the test fails). */
export const HANG_MS = 5000;

/** A process's resident set size in KiB, now (VmRSS) or at its peak so far (VmHWM), from /proc (Linux). */
export function rssKiB(pid: number, which: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${which}:\\s+(\\d+) kB$`, 'm').exec(status);
  if (match === null) throw new Error(`no ${which} in /proc/${pid}/status`);
  return Number(match[1]);
}

const mib = (kib: number): number => Math.round(kib / 1024);

/**
 * Issue 29's bound on a fuzzed server's memory: after each round its RSS stays under twice the idle server's (taken
 * when the watch is made, before the first input) plus its answer cap (the --max-answer it was started with; for
 * `fenec mcp`, a tool's byte bound). A leak of even a few KB an input passes it over thousands of inputs; a buffer
 * kept per request, or an answer held past its request, does too.
 */
export class RssWatch {
  readonly idleKiB: number;
  readonly boundKiB: number;
  readonly #samples: number[] = [];

  constructor(
    private readonly what: string,
    private readonly pid: number,
    private readonly capBytes: number,
  ) {
    this.idleKiB = rssKiB(pid);
    this.boundKiB = 2 * this.idleKiB + capBytes / 1024;
  }

  /** Takes the RSS after a round, and throws past the bound. */
  sample(): void {
    const now = rssKiB(this.pid);
    this.#samples.push(now);
    if (now > this.boundKiB)
      throw new Error(`${this.what}: RSS ${mib(now)} MiB after round ${this.#samples.length}, past ${this.#bound()}`);
  }

  /** The figures for the suite's summary line. */
  summary(): string {
    const rounds = this.#samples.map(mib).join(' → ');
    return `RSS idle ${mib(this.idleKiB)} MiB, after each round ${rounds} MiB, peak ${mib(rssKiB(this.pid, 'VmHWM'))} MiB; ${this.#bound()}`;
  }

  #bound(): string {
    const cap = this.capBytes >= 1024 ** 2 ? `${mib(this.capBytes / 1024)} MiB` : `${this.capBytes / 1024} KiB`;
    return `bound ${mib(this.boundKiB)} MiB (2 × idle + the ${cap} answer cap)`;
  }
}

/** What a judged run saw, for the suite's summary line (docs/reliability.md's figures). */
export interface Tally {
  inputs: number;
  byStatus: Map<number, number>;
  /** Error codes answered (`error.code` of /query, of a tool's result, or a JSON-RPC error's number). */
  byCode: Map<string, number>;
  slowestMs: number;
  /** Answers over ANSWER_LIMIT_MS whose input answered in time when sent again: the machine, not the input. */
  slowThenFast: number;
}

export function newTally(): Tally {
  return { inputs: 0, byStatus: new Map(), byCode: new Map(), slowestMs: 0, slowThenFast: 0 };
}

export function describeTally(tally: Tally): string {
  const statuses = [...tally.byStatus.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, n]) => `${s}×${n}`)
    .join(' ');
  const codes = [...tally.byCode.entries()]
    .sort(([, a], [, b]) => b - a)
    .map(([c, n]) => `${c}×${n}`)
    .join(' ');
  return `${tally.inputs} inputs, statuses ${statuses} (codes ${codes}), slowest ${tally.slowestMs} ms, ${tally.slowThenFast} slow once then fast`;
}

/** An input that broke a property, with what it was sent and what came back. */
export class PropertyBroken extends Error {}

/**
 * Sends one hostile input and holds its answer to the properties every door keeps: an answer within
 * HANG_MS at all, no 5xx, JSON (or no body at all, as a 202 to a notification has), and within
 * ANSWER_LIMIT_MS. A slow answer is sent again, up to TRIES times, and the fastest try is the input's
 * cost: an input that costs the server a second does so every time, while a loaded machine's hiccup
 * does not (counted in `slowThenFast`).
 */
export async function judged(tally: Tally, label: string, base: string, options: RequestOptions): Promise<Reply> {
  let { reply, ms } = await timedRequest(label, base, options);
  const times = [ms];
  while (ms > ANSWER_LIMIT_MS && times.length < TRIES) {
    ({ reply, ms } = await timedRequest(label, base, options));
    times.push(ms);
  }
  if (ms > ANSWER_LIMIT_MS)
    throw new PropertyBroken(`${label}: answered in ${times.join(', ')} ms (limit ${ANSWER_LIMIT_MS} ms)`);
  if (times.length > 1) tally.slowThenFast += 1;
  tally.inputs += 1;
  tally.byStatus.set(reply.status, (tally.byStatus.get(reply.status) ?? 0) + 1);
  tally.slowestMs = Math.max(tally.slowestMs, ms);
  const code = errorCode(reply.json);
  if (code !== undefined) tally.byCode.set(code, (tally.byCode.get(code) ?? 0) + 1);
  if (code !== undefined && INTERNAL.has(code))
    throw new PropertyBroken(`${label}: ${reply.status} ${reply.text.slice(0, 500)}`);
  if (reply.status >= 500) throw new PropertyBroken(`${label}: ${reply.status} ${reply.text.slice(0, 500)}`);
  if (reply.text !== '' && reply.json === undefined)
    throw new PropertyBroken(`${label}: ${reply.status} answered non-JSON: ${reply.text.slice(0, 200)}`);
  if (reply.text === '' && reply.status !== 202 && reply.status !== 204)
    throw new PropertyBroken(`${label}: ${reply.status} with an empty body`);
  return reply;
}

/** A fault of the server's, by any door: a 500's code, JSON-RPC's internal error, a tool's. */
export const INTERNAL = new Set(['internal', 'rpc -32603', 'tool internal']);

/** The refusal an answer carries, whichever door it came from. */
export function errorCode(json: any): string | undefined {
  if (typeof json?.error?.code === 'string') return json.error.code;
  if (typeof json?.error?.code === 'number') return `rpc ${json.error.code}`;
  const tool = json?.result?.structuredContent?.error?.code;
  return json?.result?.isError === true ? `tool ${tool ?? 'error'}` : undefined;
}

async function timedRequest(
  label: string,
  base: string,
  options: RequestOptions,
): Promise<{ reply: Reply; ms: number }> {
  const started = performance.now();
  let reply: Reply;
  try {
    reply = await request(base, { ...options, timeoutMs: HANG_MS });
  } catch (err) {
    throw new PropertyBroken(`${label}: ${(err as Error).message}`);
  }
  return { reply, ms: Math.round(performance.now() - started) };
}

/** The server still serves: /_health answers 200 within ANSWER_LIMIT_MS (twice, as judged() allows). */
export async function expectServing(base: string, tally?: Tally): Promise<void> {
  const health = await judged(tally ?? newTally(), 'GET /_health', base, { path: '/_health' });
  if (health.status !== 200) throw new PropertyBroken(`/_health answered ${health.status}: ${health.text}`);
}

/** A label for an input: short enough to read in a failure, the whole of it when small. */
export function shown(input: unknown): string {
  const text =
    typeof input === 'string' ? input : Buffer.isBuffer(input) ? `<${input.length} bytes>` : JSON.stringify(input);
  return text.length > 300 ? `${text.slice(0, 300)}… (${text.length} chars)` : text;
}

/** Prints a suite's figures on the test's output: docs/reliability.md's numbers come from these lines. */
export function report(suite: string, line: string): void {
  process.stdout.write(`      [reliability] ${suite}: ${line} (seed ${SEED}${FULL ? ', full' : ''})\n`);
}

/** A small seeded generator (mulberry32) for the suites that draw without fast-check. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * A table's rows for this run: all of them under `make reliability`, every `stride`-th inside
 * `make test` (which ones turns with the seed, so that runs over days cover the whole table).
 */
export function sampled<T>(rows: readonly T[], stride: number): T[] {
  if (FULL) return [...rows];
  const offset = SEED % stride;
  return rows.filter((_, i) => i % stride === offset);
}
