/**
 * The router's dispatch to a tenant's node: node:http, streamed both ways (no body is parsed here), traced, and
 * counted by node. Upstream connections are kept alive (one agent, `maxSocketsPerNode` each): without it, a
 * connection per request put the p50 past a second under load here.
 *
 * A request is sent on with http.request and its headers as one flat list, its body and the answer piped by hand:
 * http-proxy did the same with a copy of its options, two url.parse calls, a listener per pass and a socket
 * timeout per request, and spent about 200 µs a request more than a bare node:http proxy (bench/HISTORY.md).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { context, propagation, trace, SpanKind, type Span } from '@opentelemetry/api';
import { FenecError } from '../shared/errors.js';
import { writeError } from '../shared/http/reply.js';
import type { Logger } from '../shared/logger.js';
import { endRequestSpan, requestAttributes } from '../shared/tracing.js';
import type { Placement, NodeTarget } from './placement.js';
import type { RouterOptions } from './router-config.js';
import type { RouterMetrics } from './router-metrics.js';
import type { NodeClient } from './tenant-move.js';

/**
 * Headers that are the connection's, not the request's (RFC 9110 §7.6.1), and those the router writes itself: a
 * client's `Connection: close` must not close a kept-alive connection to the node, nor the node's its client's.
 */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
]);
/** Rewritten from the client's: the node's own Host, and where the request came from. */
const REWRITTEN: ReadonlySet<string> = new Set([
  ...HOP_BY_HOP,
  'host',
  'origin',
  'x-forwarded-for',
  'x-forwarded-port',
  'x-forwarded-proto',
  'x-forwarded-host',
]);
/** An answer's body is framed again by the router's own server (chunked, or the length the node gave). */
const ANSWER_DROPPED: ReadonlySet<string> = new Set([...HOP_BY_HOP, 'transfer-encoding']);

export class Forwarder {
  readonly client: NodeClient;
  readonly #placement: Placement;
  readonly #metrics: RouterMetrics;
  readonly #logger: Logger | undefined;
  readonly #tracer = trace.getTracer('fenec-router');
  readonly #timeoutMs: number;
  /**
   * Whether a tracer is registered (startTracing, before the app is made): without one the API is a no-op, and a
   * span would only be built and dropped, as a node's listener is served bare then.
   */
  readonly #traced = propagation.fields().length > 0;
  /** The client's headers not sent on: traced, its trace headers too (the router's span's replace them). */
  readonly #rewritten: ReadonlySet<string> = this.#traced
    ? new Set([...REWRITTEN, ...propagation.fields()])
    : REWRITTEN;

  constructor(options: RouterOptions, placement: Placement, metrics: RouterMetrics, logger: Logger | undefined) {
    this.#placement = placement;
    this.#metrics = metrics;
    this.#logger = logger;
    this.#timeoutMs = options.nodeTimeoutMs;
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSocketsPerNode,
      maxFreeSockets: options.maxSocketsPerNode,
    };
    this.client = {
      httpAgent: new http.Agent(agentOptions),
      httpsAgent: new https.Agent(agentOptions),
      timeoutMs: options.nodeTimeoutMs,
    };
  }

  /**
   * Sends the request on to the tenant's node, with the path rebuilt from checked parts only (`path`, the route's
   * pattern with the tenant put in). Nodes see the router's requests under their own Host, so the router is the one
   * place where a page's Origin can be judged; it is not passed on. A node that has not begun to answer within
   * --node-timeout gets the client a 503.
   */
  forward(req: http.IncomingMessage, res: http.ServerResponse, tenant: string, pattern: string): void {
    const start = process.hrtime.bigint();
    const node = this.#placement.nodeOf(tenant);
    const url = req.url ?? '/';
    const search = url.indexOf('?');
    const path = pattern.replace('<tenant>', tenant) + (search === -1 ? '' : url.slice(search));
    const headers = outgoingHeaders(req, node.url.host, this.#rewritten);
    const span = this.#traced ? this.#span(req, pattern, tenant, node, headers) : undefined;
    const secure = node.url.protocol === 'https:';
    const upstream = (secure ? https.request : http.request)({
      host: node.url.hostname,
      port: node.url.port,
      method: req.method,
      path,
      headers,
      agent: secure ? this.client.httpsAgent : this.client.httpAgent,
    });
    let answered = false;
    let left = false;
    const timer = setTimeout(() => {
      upstream.destroy(Object.assign(new Error(`no answer within ${this.#timeoutMs} ms`), { code: 'ETIMEDOUT' }));
    }, this.#timeoutMs);
    // A replicated write's `102 Processing` (its commit on the node, before the log's ack) is passed on as it comes:
    // the client sends its next batch on it.
    upstream.on('information', (info) => {
      if (info.statusCode === 102 && !res.headersSent) res.writeProcessing();
    });
    upstream.on('response', (answer) => {
      clearTimeout(timer);
      answered = true;
      this.#metrics.proxied(node.name, seconds(start));
      res.writeHead(answer.statusCode!, answer.statusMessage, answerHeaders(answer.rawHeaders));
      answer.on('data', (chunk: Buffer) => {
        if (!res.write(chunk)) answer.pause();
      });
      res.on('drain', () => answer.resume());
      answer.on('end', () => res.end());
      answer.on('error', () => res.destroy());
    });
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      // The client went away first: nothing to answer.
      if (left) return;
      if (!answered) this.#metrics.proxied(node.name, seconds(start));
      this.#failed(req, res, node, tenant, err);
    });
    // A client that leaves (an MCP stream closed, say) ends the node's request too.
    res.once('close', () => {
      clearTimeout(timer);
      left = !res.writableFinished;
      if (left) upstream.destroy();
      this.#metrics.answered(node.name, res.statusCode);
      if (span !== undefined) endRequestSpan(span, res.statusCode);
    });
    req.on('data', (chunk: Buffer) => {
      if (!upstream.write(chunk)) req.pause();
    });
    upstream.on('drain', () => req.resume());
    req.on('end', () => upstream.end());
  }

  /** The request's span, a child of the `traceparent` it came with; its own `traceparent` added to `headers`. */
  #span(req: http.IncomingMessage, pattern: string, tenant: string, node: NodeTarget, headers: string[]): Span {
    const parent = propagation.extract(context.active(), req.headers);
    // The span's route is the pattern, never a caller's text nor the tenant.
    const route = pattern.replace('<tenant>', '{tenant}');
    const attributes = requestAttributes(req.method, { route, tenant });
    attributes['fenec.node'] = node.name;
    const span = this.#tracer.startSpan(`${req.method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent);
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(parent, span), carrier);
    for (const name in carrier) headers.push(name, carrier[name]!);
    return span;
  }

  #failed(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    node: NodeTarget,
    tenant: string,
    err: NodeJS.ErrnoException,
  ): void {
    this.#logger?.error({ node: node.name, err: err.code ?? err.message }, 'node does not answer');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    writeError(
      req,
      res,
      new FenecError(
        'unavailable',
        `node ${node.name} (which holds tenant ${tenant}) does not answer: ${err.code ?? err.message}`,
        { hint: 'retry shortly; the node is restarting or unreachable' },
      ),
      { 'retry-after': '1' },
    );
  }

  /** A node's tenants, each named with the node. */
  tenantsOf(node: NodeTarget, authorization: string): Promise<unknown[]> {
    return new Promise((resolve, reject) => {
      const url = new URL('/_tenants', node.url);
      const lib = url.protocol === 'https:' ? https : http;
      const unavailable = (why: string): FenecError =>
        new FenecError('unavailable', `node ${node.name} does not answer its tenant list: ${why}`);
      const req = lib.request(
        url,
        {
          method: 'GET',
          headers: { authorization },
          agent: url.protocol === 'https:' ? this.client.httpsAgent : this.client.httpAgent,
          timeout: this.client.timeoutMs,
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            if (answer.statusCode !== 200) return reject(unavailable(`status ${answer.statusCode}`));
            try {
              const body = JSON.parse(Buffer.concat(chunks).toString()) as { tenants: Record<string, unknown>[] };
              resolve(body.tenants.map((tenant) => ({ ...tenant, node: node.name })));
            } catch {
              reject(unavailable('not JSON'));
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err: NodeJS.ErrnoException) => reject(unavailable(err.code ?? err.message)));
      req.end();
    });
  }

  /** Closes the kept-alive upstream connections. */
  close(): void {
    this.client.httpAgent.destroy();
    this.client.httpsAgent.destroy();
  }
}

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

/**
 * The request's headers for the node, as one flat list (node:http writes it as it is, without a setHeader each):
 * the client's, less the connection's own, its Origin (and its trace headers when traced), with the node's Host,
 * and X-Forwarded-For, -Port, -Proto and -Host added to what a proxy before may have set.
 */
function outgoingHeaders(req: http.IncomingMessage, host: string, rewritten: ReadonlySet<string>): string[] {
  const given = req.headers;
  const out: string[] = ['host', host];
  for (const name in given) {
    if (rewritten.has(name)) continue;
    const value = given[name];
    if (typeof value === 'string') out.push(name, value);
    else if (value !== undefined) for (const one of value) out.push(name, one);
  }
  const own = given.host ?? '';
  const port = /:(\d+)$/.exec(own)?.[1] ?? (isEncrypted(req) ? '443' : '80');
  const proto = isEncrypted(req) ? 'https' : 'http';
  out.push(
    'x-forwarded-for',
    appended(given['x-forwarded-for'], req.socket.remoteAddress ?? ''),
    'x-forwarded-port',
    appended(given['x-forwarded-port'], port),
    'x-forwarded-proto',
    appended(given['x-forwarded-proto'], proto),
    'x-forwarded-host',
    (given['x-forwarded-host'] as string | undefined) || own,
  );
  return out;
}

/** An X-Forwarded-* list with this hop's value at its end. */
function appended(before: string | string[] | undefined, value: string): string {
  const list = Array.isArray(before) ? before.join(',') : before;
  return list === undefined || list === '' ? value : `${list},${value}`;
}

function isEncrypted(req: http.IncomingMessage): boolean {
  return (req.socket as { encrypted?: boolean }).encrypted === true;
}

/** The node's answer headers, as a flat list, less the connection's own and the body's framing. */
function answerHeaders(raw: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (!ANSWER_DROPPED.has(name.toLowerCase())) out.push(name, raw[i + 1]!);
  }
  return out;
}
