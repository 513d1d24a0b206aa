/**
 * fenec-server's HTTP side: a bare node:http server around HttpHandler, its statements run by the
 * worker thread that owns the file.
 */
import * as http from 'node:http';
import { Audit } from '../../shared/audit.js';
import { FrontDoor } from '../../shared/http/front-door.js';
import { closeServer, listen, type RunningServer } from '../../shared/http/listen.js';
import type { Logger } from '../../shared/logger.js';
import { tracedListener } from '../../shared/tracing.js';
import type { ServerConfig } from '../config.js';
import { ONE_FILE, type TenantLimits } from '../workers/protocol.js';
import type { WorkerPool } from '../workers/worker-pool.js';
import { RouteTable } from '../../shared/http/route-table.js';
import { HttpHandler } from './handler.js';
import { HttpMetrics } from './metrics.js';
import { FenecRequest, type NodeRoute } from './request.js';
import { metadataRoutes, ownRoutes, workRoutes } from './routes.js';

/** How long close() lets open requests finish past their time limit before it cuts their connections. */
export const CLOSE_GRACE_MS = 1_000;

/**
 * The node:http server of `handle`, traced when tracing is on. A client that sends `Expect:
 * 100-continue` (curl, for large bodies) is told to go on only once the request passed the front door
 * and its declared size: a refused body is never sent at all.
 */
export function createServer(config: ServerConfig, handle: http.RequestListener): http.Server {
  const listener = config.otel === undefined ? handle : tracedListener(handle, 'fenec-server');
  const server = http.createServer({ IncomingMessage: FenecRequest }, listener);
  server.on('checkContinue', listener);
  return server;
}

/**
 * Starts serving the file `pool` owns as `config` says, writing refused tokens to `audit` (the
 * workers write schema changes, revocations and MCP writes to theirs).
 *
 * @throws FenecError `invalid_option` when the address cannot be listened on (in use, not this
 *   machine's, a privileged port).
 */
export function startServer(
  config: ServerConfig,
  pool: WorkerPool,
  limits: TenantLimits,
  logger: Logger,
  audit: Audit = Audit.off,
): Promise<RunningServer> {
  const metrics = new HttpMetrics();
  const handler = new HttpHandler(
    config,
    new RouteTable('this server', fileRoutes(config, metrics)),
    (_req, work) => pool.run(ONE_FILE, limits, work),
    new FrontDoor(config, audit, metrics.authRefused),
    metrics,
    logger,
  );
  const server = createServer(config, handler.handle);
  return listen(server, config, logger, () => {
    handler.stop();
    return closeServer(server, limits.statementTimeoutMs + CLOSE_GRACE_MS);
  });
}

/** A one-file server's routes: its file's work routes, and its own. */
export function fileRoutes(config: ServerConfig, metrics: HttpMetrics): NodeRoute[] {
  return [
    ...workRoutes('', config.maxBodyBytes, config.mcp !== undefined),
    ...ownRoutes(metrics, 'file'),
    ...metadataRoutes('', config.oauth === undefined ? undefined : (tenant) => config.oauth!.resource.document(tenant)),
  ];
}
