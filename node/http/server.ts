/**
 * fenec-server's HTTP side: a bare node:http server around HttpHandler, shared by the CLI and the
 * tests so that both run exactly the same server.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Audit } from '../../shared/audit.js';
import { FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { tracedListener } from '../../shared/tracing.js';
import type { ServerConfig } from '../config.js';
import { RequestGuard } from './guard.js';
import { FenecRequest, HttpHandler, type Executor } from './handler.js';
import { HttpMetrics } from './metrics.js';
import { mcpEndpoint } from '../mcp/serve-mcp.js';
import type { Revocations } from '../storage/revocations.js';

export interface RunningServer {
  /** The base URL it answers on, with the port it really listens on (config.port 0 takes a free one). */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, ends idle connections, and resolves once every open request is answered. */
  close(): Promise<void>;
}

/**
 * Proxies and load balancers in front (an ALB's idle timeout is 60 s) must close an idle connection
 * before the server does, or a request sent as it closes fails; node's default of 5 s is shorter.
 */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** How long close() lets open requests finish before it cuts their connections. */
const CLOSE_GRACE_MS = 5_000;

/**
 * Starts serving `db` as `config` says, writing refused tokens, revocations, schema changes and MCP
 * writes to `audit`; JWTs are checked against `revocations` (the file's), which /_revocations keeps.
 *
 * @throws FenecError `invalid_option` when the address cannot be listened on (in use, not this
 *   machine's, a privileged port).
 */
export function startServer(config: ServerConfig, db: Executor, logger: Logger, audit: Audit = Audit.off, revocations?: Revocations): Promise<RunningServer> {
  const metrics = new HttpMetrics();
  const mcp = config.mcp === undefined ? undefined : mcpEndpoint(db, {
    write: config.mcp.write,
    memory: config.mcp.memory,
    readOnly: config.httpReadOnly || config.readOnly,
    audit,
    logger,
    cursorSecret: config.cursorSecret,
    count: (tool, outcome) => metrics.toolCall(tool, outcome),
  });
  const handler = new HttpHandler(config, db, new RequestGuard(config, audit), metrics, logger, audit, mcp, revocations === undefined ? undefined : { list: revocations, tenant: null });
  const listener = config.otel === undefined ? handler.handle : tracedListener(handler.handle, 'fenec-server');
  const server = http.createServer({ IncomingMessage: FenecRequest }, listener);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  // A client that sends `Expect: 100-continue` (curl, for large bodies) is told to go on only once
  // the request passed the guard and its declared size: a refused body is never sent at all.
  server.on('checkContinue', listener);

  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenError(config, err)));
    server.listen(config.port, config.host, () => {
      server.removeAllListeners('error');
      server.on('error', (err) => logger.error({ err }, 'server error'));
      const { port } = server.address() as AddressInfo;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      resolve({ url: `http://${host}:${port}`, port, close: () => closeServer(server) });
    });
  });
}

function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!server.listening) return resolve();
    server.close((err) => (err === undefined ? resolve() : reject(err)));
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS).unref();
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
