/**
 * fenec-server's HTTP side: a bare node:http server around HttpHandler, its statements run by the
 * worker thread that owns the file.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Audit } from '../../shared/audit.js';
import { FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { tracedListener } from '../../shared/tracing.js';
import type { ServerConfig } from '../config.js';
import { ONE_FILE, type TenantLimits } from '../workers/protocol.js';
import type { WorkerPool } from '../workers/worker-pool.js';
import { RequestGuard } from './guard.js';
import { FenecRequest, HttpHandler } from './handler.js';
import { HttpMetrics } from './metrics.js';

export interface RunningServer {
  /** The base URL it answers on, with the port it really listens on (config.port 0 takes a free one). */
  readonly url: string;
  readonly port: number;
  /**
   * Stops accepting and refuses new statements (503), ends idle connections, and resolves once every
   * open request is answered — each within its statement's time limit.
   */
  close(): Promise<void>;
}


/**
 * Proxies and load balancers in front (an ALB's idle timeout is 60 s) must close an idle connection
 * before the server does, or a request sent as it closes fails; node's default of 5 s is shorter.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** How long close() lets open requests finish past their time limit before it cuts their connections. */
const CLOSE_GRACE_MS = 1_000;

/**
 * Starts serving the file `pool` owns as `config` says, writing refused tokens to `audit` (the
 * workers write schema changes, revocations and MCP writes to theirs).
 *
 * @throws FenecError `invalid_option` when the address cannot be listened on (in use, not this
 *   machine's, a privileged port).
 */
export function startServer(config: ServerConfig, pool: WorkerPool, limits: TenantLimits, logger: Logger, audit: Audit = Audit.off): Promise<RunningServer> {
  const metrics = new HttpMetrics();
  const handler = new HttpHandler(config, (_req, work) => pool.run(ONE_FILE, limits, work),
    new RequestGuard(config, audit), metrics, logger, config.mcp !== undefined);
  const listener = config.otel === undefined ? handler.handle : tracedListener(handler.handle, 'fenec-server');
  const server = http.createServer({ IncomingMessage: FenecRequest }, listener);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // A client that sends `Expect: 100-continue` (curl, for large bodies) is told to go on only once
  // the request passed the guard and its declared size: a refused body is never sent at all.
  server.on('checkContinue', listener);
  return listen(server, config, logger, () => {
    handler.stop();
    return closeServer(server, limits.statementTimeoutMs + CLOSE_GRACE_MS);
  });
}

/** Listens as `config` says; resolves with the address once listening. */
export function listen(server: http.Server, config: ServerConfig, logger: Logger, close: () => Promise<void>): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenError(config, err)));
    server.listen(config.port, config.host, () => {
      server.removeAllListeners('error');
      server.on('error', (err) => logger.error({ err }, 'server error'));
      const { port } = server.address() as AddressInfo;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      resolve({ url: `http://${host}:${port}`, port, close });
    });
  });
}

/** Stops accepting and resolves once every connection has ended; those still open after `graceMs` are cut. */
export function closeServer(server: http.Server, graceMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!server.listening) return resolve();
    server.close((err) => (err === undefined ? resolve() : reject(err)));
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
  });
}

function listenError(config: ServerConfig, err: unknown): FenecError {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${config.host}:${config.port}`;
  const message =
    code === 'EADDRINUSE' ? `--port: ${where} is in use by another process; choose another port, or 0 for any free one`
    : code === 'EACCES' ? `--port: listening on ${where} needs privileges this process lacks; choose a port above 1023`
    : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' ? `--host: ${config.host} is not an address of this machine`
    : `cannot listen on ${where}: ${(err as Error).message}`;
  return new FenecError('invalid_option', message, { cause: err });
}
