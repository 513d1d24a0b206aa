/**
 * Prometheus metrics, the router's and the node's alike: a registry of each program's own (not
 * prom-client's global one), so that two servers in one process, or a library that registers its
 * own metrics, never mix figures; the process's default metrics; and the exposition text.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { LoopDelaySampler, type LoopDelayFigures } from './loop-delay.js';

/** Sub-millisecond buckets up to 10 s: a get by id answers in tenths of a millisecond, a slow node in seconds. */
export const LATENCY_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/**
 * prom-client's event-loop delay figures, which ours replace (loop-delay.ts), with how its cluster
 * aggregator combines each across a router's workers.
 */
const LOOP_DELAY_GAUGES: readonly (readonly [
  name: string,
  key: keyof LoopDelayFigures,
  help: string,
  aggregator: 'min' | 'max' | 'average',
])[] = [
  ['nodejs_eventloop_lag_min_seconds', 'min', 'The minimum recorded event loop delay.', 'min'],
  ['nodejs_eventloop_lag_max_seconds', 'max', 'The maximum recorded event loop delay.', 'max'],
  ['nodejs_eventloop_lag_mean_seconds', 'mean', 'The mean of the recorded event loop delays.', 'average'],
  [
    'nodejs_eventloop_lag_stddev_seconds',
    'stddev',
    'The standard deviation of the recorded event loop delays.',
    'average',
  ],
  ['nodejs_eventloop_lag_p50_seconds', 'p50', 'The 50th percentile of the recorded event loop delays.', 'average'],
  ['nodejs_eventloop_lag_p90_seconds', 'p90', 'The 90th percentile of the recorded event loop delays.', 'average'],
  ['nodejs_eventloop_lag_p99_seconds', 'p99', 'The 99th percentile of the recorded event loop delays.', 'average'],
];
/**
 * prom-client samples the delay for its own figures, always, at the precision given: once a minute,
 * since those figures are replaced. (Its timer cannot be turned off; a 1 ms one costs an idle process
 * about 3 % of a core.)
 */
const UNUSED_PRECISION_MS = 60_000;

export class MetricsRegistry {
  readonly registry = new Registry();

  constructor() {
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: UNUSED_PRECISION_MS });
    this.#loopDelay(new LoopDelaySampler());
  }

  readonly #authRefusals: Counter<'why'> = this.counter(
    'fenec_auth_refusals_total',
    'Requests refused at the front door for their credentials, by reason (missing, expired, wrong_audience…).',
    ['why'],
  );

  /** Counts one refusal of a request's credentials. */
  readonly authRefused = (why: string): void => {
    this.#authRefusals.inc({ why });
  };

  counter<Label extends string>(name: string, help: string, labelNames: readonly Label[]): Counter<Label> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** A histogram of seconds, in LATENCY_BUCKETS. */
  latency<Label extends string>(name: string, help: string, labelNames: readonly Label[]): Histogram<Label> {
    return new Histogram({ name, help, labelNames, buckets: LATENCY_BUCKETS, registers: [this.registry] });
  }

  /** This process's figures; a router under `--workers` sets it to every worker's, summed. */
  textOf: () => Promise<string> = () => this.registry.metrics();

  /**
   * The delay figures of the window since the last scrape, sampled every millisecond while requests come
   * (loop-delay.ts).
   */
  #loopDelay(sampler: LoopDelaySampler): void {
    for (const [name] of LOOP_DELAY_GAUGES) this.registry.removeSingleMetric(name);
    // Read once a scrape, by the first gauge before any is (registration order); the window starts again then.
    const collect = (): void => {
      const figures = sampler.read();
      for (const { key, gauge } of gauges) gauge.set(figures[key]);
    };
    const gauges = LOOP_DELAY_GAUGES.map(([name, key, help, aggregator], i) => ({
      key,
      gauge: new Gauge({ name, help, aggregator, registers: [this.registry], ...(i === 0 ? { collect } : {}) }),
    }));
  }

  /** The exposition text for `GET /_metrics`. */
  text(): Promise<string> {
    return this.textOf();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
