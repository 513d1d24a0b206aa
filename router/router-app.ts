/**
 * The router's HTTP application: its route table (router-routes.ts) and the stages every request runs, as a
 * node's do — the route, the front door (the token, and a JWT's tenant claim), the tenant (its node, from the
 * placement), the body (streamed to the node, or a small one read for a route of the router's own), the dispatch
 * (forward.ts's proxy, or the route's own handler), the reply. Quotas are the nodes': the router has no quota stage.
 */
import type * as http from 'node:http';
import { Audit } from '../shared/audit.js';
import { FenecError } from '../shared/errors.js';
import { readJson } from '../shared/http/body.js';
import { FrontDoor, type Checked } from '../shared/http/front-door.js';
import { writeError, writeJson } from '../shared/http/reply.js';
import { auditName, pathOf, RouteTable } from '../shared/http/route-table.js';
import type { Logger } from '../shared/logger.js';
import { Forwarder } from './forward.js';
import { Placement } from './placement.js';
import type { RouterOptions } from './router-config.js';
import { NO_NODE, RouterMetrics } from './router-metrics.js';
import { routerRoutes, type RouterReply, type RouterRoute } from './router-routes.js';
import type { Directory } from '../shared/nats/directory.js';
import { moveOwner, moveTenant, watchMoves } from './tenant-move.js';

export interface RouterApp {
  readonly handler: http.RequestListener;
  readonly metrics: RouterMetrics;
  /** Takes the placement file's pins anew (it changed). */
  setPins(pins: ReadonlyMap<string, string>): void;
  /** Closes the kept-alive upstream connections. */
  close(): void;
}

export function createRouterApp(
  options: RouterOptions,
  logger?: Logger,
  audit: Audit = Audit.off,
  directory?: Directory,
): RouterApp {
  const placement = new Placement(options.nodes, options.pins, directory);
  const metrics = new RouterMetrics();
  const door = new FrontDoor(options, audit, metrics.authRefused);
  const forwarder = new Forwarder(options, placement, metrics, logger);
  if (directory !== undefined) {
    metrics.directory(() => directory.staleSince);
    directory.listen({
      stale: (since) =>
        since === undefined
          ? logger?.info('directory fresh again: lease renewals heard from NATS')
          : logger?.warn(
              { lastHeard: since.toISOString() },
              "directory stale: no node's lease renewal heard from NATS for a lease; routing by it as it last stood",
            ),
    });
  }
  const reply = routerReply(metrics, logger);
  const table = new RouteTable(
    'the router',
    routerRoutes(
      ownRoutes(options, placement, forwarder, metrics, reply, logger, directory),
      options.oauth !== undefined,
    ),
  );

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const found = table.find(req.method ?? '', pathOf(req.url ?? '/'));
    if ('error' in found) return reply.fail(req, res, found.error, found.allow);
    const { route, tenant } = found;
    const admitted = frontDoor(req, res, route, tenant);
    if (admitted === true) return dispatch(req, res, route, tenant);
    // An OAuth token not seen before is verified asynchronously: the body waits in the socket meanwhile.
    if (admitted !== false)
      admitted.then(
        (ok) => ok && dispatch(req, res, route, tenant),
        (err: unknown) => reply.fail(req, res, err),
      );
  };

  /** The dispatch stage: forwarded to the tenant's node, or the router's own handler (its small body read). */
  function dispatch(req: http.IncomingMessage, res: http.ServerResponse, route: RouterRoute, tenant: string): void {
    const own = route.handler;
    if (own.kind === 'forward') return forwarder.forward(req, res, tenant, route.path);
    if (own.kind === 'plain') return own.run(req, res);
    readJson(req, route.body as number, own.refusals).then(
      (body) => own.run(req, res, tenant, body),
      (err: unknown) => reply.fail(req, res, err),
    );
  }

  /** Who may call the route (a public one asks nothing); on a tenant's route, a JWT must be that tenant's. */
  function frontDoor(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: RouterRoute,
    tenant: string,
  ): boolean | Promise<boolean> {
    if (route.access === 'public') return true;
    const name = auditName(route, req.method ?? '');
    const caller =
      tenant === '' ? door.caller(req, name, route.access) : door.tenantCaller(req, tenant, name, route.access);
    return caller instanceof Promise ? caller.then((checked) => admit(req, res, checked)) : admit(req, res, caller);
  }

  function admit(req: http.IncomingMessage, res: http.ServerResponse, caller: Checked): boolean {
    if (!(caller instanceof FenecError)) return true;
    reply.fail(req, res, caller);
    return false;
  }

  // Replicated nodes leave no tombstones: the directory, watched, says where each tenant is.
  const stopWatching =
    options.httpToken === undefined || directory !== undefined
      ? () => undefined
      : watchMoves(placement, forwarder.client, `Bearer ${options.httpToken}`, logger);
  return {
    handler,
    metrics,
    setPins: (pins) => placement.setPins(pins),
    close(): void {
      stopWatching();
      forwarder.close();
    },
  };
}

/** The reply stage of the router's own answers: counted under no node; a fault is logged. */
function routerReply(
  metrics: RouterMetrics,
  logger: Logger | undefined,
): RouterReply & {
  fail(req: http.IncomingMessage, res: http.ServerResponse, err: unknown, allow?: string): void;
} {
  return {
    send(req, res, status, body) {
      metrics.answered(NO_NODE, status);
      writeJson(req, res, status, JSON.stringify(body));
    },
    fail(req, res, err, allow?: string) {
      const error = writeError(req, res, err, allow === undefined ? undefined : { allow });
      if (error.status >= 500) logger?.error({ err: error.cause ?? error, code: error.code }, 'request failed');
      metrics.answered(NO_NODE, error.status);
    },
  };
}

/** The handlers of the router's own routes. */
function ownRoutes(
  options: RouterOptions,
  placement: Placement,
  forwarder: Forwarder,
  metrics: RouterMetrics,
  reply: RouterReply,
  logger: Logger | undefined,
  directory: Directory | undefined,
): Parameters<typeof routerRoutes>[0] {
  const unavailable = (err: unknown): FenecError =>
    err instanceof FenecError ? err : new FenecError('unavailable', String(err));
  return {
    console: 'router',
    health: (req, res) => {
      const nodes = options.nodes.map((node) => node.name);
      const since = directory?.staleSince;
      if (since === undefined) return reply.send(req, res, 200, { ok: true, nodes });
      // Still routing, by the directory as it last stood: 503 takes this router out of a load balancer's rotation
      // while another that hears NATS can serve.
      reply.send(req, res, 503, {
        ok: false,
        nodes,
        directory: 'stale',
        message:
          "no node's lease renewal heard from NATS for a lease or more: routing by the directory as it last stood",
      });
    },
    metrics: (req, res) => {
      metrics.text().then(
        (text) => {
          metrics.answered(NO_NODE, 200);
          res.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(text) });
          res.end(text);
        },
        (err: unknown) =>
          reply.fail(
            req,
            res,
            new FenecError('unavailable', `the router's metrics cannot be gathered: ${(err as Error).message}`, {
              hint: 'retry shortly',
            }),
          ),
      );
    },
    tenants: (req, res) => {
      Promise.all(options.nodes.map((node) => forwarder.tenantsOf(node, req.headers.authorization!))).then(
        (lists) => reply.send(req, res, 200, { tenants: lists.flat() }),
        (err: unknown) => reply.fail(req, res, unavailable(err)),
      );
    },
    move: (req, res, tenant, body) => {
      const to = (body as { to?: unknown } | undefined)?.to;
      const target = options.nodes.find((node) => node.name === to);
      if (target === undefined) {
        const names = options.nodes.map((node) => node.name).join(', ');
        return reply.fail(
          req,
          res,
          new FenecError('bad_request', `POST /t/${tenant}/_move takes {"to": NODE}, NODE one of ${names}`),
        );
      }
      const moving =
        directory === undefined
          ? moveTenant(tenant, target, placement, forwarder.client, req.headers.authorization!)
          : moveOwner(directory, tenant, target.name);
      moving.then(
        (moved) => {
          logger?.info(moved, 'tenant moved');
          reply.send(req, res, 200, moved);
        },
        (err: unknown) => reply.fail(req, res, unavailable(err)),
      );
    },
  };
}
