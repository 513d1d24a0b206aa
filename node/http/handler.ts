/**
 * The request handler of fenec-server, on the serving thread: routes, the front door, the body of
 * `/query` and `/_mcp`, and every answer. A request's work — its statement, its MCP message — is
 * handed to the worker thread that owns the file (`Dispatch`), and comes back as the answer's bytes.
 *
 * `/query` is the hot route, and express costs 8× here: the body is read by hand into the request
 * object (shared listener functions, not closures made per request), and the answer is written as
 * the worker serialized it.
 */
import { IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { propagation } from '@opentelemetry/api';
import { METADATA_PREFIX } from '../../shared/auth/oauth/resource.js';
import { FenecError } from '../../shared/errors.js';
import { isConsolePath, serveConsole } from '../../shared/console.js';
import { encodingRefusal } from '../../shared/http/body.js';
import type { Caller, FrontDoor } from '../../shared/http/front-door.js';
import { errorBody, jsonHeaders, withChallenge } from '../../shared/http/reply.js';
import type { Logger } from '../../shared/logger.js';
import { requestContext } from '../../shared/tracing.js';
import type { ServerConfig } from '../config.js';
import type { WorkerReply, WorkRequest, WorkRoute } from '../workers/protocol.js';
import type { HttpMetrics, RouteLabel } from './metrics.js';
import { SharedBodies } from './shared-bodies.js';

/** Runs a request's work where its file lives (a worker thread) and answers with the bytes to write. */
export type Dispatch = (req: FenecRequest, work: WorkRequest) => Promise<WorkerReply>;

/** A request carrying its own handling state, so that the body's listeners can be shared functions. */
export class FenecRequest extends IncomingMessage {
  route: RouteLabel = 'other';
  started = 0;
  /** The request comes from the --http-cors origin: its answers carry CORS headers. */
  cors = false;
  /**
   * Who it is from, once the front door let it through: set by a tenant node, which asks the front
   * door for the tenant's route before its quotas, so that it is asked once per request.
   */
  caller: Caller | undefined;
  /** The tenant it is for, on a tenant node ('' on a one-file server). */
  tenant = '';
  handler: HttpHandler | undefined;
  response: ServerResponse | undefined;
  received = 0;
  first: Buffer | undefined;
  rest: Buffer[] | undefined;
  /** A large body, written into shared memory as it comes (see #onData). */
  shared: Uint8Array | undefined;
}

const HEALTH_BODY = '{"status":"ok"}';
/** A one-file server's protected resource metadata (RFC 9728), served when it takes OAuth tokens. */
const RESOURCE_METADATA = `${METADATA_PREFIX}/_mcp`;
const ROUTES_TEXT = 'POST /query, GET|POST /_revocations, GET /_health and GET /_metrics';
const ROUTES_TEXT_MCP = 'POST /query, POST /_mcp, GET|POST /_revocations, GET /_health and GET /_metrics';
const EMPTY = Buffer.alloc(0);
/**
 * Bodies past this size are written, as they come, into memory shared with the worker threads. A
 * large body concatenated when it ends, then copied to the worker, touches fresh memory twice in one
 * go, and on a virtual machine a page touched for the first time costs tens of microseconds: a 7 MB
 * batch held the serving thread 30–80 ms that way. Shared memory is taken from the system as it is
 * written (a declared size costs nothing until its bytes come), one socket read at a time, and
 * crosses to the worker without a copy.
 */
const SHARED_BODY_BYTES = 64 * 1024;

export class HttpHandler {
  readonly #dispatch: Dispatch | undefined;
  readonly #door: FrontDoor;
  readonly #metrics: HttpMetrics;
  readonly #logger: Logger;
  readonly #maxBody: number;
  readonly #bodies: SharedBodies;
  readonly #cors: string | undefined;
  /** /_mcp is served (--mcp); else it is as unknown as any other path. */
  readonly #mcp: boolean;
  readonly #routes: string;
  /** Set by stop(): statements are refused (503), the connection closed after the answer. */
  #stopping = false;

  /** `dispatch` undefined: no statement runs here (a tenant node's root), and /query is not found. */
  constructor(
    config: Pick<ServerConfig, 'maxBodyBytes' | 'httpCors'>,
    dispatch: Dispatch | undefined,
    door: FrontDoor,
    metrics: HttpMetrics,
    logger: Logger,
    mcp = false,
  ) {
    this.#dispatch = dispatch;
    this.#door = door;
    this.#metrics = metrics;
    this.#logger = logger;
    this.#maxBody = config.maxBodyBytes;
    this.#bodies = new SharedBodies(config.maxBodyBytes);
    this.#cors = config.httpCors;
    this.#mcp = mcp;
    this.#routes = mcp ? ROUTES_TEXT_MCP : ROUTES_TEXT;
  }

  /** Refuses every statement from now on (the server is stopping); those under way still answer. */
  stop(): void {
    this.#stopping = true;
  }

  /** The `request` listener of the node:http server (requests are FenecRequest, see startServer). */
  readonly handle = (request: IncomingMessage, res: ServerResponse): void => {
    const req = request as FenecRequest;
    // A tenant node's request started when the node took it.
    if (req.started === 0) req.started = performance.now();
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const method = req.method;
    switch (path) {
      case '/query':
        if (this.#dispatch === undefined) break;
        req.route = '/query';
        if (method === 'POST') return this.#query(req, res);
        return this.#otherMethod(req, res, 'POST');
      case '/_mcp':
        if (!this.#mcp || this.#dispatch === undefined) break;
        req.route = '/_mcp';
        // No stream is offered (GET), and no session is ever made to end (DELETE): 405.
        if (method === 'POST') return this.#query(req, res);
        return this.#otherMethod(req, res, 'POST');
      case '/_revocations':
        if (this.#dispatch === undefined) break;
        req.route = '/_revocations';
        if (method === 'GET' || method === 'POST') return this.#query(req, res);
        return this.#otherMethod(req, res, 'GET, POST');
      case '/_health':
        req.route = '/_health';
        // For load balancers: no token, Host or Origin asked, and nothing told but that it runs.
        if (method === 'GET' || method === 'HEAD') return this.send(req, res, 200, HEALTH_BODY);
        return this.#otherMethod(req, res, 'GET, HEAD');
      case '/_metrics':
        req.route = '/_metrics';
        if (method === 'GET' || method === 'HEAD') return this.#metricsText(req, res);
        return this.#otherMethod(req, res, 'GET, HEAD');
      case RESOURCE_METADATA: {
        // A tenant node's root handler serves no resource of its own: its tenants' are under /t/.
        const document = this.#dispatch === undefined ? undefined : this.#door.metadata('');
        if (document === undefined) break;
        req.route = METADATA_PREFIX;
        if (method === 'GET' || method === 'HEAD') return this.sendMetadata(req, res, document);
        return this.#otherMethod(req, res, 'GET, HEAD');
      }
    }
    if (isConsolePath(path)) return serveConsole(req, res, path, 'file');
    return this.fail(
      req,
      res,
      new FenecError(
        'not_found',
        `no route ${JSON.stringify(path.slice(0, 200))}; this server answers ${this.#routes}`,
      ),
    );
  };

  /**
   * A route whose work runs in the worker: the front door (the server's token only for /_revocations), then the body.
   */
  #query(req: FenecRequest, res: ServerResponse): void {
    req.cors = this.#cors !== undefined && this.#door.isCorsOrigin(req);
    const caller = req.caller ?? this.#door.caller(req, req.route, req.route === '/_revocations' ? 'server' : 'any');
    // An OAuth token not seen before is verified off the serving thread's hold: the body waits in the socket.
    if (caller instanceof Promise) {
      caller.then(
        (checked) => this.#admitted(req, res, checked),
        (err: unknown) => this.fail(req, res, err),
      );
      return;
    }
    this.#admitted(req, res, caller);
  }

  #admitted(req: FenecRequest, res: ServerResponse, caller: Caller | FenecError): void {
    if (caller instanceof FenecError) return this.fail(req, res, caller);
    req.caller = caller;
    if (this.#stopping) {
      return this.fail(
        req,
        res,
        new FenecError('unavailable', 'the server is stopping', { hint: 'retry on another node, or once it is back' }),
        { connection: 'close' },
      );
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.#maxBody) return this.#tooLarge(req, res);
    const encoding = encodingRefusal(req);
    // The body is not read: the connection is closed once the answer is out.
    if (encoding !== undefined) return this.fail(req, res, encoding, { connection: 'close' });
    if (req.method === 'GET') return this.#work(req, res, EMPTY);
    if (req.headers.expect !== undefined) res.writeContinue();
    req.handler = this;
    req.response = res;
    req.on('data', HttpHandler.#onData);
    req.on('end', HttpHandler.#onEnd);
  }

  static #onData(this: FenecRequest, chunk: Buffer): void {
    const handler = this.handler!;
    this.received += chunk.length;
    if (this.received > handler.#maxBody) {
      // A body sent without Content-Length (chunked) that outgrows the limit: stop keeping it.
      this.removeListener('data', HttpHandler.#onData);
      this.removeListener('end', HttpHandler.#onEnd);
      if (this.shared !== undefined) handler.#bodies.give(this.shared);
      this.first = this.rest = this.shared = undefined;
      handler.#tooLarge(this, this.response!);
      return;
    }
    if (this.shared !== undefined) {
      this.shared.set(chunk, this.received - chunk.length);
      return;
    }
    if (this.received > SHARED_BODY_BYTES) return handler.#share(this, chunk);
    if (this.first === undefined) this.first = chunk;
    else (this.rest ??= [this.first]).push(chunk);
  }

  /** Moves a body grown past SHARED_BODY_BYTES into shared memory of its declared size (or of the limit). */
  #share(req: FenecRequest, chunk: Buffer): void {
    const declared = req.headers['content-length'];
    const shared = this.#bodies.take(declared === undefined ? this.#maxBody : Number(declared));
    let at = 0;
    for (const part of req.rest ?? (req.first === undefined ? [] : [req.first])) {
      shared.set(part, at);
      at += part.length;
    }
    shared.set(chunk, at);
    req.shared = shared;
    req.first = req.rest = undefined;
  }

  static #onEnd(this: FenecRequest): void {
    const body =
      this.shared !== undefined
        ? this.shared.subarray(0, this.received)
        : this.rest !== undefined
          ? Buffer.concat(this.rest, this.received)
          : (this.first ?? EMPTY);
    this.first = this.rest = this.shared = undefined;
    this.handler!.#work(this, this.response!, body);
  }

  /** Hands the work over and writes back its answer; a notification (MCP) is a bare 202. */
  #work(req: FenecRequest, res: ServerResponse, body: Uint8Array): void {
    const route: WorkRoute =
      req.route === '/_revocations'
        ? `${req.method as 'GET' | 'POST'} /_revocations`
        : (req.route as '/query' | '/_mcp');
    const request: WorkRequest = {
      route,
      body,
      caller: req.caller!,
      remote: req.socket.remoteAddress,
      headers: route === '/_mcp' ? req.headers : undefined,
      trace: traceOf(req),
    };
    let work: Promise<WorkerReply>;
    try {
      work = this.#dispatch!(req, request);
    } catch (err) {
      return this.fail(req, res, err);
    }
    // Settled, the worker has read the body: its memory may take the next one.
    work.then(
      (reply) => {
        this.#bodies.give(body);
        if (reply.tools !== undefined) for (const [tool, outcome] of reply.tools) this.#metrics.toolCall(tool, outcome);
        if (reply.body === undefined) return this.#write(req, res, reply.status, {}, undefined);
        const extra: OutgoingHttpHeaders = this.#stopping ? { connection: 'close' } : {};
        // A token refused in the worker (revoked, past its scopes) is told where to sign in again.
        const challenge =
          reply.status === 401
            ? this.#door.challenge(req.tenant, 'invalid_token')
            : reply.scope === undefined
              ? undefined
              : this.#door.challenge(req.tenant, 'insufficient_scope', reply.scope);
        if (challenge !== undefined && req.route !== '/_revocations') extra['www-authenticate'] = challenge;
        this.send(req, res, reply.status, reply.body, extra);
      },
      (err: unknown) => {
        this.#bodies.give(body);
        this.fail(req, res, err);
      },
    );
  }

  #tooLarge(req: FenecRequest, res: ServerResponse): void {
    const error = new FenecError('payload_too_large', `the request body is larger than ${this.#maxBody} bytes`, {
      hint: 'send a smaller statement or fewer params, or start the server with a larger --max-body',
    });
    // The rest of the body is not read: the connection is closed once the answer is out.
    this.send(req, res, error.status, JSON.stringify(error.toJSON()), { connection: 'close' });
  }

  #metricsText(req: FenecRequest, res: ServerResponse): void {
    // The server's figures are the operator's: a JWT, whatever its policy, is not taken here.
    const caller = this.#door.caller(req, '/_metrics', 'server');
    if (caller instanceof FenecError) return this.fail(req, res, caller);
    this.#metrics.text().then(
      (text) => this.send(req, res, 200, text, { 'content-type': this.#metrics.contentType }),
      (err: unknown) => this.fail(req, res, err),
    );
  }

  /** A known route asked with another method: a CORS preflight (OPTIONS), or 405. */
  #otherMethod(req: FenecRequest, res: ServerResponse, allowed: string): void {
    const allow = `${allowed}, OPTIONS`;
    if (req.method !== 'OPTIONS') {
      return this.fail(
        req,
        res,
        new FenecError('method_not_allowed', `${req.route} takes ${allowed}, not ${req.method}`),
        { allow },
      );
    }
    req.cors = this.#cors !== undefined && this.#door.isCorsOrigin(req);
    const refusal = this.#door.preflightRefusal(req);
    if (refusal !== undefined) return this.fail(req, res, refusal);
    const headers: OutgoingHttpHeaders = { allow };
    if (req.cors) {
      headers['access-control-allow-methods'] = allow;
      // An MCP request repeats its revision, method and tool in headers of its own (2026-07-28).
      headers['access-control-allow-headers'] =
        req.route === '/_mcp'
          ? 'authorization, content-type, mcp-protocol-version, mcp-method, mcp-name'
          : 'authorization, content-type';
      headers['access-control-max-age'] = '600';
    }
    this.#write(req, res, 204, headers, undefined);
  }

  /** Answers with an error (shared/http/reply.ts's answer, with CORS headers where due), counted; a fault is logged. */
  fail(req: FenecRequest, res: ServerResponse, err: unknown, headers?: OutgoingHttpHeaders): void {
    const { error, body } = errorBody(err);
    if (error.status >= 500) {
      this.#logger.error({ err: error.cause ?? error, code: error.code, route: req.route }, 'request failed');
    }
    this.send(req, res, error.status, body, withChallenge(error, headers));
  }

  /** A protected resource's metadata: public, and readable by any page (an MCP client in a browser finds it). */
  sendMetadata(req: FenecRequest, res: ServerResponse, document: string): void {
    this.send(req, res, 200, document, { 'access-control-allow-origin': '*', 'cache-control': 'max-age=300' });
  }

  /** Answers with JSON (or `extra`'s content type), counted. */
  send(
    req: FenecRequest,
    res: ServerResponse,
    status: number,
    body: string | Uint8Array,
    extra?: OutgoingHttpHeaders,
  ): void {
    this.#write(req, res, status, jsonHeaders(status, body, extra), body);
  }

  #write(
    req: FenecRequest,
    res: ServerResponse,
    status: number,
    headers: OutgoingHttpHeaders,
    body: string | Uint8Array | undefined,
  ): void {
    if (req.cors) {
      headers['access-control-allow-origin'] = this.#cors;
      headers.vary = 'Origin';
    }
    res.writeHead(status, headers);
    res.end(body);
    this.#metrics.observe(req.route, status, (performance.now() - req.started) / 1000);
  }
}

/** The request's span as W3C headers, for the worker's spans to be its children; undefined when not traced. */
function traceOf(req: IncomingMessage): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(requestContext(req), carrier);
  return carrier.traceparent === undefined ? undefined : carrier;
}
