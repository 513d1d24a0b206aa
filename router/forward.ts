/**
 * The router's dispatch to a tenant's node: http-proxy, streamed both ways (no body is parsed here), traced, and
 * counted by node. Upstream connections are kept alive (one agent, `maxSocketsPerNode` each): without it,
 * http-proxy opens a connection per request and its p50 went past a second under load here.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { context, propagation, trace, SpanKind } from '@opentelemetry/api';
import httpProxy from 'http-proxy';
import { FenecError } from '../shared/errors.js';
import { writeError } from '../shared/http/reply.js';
import type { Logger } from '../shared/logger.js';
import { endRequestSpan, requestAttributes } from '../shared/tracing.js';
import type { Placement, NodeTarget } from './placement.js';
import type { RouterOptions } from './router-config.js';
import type { RouterMetrics } from './router-metrics.js';
import type { NodeClient } from './tenant-move.js';

interface InFlight {
  readonly node: NodeTarget;
  readonly start: bigint;
}

export class Forwarder {
  readonly client: NodeClient;
  readonly #placement: Placement;
  readonly #metrics: RouterMetrics;
  readonly #logger: Logger | undefined;
  readonly #proxy: httpProxy;
  readonly #tracer = trace.getTracer('fenec-router');
  readonly #inFlight = new WeakMap<http.IncomingMessage, InFlight>();

  constructor(options: RouterOptions, placement: Placement, metrics: RouterMetrics, logger: Logger | undefined) {
    this.#placement = placement;
    this.#metrics = metrics;
    this.#logger = logger;
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
    this.#proxy = httpProxy.createProxyServer({
      xfwd: true,
      changeOrigin: true,
      proxyTimeout: options.nodeTimeoutMs,
      ws: false,
    });
    this.#proxy.on('proxyRes', (_proxyRes, req) => {
      const flight = this.#inFlight.get(req);
      if (flight !== undefined) metrics.proxied(flight.node.name, seconds(flight.start));
    });
  }

  /**
   * Sends the request on to the tenant's node, with the path rebuilt from checked parts only (`path`, the route's
   * pattern with the tenant put in). Nodes see the router's requests under their own Host, so the router is the one
   * place where a page's Origin can be judged; it is not passed on.
   */
  forward(req: http.IncomingMessage, res: http.ServerResponse, tenant: string, pattern: string): void {
    const node = this.#placement.nodeOf(tenant);
    const path = pattern.replace('<tenant>', tenant);
    const parent = propagation.extract(context.active(), req.headers);
    // The span's route is the pattern, never a caller's text nor the tenant.
    const route = pattern.replace('<tenant>', '{tenant}');
    const attributes = requestAttributes(req.method, { route, tenant });
    attributes['fenec.node'] = node.name;
    const span = this.#tracer.startSpan(`${req.method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent);
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(parent, span), carrier);
    this.#inFlight.set(req, { node, start: process.hrtime.bigint() });
    const url = req.url ?? '/';
    const search = url.indexOf('?');
    req.url = search === -1 ? path : path + url.slice(search);
    delete req.headers.origin;
    res.once('close', () => {
      this.#metrics.answered(node.name, res.statusCode);
      endRequestSpan(span, res.statusCode);
    });
    const { httpAgent, httpsAgent } = this.client;
    this.#proxy.web(
      req,
      res,
      { target: node.url.href, agent: node.url.protocol === 'https:' ? httpsAgent : httpAgent, headers: carrier },
      (err: NodeJS.ErrnoException) => this.#failed(req, res, node, tenant, err),
    );
  }

  #failed(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    node: NodeTarget,
    tenant: string,
    err: NodeJS.ErrnoException,
  ): void {
    const flight = this.#inFlight.get(req);
    if (flight !== undefined) this.#metrics.proxied(node.name, seconds(flight.start));
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
    this.#proxy.close();
    this.client.httpAgent.destroy();
    this.client.httpsAgent.destroy();
  }
}

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
