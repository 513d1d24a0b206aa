/**
 * Who may ask: the checks every request but `GET /_health` passes before its body is read, in the
 * order SPEC gives — where it comes from (Origin) before what it carries (the token).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import * as os from 'node:os';
import { FenecError } from '../../shared/errors.js';
import type { ServerConfig } from '../config.js';

export class RequestGuard {
  readonly #tokenDigest: Buffer | undefined;
  readonly #cors: string | undefined;
  readonly #localNames: ReadonlySet<string>;
  /** The last Host header accepted: clients send the same one on every request. */
  #lastHost = '';

  constructor(config: Pick<ServerConfig, 'httpToken' | 'httpCors' | 'host'>) {
    this.#tokenDigest = config.httpToken === undefined ? undefined : sha256(config.httpToken);
    this.#cors = config.httpCors;
    this.#localNames = localNames(config.host);
  }

  /**
   * Why the request is refused, or undefined when it may go on. `withToken` is false for CORS
   * preflights, which browsers send without credentials.
   */
  refusal(req: IncomingMessage, withToken: boolean): FenecError | undefined {
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== this.#cors && !isOwnOrigin(origin, req.headers.host)) {
      return new FenecError(
        'forbidden_origin',
        `Origin ${quote(origin)} is not this server's own; a page may call it only from its own origin ` +
          'or the one --http-cors names',
      );
    }
    if (this.#tokenDigest === undefined) return this.#hostRefusal(req.headers.host);
    return withToken ? this.#tokenRefusal(req.headers.authorization) : undefined;
  }

  /** True when the request comes from the origin that --http-cors names: its answers carry CORS headers. */
  isCorsOrigin(req: IncomingMessage): boolean {
    return this.#cors !== undefined && req.headers.origin === this.#cors;
  }

  #hostRefusal(host: string | undefined): FenecError | undefined {
    if (host !== undefined && (host === this.#lastHost || this.#isLocal(host))) {
      this.#lastHost = host;
      return undefined;
    }
    return new FenecError(
      'forbidden_host',
      `Host ${host === undefined ? '(none)' : quote(host)} does not name this machine; a server without ` +
        '--http-token answers only localhost, 127.0.0.1, [::1] or an address of its own',
      { hint: 'give the server a token (--http-token or FENEC_TOKEN) to serve it under other names' },
    );
  }

  #isLocal(host: string): boolean {
    const name = hostname(host).toLowerCase();
    return this.#localNames.has(name) || name.endsWith('.localhost');
  }

  #tokenRefusal(authorization: string | undefined): FenecError | undefined {
    if (authorization === undefined || authorization === '') {
      return new FenecError('unauthorized', 'this server takes requests with its token only', {
        hint: 'send the header "Authorization: Bearer <token>"',
      });
    }
    const token = /^Bearer +(\S+) *$/i.exec(authorization)?.[1];
    // Both sides hashed: equal lengths for timingSafeEqual, and no timing clue to the token's length.
    if (token === undefined || !timingSafeEqual(sha256(token), this.#tokenDigest!)) {
      return new FenecError('invalid_token', 'the token given is not valid for this server', {
        hint: 'send the header "Authorization: Bearer <token>" with the server\'s token',
      });
    }
    return undefined;
  }
}

/**
 * A page's own origin is the one it loaded from, named by the Host header it sends; https too, for a
 * server behind a TLS-terminating proxy.
 */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  const lower = origin.toLowerCase();
  const expected = host.toLowerCase();
  return lower === `http://${expected}` || lower === `https://${expected}`;
}

/** The name part of a Host header: `[::1]:8080` → `::1`, `localhost:8080` → `localhost`. */
function hostname(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end === -1 ? host : host.slice(1, end);
  }
  const colon = host.indexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}

/**
 * Names of this machine: the loopback names, its interface addresses (read at start), and the
 * address the server was told to listen on when it is a name rather than a wildcard.
 */
function localNames(listenHost: string): ReadonlySet<string> {
  const names = new Set(['localhost', '127.0.0.1', '::1']);
  for (const addresses of Object.values(os.networkInterfaces())) {
    for (const address of addresses ?? []) names.add(address.address.toLowerCase());
  }
  if (listenHost !== '0.0.0.0' && listenHost !== '::') names.add(listenHost.toLowerCase());
  return names;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function quote(header: string): string {
  return JSON.stringify(header.length > 200 ? `${header.slice(0, 200)}…` : header);
}
