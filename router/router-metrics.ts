/**
 * The router's metrics: requests by node and status, and the time from a request's arrival to the
 * node's answer headers, by node. A tenant never becomes a label.
 */
import { Gauge, type Counter, type Histogram } from 'prom-client';
import { MetricsRegistry } from '../shared/http/metrics-registry.js';

/** The node label of a request the router answered itself (refused, health, metrics). */
export const NO_NODE = 'none';

export class RouterMetrics extends MetricsRegistry {
  readonly #requests: Counter<'node' | 'status'> = this.counter(
    'fenec_router_requests_total',
    'Requests answered by the router, by node (none: answered by the router itself) and status.',
    ['node', 'status'],
  );
  readonly #latency: Histogram<'node'> = this.latency(
    'fenec_router_proxy_duration_seconds',
    "Time from a request's arrival to the node's answer headers (or the router's 503), by node.",
    ['node'],
  );

  answered(node: string, status: number): void {
    this.#requests.inc({ node, status });
  }

  proxied(node: string, seconds: number): void {
    this.#latency.observe({ node }, seconds);
  }

  /** The replicated tenants' directory's staleness (`--nats`), as `staleSince` tells it at each scrape. */
  directory(staleSince: () => Date | undefined): void {
    new Gauge({
      name: 'fenec_router_directory_stale_seconds',
      help: "How long the router has heard no node's lease renewal from NATS, once that is a lease or more (0: its directory is fresh); while stale it routes by the directory as it last stood.",
      aggregator: 'max',
      registers: [this.registry],
      collect() {
        const since = staleSince();
        this.set(since === undefined ? 0 : (Date.now() - since.getTime()) / 1000);
      },
    });
  }
}
