/**
 * OpenTelemetry traces for fenec-router and fenec-server (`--otel-endpoint URL`).
 *
 * Off (no endpoint), nothing is loaded and the API stays the no-op it ships as: the spans the code
 * makes cost a function call. On, the process registers a tracer provider that batches spans to an
 * OTLP/HTTP collector (JSON), W3C trace-context propagation (`traceparent`), and an AsyncLocalStorage
 * context manager, so that a span made below a request (an MCP tool call's) is that request's child;
 * work a request's body starts takes the request's context with requestContext.
 *
 * What a span carries is named here and in docs/hosting.md: the tenant, the route as a pattern, the
 * method, the status, the node, the tool. Never a token, a statement, its parameters or a row.
 */
import type * as http from 'node:http';
import {
  context,
  diag,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  DiagLogLevel,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { Logger } from './logger.js';
import { TENANT_NAME_PATTERN } from './tenant-name.js';

/** Where spans go and how many: the CLI's `--otel-endpoint` and the standard OTEL_* variables, read once. */
export interface TracingConfig {
  /** The OTLP/HTTP traces URL, e.g. `http://collector:4318/v1/traces`. */
  readonly endpoint: string;
  /**
   * The share (0 to 1) of the traces begun here that are kept. A request that carries a `traceparent`
   * follows its sampled flag instead, so a node keeps exactly the traces its router keeps.
   */
  readonly sampleRatio: number;
  /** How long a finished span waits to be sent with the others of its batch (`OTEL_BSP_SCHEDULE_DELAY`). */
  readonly batchDelayMs: number;
  /** How long one export may take, its retries included (`OTEL_BSP_EXPORT_TIMEOUT`). */
  readonly exportTimeoutMs: number;
}

/** A running tracer provider, or none. */
export interface Tracing {
  /** Exports the spans still batched and stops; bounded, so that a collector that is down never holds a stop. */
  shutdown(): Promise<void>;
}

/** How long a stop waits for the last exports. */
const SHUTDOWN_TIMEOUT_MS = 5_000;
/** At most one log line per this long about spans that could not be exported (a collector down). */
const EXPORT_ERROR_LOG_MS = 60_000;

const OFF: Tracing = Object.freeze({ shutdown: () => Promise.resolve() });

/**
 * Registers the OpenTelemetry SDK globally as `config` says, as `serviceName`; with no config, leaves the no-op API.
 */
export async function startTracing(
  config: TracingConfig | undefined,
  serviceName: string,
  logger: Logger,
): Promise<Tracing> {
  if (config === undefined) return OFF;
  // Loaded only when asked for: a process without an endpoint never parses the SDK.
  const [
    { TracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler },
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { resourceFromAttributes },
    { OTLPTraceExporter },
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/exporter-trace-otlp-http'),
  ]);
  diag.setLogger(throttledDiag(logger), DiagLogLevel.WARN);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio) }),
    // Batched (every batchDelayMs, or 512 spans; at most 2048 waiting, the rest dropped): a slow collector never
    // holds a request.
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter({ url: config.endpoint, timeoutMillis: config.exportTimeoutMs }),
        scheduledDelayMillis: config.batchDelayMs,
        exportTimeoutMillis: config.exportTimeoutMs,
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    shutdown: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, SHUTDOWN_TIMEOUT_MS);
        provider
          .shutdown()
          .catch(() => undefined)
          .finally(() => {
            clearTimeout(timer);
            resolve();
          });
      }),
  };
}

/** The SDK's own complaints (an export that failed), as warnings in the log, one a minute at most. */
function throttledDiag(logger: Logger): Parameters<typeof diag.setLogger>[0] {
  let last = -Infinity;
  let dropped = 0;
  const log = (message: string): void => {
    const now = Date.now();
    if (now - last < EXPORT_ERROR_LOG_MS) {
      dropped += 1;
      return;
    }
    last = now;
    logger.warn({ otel: message.slice(0, 500), alike: dropped }, 'tracing: spans may not reach the collector');
    dropped = 0;
  };
  return { error: log, warn: log, info: () => undefined, debug: () => undefined, verbose: () => undefined };
}

/** What a request is traced as: its route as a pattern (never a tenant's name in it), and its tenant. */
export interface SpanRoute {
  readonly route: string;
  readonly tenant: string | undefined;
}

/** `/t/<tenant>` and `/t/<tenant>/<route>`; a tenant name as shared/tenant-name.ts has it. */
const TENANT_PATH = new RegExp(`^/t/(${TENANT_NAME_PATTERN})(?:/([^/]*))?$`);
/**
 * A tenant's routes, the router's and the node's: any other name is `other` (a caller's text is never a span's name).
 */
const TENANT_ROUTES: ReadonlySet<string> = new Set([
  'query',
  '_mcp',
  '_revocations',
  '_backup',
  '_policy',
  '_pause',
  '_resume',
  '_moved',
  '_move',
]);
/**
 * Probes, scrapes and the routers' poll of moved tenants (`GET /_moved`, each second): traced, they would bury the
 * requests' traces.
 */
const UNTRACED = /^\/(?:_health|_metrics|_console|_moved)(?:\/|$)/;
const NODE_ROUTES: ReadonlySet<string> = new Set(['/query', '/_mcp', '/_revocations', '/_tenants']);

/** The route a request's span is named by, or undefined for a request not traced. */
export function spanRouteOf(url: string | undefined): SpanRoute | undefined {
  const raw = url ?? '/';
  const q = raw.indexOf('?');
  const pathname = q === -1 ? raw : raw.slice(0, q);
  if (UNTRACED.test(pathname)) return undefined;
  const tenant = TENANT_PATH.exec(pathname);
  if (tenant !== null) {
    const route = tenant[2] === undefined ? '' : `/${TENANT_ROUTES.has(tenant[2]) ? tenant[2] : 'other'}`;
    return { route: `/t/{tenant}${route}`, tenant: tenant[1] };
  }
  return { route: NODE_ROUTES.has(pathname) ? pathname : 'other', tenant: undefined };
}

/** A request's span's attributes, as the router and the node both name them. */
export function requestAttributes(method: string | undefined, at: SpanRoute): Record<string, string> {
  const attributes: Record<string, string> = { 'http.request.method': method ?? 'GET', 'http.route': at.route };
  if (at.tenant !== undefined) attributes['fenec.tenant'] = at.tenant;
  return attributes;
}

/** Sets the answer's status on a request's span and ends it. */
export function endRequestSpan(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** Each traced request's context, its server span active: for the work its body's callbacks hand on. */
const REQUEST_CONTEXTS = new WeakMap<http.IncomingMessage, Context>();

/**
 * The context a request is traced in, for work begun once its body is in (a worker's request, a
 * refusal's tool span): the socket calls the body's listeners outside the request's own call, where
 * the active context is not the request's. Binding the request's events instead cost a context switch
 * per event. A request not traced: the active context.
 */
export function requestContext(req: http.IncomingMessage): Context {
  return REQUEST_CONTEXTS.get(req) ?? context.active();
}

/**
 * A node's request listener inside a server span: its parent is the `traceparent` the request
 * carries (the router's span); the listener's own call runs with the span active, and its later
 * callbacks find it with requestContext. Used only with tracing on: off, the listener is served bare.
 */
export function tracedListener(listener: http.RequestListener, tracerName: string): http.RequestListener {
  const tracer = trace.getTracer(tracerName);
  return (req, res) => {
    const at = spanRouteOf(req.url);
    if (at === undefined) return listener(req, res);
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      `${req.method} ${at.route}`,
      { kind: SpanKind.SERVER, attributes: requestAttributes(req.method, at) },
      parent,
    );
    const active = trace.setSpan(parent, span);
    REQUEST_CONTEXTS.set(req, active);
    res.once('close', () => endRequestSpan(span, res.statusCode));
    context.with(active, () => listener(req, res));
  };
}
