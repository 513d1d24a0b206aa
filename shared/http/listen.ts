/**
 * Listening and closing, fenec-server's and fenec-router's: a node:http server kept alive longer
 * than the proxies in front, a start refused with a message that names the flag, and a close that
 * lets the requests under way finish.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FenecError } from '../errors.js';
import type { Logger } from '../logger.js';

export interface RunningServer {
  /** The base URL it answers on, with the port it really listens on (port 0 takes a free one). */
  readonly url: string;
  readonly port: number;
  /** Stops accepting, ends idle connections, and resolves once every open request is answered. */
  close(): Promise<void>;
}

/** Where to listen: `--host` and `--port`. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * Proxies and load balancers in front (an ALB's idle timeout is 60 s) must close an idle connection
 * before the server does, or a request sent as it closes fails; node's default of 5 s is shorter.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

/**
 * Listens as `address` says; resolves with the address once listening.
 *
 * @throws FenecError `invalid_option` when the address cannot be listened on (in use, not this
 *   machine's, a privileged port).
 */
export function listen(
  server: http.Server,
  address: ListenAddress,
  logger: Logger,
  close: () => Promise<void>,
): Promise<RunningServer> {
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(listenError(address, err)));
    server.listen(address.port, address.host, () => {
      server.removeAllListeners('error');
      server.on('error', (err) => logger.error({ err }, 'server error'));
      const { port } = server.address() as AddressInfo;
      const host = address.host.includes(':') ? `[${address.host}]` : address.host;
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

function listenError(address: ListenAddress, err: unknown): FenecError {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${address.host}:${address.port}`;
  const message =
    code === 'EADDRINUSE'
      ? `--port: ${where} is in use by another process; choose another port, or 0 for any free one`
      : code === 'EACCES'
        ? `--port: listening on ${where} needs privileges this process lacks; choose a port above 1023`
        : code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND'
          ? `--host: ${address.host} is not an address of this machine`
          : `cannot listen on ${where}: ${(err as Error).message}`;
  return new FenecError('invalid_option', message, { cause: err });
}
