/**
 * The router's metrics, in a registry of its own: requests by node and status, and the time from a
 * request's arrival to the node's answer headers, by node. A tenant never becomes a label.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The node label of a request the router answered itself (refused, health, metrics). */
export const NO_NODE = 'none';

const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class RouterMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'node' | 'status'>;
  readonly #latency: Histogram<'node'>;

  constructor() {
    this.#requests = new Counter({
      name: 'fenec_router_requests_total',
      help: 'Requests answered by the router, by node (none: answered by the router itself) and status.',
      labelNames: ['node', 'status'],
      registers: [this.registry],
    });
    this.#latency = new Histogram({
      name: 'fenec_router_proxy_duration_seconds',
      help: 'Time from a request\'s arrival to the node\'s answer headers (or the router\'s 503), by node.',
      labelNames: ['node'],
      buckets: DURATION_BUCKETS,
      registers: [this.registry],
    });
    collectDefaultMetrics({ register: this.registry });
  }

  answered(node: string, status: number): void {
    this.#requests.inc({ node, status });
  }

  proxied(node: string, seconds: number): void {
    this.#latency.observe({ node }, seconds);
  }

  /** This process's figures; under `--workers`, every worker's, summed (set by the CLI). */
  textOf: () => Promise<string> = () => this.registry.metrics();

  text(): Promise<string> {
    return this.textOf();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
