/**
 * What the HTTP benches share: one autocannon run against a URL, its figures taken from every
 * response's own time (autocannon's histogram counts whole milliseconds), and medians over rounds.
 */
import autocannon from 'autocannon';

export interface Measure {
  readonly target: string;
  readonly clients: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Requests answered with another status than 200, failed, or timed out: a run with any is not to be trusted. */
  readonly failed: number;
}

export interface LoadRun {
  /** Names the run in the figures. */
  readonly target: string;
  readonly url: string;
  readonly clients: number;
  readonly seconds: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** POSTs `body` to `url` from `clients` connections for `seconds`. */
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
    if (status === 200) latencies.push(ms);
    else failed += 1;
  });
  const result = await instance;
  const sorted = Float64Array.from(latencies).sort();
  return {
    target: run.target,
    clients: run.clients,
    requestsPerSecond: sorted.length / result.duration,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    failed: failed + result.errors + result.timeouts,
  };
}

/** The median of each figure over the runs (each figure on its own), failures summed. */
export function median(runs: readonly Measure[]): Measure {
  const mid = (values: number[]): number => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    target: runs[0]!.target,
    clients: runs[0]!.clients,
    requestsPerSecond: mid(runs.map((r) => r.requestsPerSecond)),
    p50Ms: mid(runs.map((r) => r.p50Ms)),
    p99Ms: mid(runs.map((r) => r.p99Ms)),
    failed: runs.reduce((sum, r) => sum + r.failed, 0),
  };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}
