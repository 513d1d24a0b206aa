/**
 * The router's HTTP application: express for its few routes, http-proxy for the forwarding.
 *
 * `/t/<tenant>/query`, `/t/<tenant>/_mcp` and `/t/<tenant>/_revocations` (any method) and `PUT`/`DELETE /t/<tenant>` go
 * to the tenant's node, streamed both ways (no body is parsed here), once the token is checked; `GET /_tenants` asks
 * every node; `/_health` and `/_metrics` are the router's own.
 *
 * Upstream connections are kept alive (one agent, `maxSocketsPerNode` each): without it, http-proxy opens a connection
 * per request and its p50 went past a second under load here.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { context, propagation, trace, SpanKind } from '@opentelemetry/api';
import express, { type Request, type Response } from 'express';
import httpProxy from 'http-proxy';
import { METADATA_PREFIX } from '../shared/auth/oauth/resource.js';
import { serveConsole } from '../shared/console.js';
import { Audit } from '../shared/audit.js';
import { endRequestSpan, requestAttributes } from '../shared/tracing.js';
import { FenecError } from '../shared/errors.js';
import { FrontDoor, type Caller } from '../shared/http/front-door.js';
import { readJson } from '../shared/http/body.js';
import { writeError, writeJson } from '../shared/http/reply.js';
import type { Logger } from '../shared/logger.js';
import { Placement, type NodeTarget } from './placement.js';
import type { RouterOptions } from './router-config.js';
import { NO_NODE, RouterMetrics } from './router-metrics.js';
import { invalidTenant, isTenantName } from '../shared/tenant-name.js';
import { moveTenant, watchMoves } from './tenant-move.js';

/** What a tenant's path may name after `/t/<tenant>/`: the node's routes, nothing else. */
const TENANT_ROUTES: ReadonlySet<string> = new Set(['query', '_mcp', '_revocations']);
/** `{"to": NODE}` */
const MAX_MOVE_BODY = 4096;

interface InFlight {
  readonly node: NodeTarget;
  readonly start: bigint;
}

export interface RouterApp {
  readonly handler: http.RequestListener;
  readonly metrics: RouterMetrics;
  /** Takes the placement file's pins anew (it changed). */
  setPins(pins: ReadonlyMap<string, string>): void;
  /** Closes the kept-alive upstream connections. */
  close(): void;
}

/** Audit lines name a tenant's route by its pattern, never the tenant. */
const ROUTE_PATTERNS: Readonly<Record<string, string>> = {
  query: '/t/<tenant>/query',
  _mcp: '/t/<tenant>/_mcp',
  _revocations: '/t/<tenant>/_revocations',
};

export function createRouterApp(options: RouterOptions, logger?: Logger, audit: Audit = Audit.off): RouterApp {
  const placement = new Placement(options.nodes, options.pins);
  const metrics = new RouterMetrics();
  const door = new FrontDoor(options, audit, metrics.authRefused);
  const tracer = trace.getTracer('fenec-router');
  const agentOptions = {
    keepAlive: true,
    maxSockets: options.maxSocketsPerNode,
    maxFreeSockets: options.maxSocketsPerNode,
  };
  const httpAgent = new http.Agent(agentOptions);
  const httpsAgent = new https.Agent(agentOptions);
  const proxy = httpProxy.createProxyServer({
    xfwd: true,
    changeOrigin: true,
    proxyTimeout: options.nodeTimeoutMs,
    ws: false,
  });
  const inFlight = new WeakMap<http.IncomingMessage, InFlight>();
  const nodeClient = { httpAgent, httpsAgent, timeoutMs: options.nodeTimeoutMs };

  proxy.on('proxyRes', (_proxyRes, req) => {
    const flight = inFlight.get(req);
    if (flight === undefined) return;
    metrics.proxied(flight.node.name, seconds(flight.start));
  });

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);

  app.get(/^\/_console(\/.*)?$/, (req, res) => serveConsole(req, res, req.path, 'router'));
  app.get('/_health', (_req, res) =>
    send(res, NO_NODE, 200, { ok: true, nodes: options.nodes.map((node) => node.name) }),
  );

  app.get('/_metrics', async (req, res) => {
    if (options.httpToken !== undefined) {
      const caller = serverOnly(req, '/_metrics');
      if (caller instanceof FenecError) return refuse(res, caller);
    }
    let text: string;
    try {
      text = await metrics.text();
    } catch (err) {
      return refuse(
        res,
        new FenecError('unavailable', `the router's metrics cannot be gathered: ${(err as Error).message}`, {
          hint: 'retry shortly',
        }),
      );
    }
    metrics.answered(NO_NODE, 200);
    res.status(200).type(metrics.contentType).send(text);
  });

  app.get('/_tenants', async (req, res) => {
    const caller = serverOnly(req, '/_tenants');
    if (caller instanceof FenecError) return refuse(res, caller);
    try {
      const lists = await Promise.all(options.nodes.map((node) => tenantsOf(node, req.headers.authorization!)));
      send(res, NO_NODE, 200, { tenants: lists.flat() });
    } catch (err) {
      refuse(res, err instanceof FenecError ? err : new FenecError('unavailable', String(err)));
    }
  });

  // A tenant's protected resource metadata (RFC 9728): the node that holds the tenant answers it, or says it has none.
  app.all(/^\/\.well-known\/oauth-protected-resource\/t\/([^/]+)\/_mcp$/, (req, res) => {
    const tenant = req.params[0]!;
    if (options.oauth === undefined)
      return refuse(res, new FenecError('not_found', `no route ${req.method} ${req.path}`));
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return refuse(res, new FenecError('method_not_allowed', `${METADATA_PREFIX}/t/<tenant>/_mcp takes GET`));
    if (!isTenantName(tenant)) return refuse(res, new FenecError('unknown_tenant', 'no such tenant on this server'));
    forward(req, res, tenant, `${METADATA_PREFIX}/t/${tenant}/_mcp`);
  });

  app.all('/t/:tenant', (req, res) => {
    const tenant = req.params.tenant!;
    if (!isTenantName(tenant)) return refuse(res, invalidTenant(tenant));
    if (req.method !== 'PUT' && req.method !== 'DELETE') {
      return refuse(
        res,
        new FenecError('method_not_allowed', `/t/${tenant} takes PUT (create, with quotas) and DELETE`),
      );
    }
    // The server's token only: it is not the JWT's own tenant that it would create or delete.
    const caller = serverOnly(req, `${req.method} /t/<tenant>`);
    if (caller instanceof FenecError) return refuse(res, caller);
    forward(req, res, tenant, `/t/${tenant}`);
  });

  app.all('/t/:tenant/:route', (req, res) => {
    const tenant = req.params.tenant!;
    if (!isTenantName(tenant)) return refuse(res, invalidTenant(tenant));
    const route = req.params.route!;
    if (route === '_backup' || route === '_move') return transferRoute(req, res, tenant, route);
    if (!TENANT_ROUTES.has(route))
      return refuse(
        res,
        new FenecError(
          'not_found',
          `a tenant's routes are /t/${tenant}/query, /t/${tenant}/_mcp and /t/${tenant}/_revocations`,
        ),
      );
    tenantRoute(req, res, tenant, route);
  });

  /**
   * `GET|PUT /t/<tenant>/_backup` (forwarded to the tenant's node, streamed) and
   * `POST /t/<tenant>/_move {"to": NODE}` (done here, node to node): the server's token only.
   */
  function transferRoute(req: Request, res: Response, tenant: string, route: '_backup' | '_move'): void {
    const methods = route === '_backup' ? ['GET', 'PUT'] : ['POST'];
    if (!methods.includes(req.method))
      return refuse(res, new FenecError('method_not_allowed', `/t/${tenant}/${route} takes ${methods.join(' or ')}`));
    const caller = serverOnly(req, `/t/<tenant>/${route}`);
    if (caller instanceof FenecError) return refuse(res, caller);
    if (route === '_backup') return forward(req, res, tenant, `/t/${tenant}/_backup`);
    readJson(req, MAX_MOVE_BODY)
      .then((body) => {
        const to = (body as { to?: unknown } | undefined)?.to;
        const target = options.nodes.find((node) => node.name === to);
        if (target === undefined) {
          throw new FenecError(
            'bad_request',
            `POST /t/${tenant}/_move takes {"to": NODE}, NODE one of ${options.nodes.map((node) => node.name).join(', ')}`,
          );
        }
        return moveTenant(tenant, target, placement, nodeClient, req.headers.authorization!);
      })
      .then(
        (moved) => {
          logger?.info(moved, 'tenant moved');
          send(res, NO_NODE, 200, moved);
        },
        (err) => refuse(res, err instanceof FenecError ? err : new FenecError('unavailable', String(err))),
      );
  }

  /**
   * The hot route, `/t/<tenant>/query|_mcp`, and `/t/<tenant>/_revocations` (the server's token only):
   * checked, then forwarded. Nodes see the router's requests under their own Host, so the router is
   * the one place where a page's Origin can be judged; it is not passed on.
   */
  function tenantRoute(req: http.IncomingMessage, res: http.ServerResponse, tenant: string, route: string): void {
    const caller = door.tenantCaller(req, tenant, ROUTE_PATTERNS[route]!, route === '_revocations' ? 'server' : 'any');
    if (caller instanceof FenecError) return refuse(res, caller);
    forward(req, res, tenant, `/t/${tenant}/${route}`);
  }

  app.use((req, res) =>
    refuse(
      res,
      new FenecError(
        'not_found',
        `no route ${req.method} ${req.path}; the router serves /t/<tenant>/query, /t/<tenant>/_mcp, /t/<tenant>/_revocations, PUT|DELETE /t/<tenant>, GET /_tenants, /_health, /_metrics${req.path === '/_revocations' ? " (revocations are a tenant's: fenec token revoke … --tenant NAME)" : ''}`,
      ),
    ),
  );

  /** Sends the request on to the tenant's node, with the path rebuilt from checked parts only. */
  function forward(req: http.IncomingMessage, res: http.ServerResponse, tenant: string, path: string): void {
    const node = placement.nodeOf(tenant);
    const parent = propagation.extract(context.active(), req.headers);
    // The path is rebuilt from checked parts: its pattern is the tenant's taken out, never a caller's text.
    const route = path.replace(`/t/${tenant}`, '/t/{tenant}');
    const attributes = requestAttributes(req.method, { route, tenant });
    attributes['fenec.node'] = node.name;
    const span = tracer.startSpan(`${req.method} ${route}`, { kind: SpanKind.SERVER, attributes }, parent);
    const carrier: Record<string, string> = {};
    propagation.inject(trace.setSpan(parent, span), carrier);
    inFlight.set(req, { node, start: process.hrtime.bigint() });
    const url = req.url ?? '/';
    const search = url.indexOf('?');
    req.url = search === -1 ? path : path + url.slice(search);
    delete req.headers.origin;
    res.once('close', () => {
      metrics.answered(node.name, res.statusCode);
      endRequestSpan(span, res.statusCode);
    });
    proxy.web(
      req,
      res,
      {
        target: node.url.href,
        agent: node.url.protocol === 'https:' ? httpsAgent : httpAgent,
        headers: carrier,
      },
      (err: NodeJS.ErrnoException) => {
        const flight = inFlight.get(req);
        if (flight !== undefined) metrics.proxied(node.name, seconds(flight.start));
        logger?.error({ node: node.name, err: err.code ?? err.message }, 'node does not answer');
        if (res.headersSent) {
          res.destroy();
          return;
        }
        writeError(
          res,
          new FenecError(
            'unavailable',
            `node ${node.name} (which holds tenant ${tenant}) does not answer: ${err.code ?? err.message}`,
            {
              hint: 'retry shortly; the node is restarting or unreachable',
            },
          ),
          { 'retry-after': '1' },
        );
      },
    );
  }

  function serverOnly(req: Request, route: string): Caller | FenecError {
    return door.caller(req, route, 'server');
  }

  /** A node's tenants, each named with the node. */
  function tenantsOf(node: NodeTarget, authorization: string): Promise<unknown[]> {
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
          agent: url.protocol === 'https:' ? httpsAgent : httpAgent,
          timeout: options.nodeTimeoutMs,
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

  function send(res: http.ServerResponse, node: string, status: number, body: unknown): void {
    metrics.answered(node, status);
    writeJson(res, status, JSON.stringify(body));
  }

  /** A refusal of the router's own, as a node writes it (shared/http/reply.ts); a fault is logged. */
  function refuse(res: http.ServerResponse, err: unknown): void {
    const error = writeError(res, err);
    if (error.status >= 500) logger?.error({ err: error.cause ?? error, code: error.code }, 'request failed');
    metrics.answered(NO_NODE, error.status);
  }

  const stopWatching =
    options.httpToken === undefined
      ? () => undefined
      : watchMoves(placement, nodeClient, `Bearer ${options.httpToken}`, logger);
  const expressApp = app as unknown as http.RequestListener;
  return {
    // The hot route skips express's router (about half the router's time per request, measured);
    // every other route, and any tenant path that does not match exactly, goes through express.
    handler: (req, res) => {
      const match = HOT_ROUTE.exec(req.url ?? '');
      if (match !== null && isTenantName(match[1]!)) return tenantRoute(req, res, match[1]!, match[2]!);
      expressApp(req, res);
    },
    metrics,
    setPins: (pins) => placement.setPins(pins),
    close(): void {
      stopWatching();
      proxy.close();
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

/** `/t/<tenant>/query` or `/t/<tenant>/_mcp`, with or without a query string. */
const HOT_ROUTE = /^\/t\/([a-z0-9][a-z0-9-]{0,62})\/(query|_mcp)(?:\?|$)/;

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}
