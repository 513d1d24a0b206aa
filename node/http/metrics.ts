/**
 * The server's Prometheus metrics, in a registry of its own (not prom-client's global one), so that
 * two servers in one process, or a library that registers its own metrics, never mix figures.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** A route pattern, never a path: a collection or tenant name must not become a label value. */
export type RouteLabel = '/query' | '/_mcp' | '/_health' | '/_metrics' | '/_revocations' | 'other';

/** How an MCP tool call ended: answered, refused as an isError result, or failed (a fault, an unknown tool). */
export type ToolOutcomeLabel = 'ok' | 'refused' | 'failed';

/** Sub-millisecond buckets: a get by id answers in tenths of a millisecond. */
const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export class HttpMetrics {
  readonly registry = new Registry();
  readonly #requests: Counter<'route' | 'status'>;
  readonly #duration: Histogram<'route'>;
  readonly #toolCalls: Counter<'tool' | 'outcome'>;

  constructor() {
    this.#requests = new Counter({
      name: 'fenec_http_requests_total',
      help: 'HTTP requests answered, by route pattern and status.',
      labelNames: ['route', 'status'],
      registers: [this.registry],
    });
    this.#duration = new Histogram({
      name: 'fenec_http_request_duration_seconds',
      help: 'Time from a request\'s arrival to its answer, by route pattern.',
      labelNames: ['route'],
      buckets: DURATION_BUCKETS,
      registers: [this.registry],
    });
    this.#toolCalls = new Counter({
      name: 'fenec_mcp_tool_calls_total',
      help: 'MCP tool calls, by tool (unknown for a name not offered) and outcome (ok, refused, failed). No collection is a label.',
      labelNames: ['tool', 'outcome'],
      registers: [this.registry],
    });
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts one MCP tool call. */
  toolCall(tool: string, outcome: ToolOutcomeLabel): void {
    this.#toolCalls.inc({ tool, outcome });
  }

  /** Counts one answered request. */
  observe(route: RouteLabel, status: number, seconds: number): void {
    this.#requests.inc({ route, status });
    this.#duration.observe({ route }, seconds);
  }

  /** The exposition text for `GET /_metrics`. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
