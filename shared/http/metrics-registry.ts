/**
 * Prometheus metrics, the router's and the node's alike: a registry of each program's own (not
 * prom-client's global one), so that two servers in one process, or a library that registers its
 * own metrics, never mix figures; the process's default metrics; and the exposition text.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Sub-millisecond buckets up to 10 s: a get by id answers in tenths of a millisecond, a slow node in seconds. */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** How often the event loop's delay is sampled, in ms: the error of nodejs_eventloop_lag_* figures. */
export const LOOP_DELAY_RESOLUTION_MS = 1;

export class MetricsRegistry {
  readonly registry = new Registry();

  constructor() {
    // The event loop's delay is sampled by a timer every millisecond, not prom-client's 10: Node's
    // histogram records the whole time between two ticks, so at 10 ms an idle loop read 10–13 ms and a
    // 20 ms bound could not be checked. It costs an idle process about 1 % of a core.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: LOOP_DELAY_RESOLUTION_MS });
  }

  counter<Label extends string>(name: string, help: string, labelNames: readonly Label[]): Counter<Label> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** A histogram of seconds, in LATENCY_BUCKETS. */
  latency<Label extends string>(name: string, help: string, labelNames: readonly Label[]): Histogram<Label> {
    return new Histogram({ name, help, labelNames, buckets: LATENCY_BUCKETS, registers: [this.registry] });
  }

  /** This process's figures; a router under `--workers` sets it to every worker's, summed. */
  textOf: () => Promise<string> = () => this.registry.metrics();

  /** The exposition text for `GET /_metrics`. */
  text(): Promise<string> {
    return this.textOf();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
