/**
 * The server's metrics: requests and their time by route pattern, and MCP tool calls by tool and
 * outcome. A collection or tenant never becomes a label.
 */
import type { Counter, Histogram } from 'prom-client';
import { MetricsRegistry } from '../../shared/http/metrics-registry.js';
import type { EmbedderCall, ToolOutcomeLabel } from '../workers/protocol.js';

/** A route pattern, never a path: a collection or tenant name must not become a label value. */
export type RouteLabel =
  '/query' | '/_mcp' | '/_health' | '/_metrics' | '/_revocations' | '/.well-known/oauth-protected-resource' | 'other';

export class HttpMetrics extends MetricsRegistry {
  readonly #requests: Counter<'route' | 'status'> = this.counter(
    'fenec_http_requests_total',
    'HTTP requests answered, by route pattern and status.',
    ['route', 'status'],
  );
  readonly #duration: Histogram<'route'> = this.latency(
    'fenec_http_request_duration_seconds',
    "Time from a request's arrival to its answer, by route pattern.",
    ['route'],
  );
  readonly #toolCalls: Counter<'tool' | 'outcome'> = this.counter(
    'fenec_mcp_tool_calls_total',
    'MCP tool calls, by tool (unknown for a name not offered) and outcome (ok, refused, failed). No collection is a label.',
    ['tool', 'outcome'],
  );

  readonly #embedderCalls: Counter<'outcome'> = this.counter(
    'fenec_embedder_calls_total',
    'Calls to the embedder (--embedder-url), by outcome: ok, retried (a 429, 5xx, refused or timed-out call tried again), failed.',
    ['outcome'],
  );
  readonly #embedderInputs: Counter = this.counter(
    'fenec_embedder_inputs_total',
    'Texts sent to the embedder, every call counted (a retried call counts its texts again).',
    [],
  );
  readonly #embedderDuration: Histogram = this.latency(
    'fenec_embedder_call_duration_seconds',
    'Time of one call to the embedder, from sending to its answer (or its failure).',
    [],
  );

  /** Counts one call to the embedder, made by a worker for a statement. */
  embedderCall(call: EmbedderCall): void {
    this.#embedderCalls.inc({ outcome: call.outcome });
    this.#embedderInputs.inc(call.inputs);
    this.#embedderDuration.observe(call.seconds);
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
}
