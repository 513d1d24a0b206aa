/**
 * The request pipeline of fenec-server, on the serving thread. Every request runs the same stages, in order:
 * its route (the table, node/http/routes.ts), the front door (who may call it), on a tenant node the tenant and its
 * quotas (node/tenants/tenant-stages.ts), the body, the dispatch (a work route's body is handed to the worker
 * thread that owns the file, `Dispatch`, and comes back as the answer's bytes), and the reply.
 *
 * `/query` is the hot route, and express costs 8× here: the body is read by hand into the request's state (shared
 * listener functions, not closures made per request), and the answer is written as the worker serialized it.
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { propagation } from '@opentelemetry/api';
import { FenecError } from '../../shared/errors.js';
import { encodingRefusal, readJson } from '../../shared/http/body.js';
import type { Checked, FrontDoor } from '../../shared/http/front-door.js';
import { errorBody, jsonHeaders, withChallenge } from '../../shared/http/reply.js';
import { auditName, pathOf, type Miss, type RouteTable } from '../../shared/http/route-table.js';
import type { Logger } from '../../shared/logger.js';
import { requestContext } from '../../shared/tracing.js';
import type { ServerConfig } from '../config.js';
import type { WorkerReply, WorkRequest, WorkRoute } from '../workers/protocol.js';
import type { HttpMetrics } from './metrics.js';
import {
  INTERIM_HEADER,
  type BodySink,
  type FenecRequest,
  type NodeHandler,
  type NodeRoute,
  type Reply,
} from './request.js';
import { SharedBodies } from './shared-bodies.js';

/**
 * Runs a request's work where its file lives (a worker thread) and answers with the bytes to write; `committed`, when
 * given, is called once a replicated write is in the file and its answer waits for the log (see INTERIM_HEADER).
 */
export type Dispatch = (req: FenecRequest, work: WorkRequest, committed?: () => void) => Promise<WorkerReply>;

/** A tenant node's stages between the front door and the body, for the work routes of `/t/<tenant>/…`. */
export interface TenantStages {
  /** The tenant exists and is not moving: false when the request was answered (refused). */
  tenant(req: FenecRequest, res: ServerResponse, reply: Reply): boolean;
  /**
   * Its rate and worker time: false when the request was refused; an MCP message past them goes on, its refusal
   * in the request's state, to be answered from its body (`refuseMcp`).
   */
  quota(req: FenecRequest, res: ServerResponse, reply: Reply): boolean;
  refuseMcp(req: FenecRequest, res: ServerResponse, reply: Reply, body: Uint8Array): void;
}

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

export class HttpHandler implements Reply, BodySink {
  readonly #table: RouteTable<NodeHandler>;
  readonly #dispatch: Dispatch;
  readonly #tenants: TenantStages | undefined;
  readonly #door: FrontDoor;
  readonly #metrics: HttpMetrics;
  readonly #logger: Logger;
  readonly #bodies: SharedBodies;
  readonly #cors: string | undefined;
  /** Set by stop(): statements are refused (503), the connection closed after the answer. */
  #stopping = false;

  constructor(
    config: Pick<ServerConfig, 'maxBodyBytes' | 'httpCors'>,
    table: RouteTable<NodeHandler>,
    dispatch: Dispatch,
    door: FrontDoor,
    metrics: HttpMetrics,
    logger: Logger,
    tenants?: TenantStages,
  ) {
    this.#table = table;
    this.#dispatch = dispatch;
    this.#tenants = tenants;
    this.#door = door;
    this.#metrics = metrics;
    this.#logger = logger;
    this.#bodies = new SharedBodies(config.maxBodyBytes);
    this.#cors = config.httpCors;
  }

  /** Refuses every statement from now on (the server is stopping); those under way still answer. */
  stop(): void {
    this.#stopping = true;
  }

  /** The `request` listener of the node:http server (requests are FenecRequest, see createServer). */
  readonly handle = (request: IncomingMessage, res: ServerResponse): void => {
    const req = request as FenecRequest;
    const state = req.state;
    state.started = performance.now();
    const found = this.#table.find(req.method ?? '', pathOf(req.url ?? '/'));
    if ('error' in found) return this.#miss(req, res, found);
    const route = found.route;
    state.route = route;
    state.label = route.handler.label;
    state.tenant = found.tenant;
    const admitted = this.#frontDoor(req, res, route);
    if (admitted === true) return this.#admitted(req, res, route);
    // An OAuth token not seen before is verified asynchronously: the body waits in the socket meanwhile.
    if (admitted !== false) {
      admitted.then(
        (ok) => ok && this.#admitted(req, res, route),
        (err: unknown) => this.fail(req, res, err),
      );
    }
  };

  /** The stages past the front door: the tenant, its quotas, the body. */
  #admitted(req: FenecRequest, res: ServerResponse, route: NodeRoute): void {
    const state = req.state;
    const handler = route.handler;
    if (handler.kind !== 'work') return this.#ownBody(req, res, route, handler);
    const tenants = this.#tenants;
    if (tenants !== undefined && state.tenant !== '') {
      if (!tenants.tenant(req, res, this) || !tenants.quota(req, res, this)) return;
    }
    this.#workBody(req, res, route.body as number);
  }

  /** The front door: who may call the route (a public one asks nothing). False when it refused; a promise of it. */
  #frontDoor(req: FenecRequest, res: ServerResponse, route: NodeRoute): boolean | Promise<boolean> {
    if (route.access === 'public') return true;
    const state = req.state;
    state.cors = this.#cors !== undefined && this.#door.isCorsOrigin(req);
    const name = auditName(route, req.method ?? '');
    const caller =
      state.tenant === ''
        ? this.#door.caller(req, name, route.access)
        : this.#door.tenantCaller(req, state.tenant, name, route.access);
    if (caller instanceof Promise) return caller.then((checked) => this.#caller(req, res, checked));
    return this.#caller(req, res, caller);
  }

  #caller(req: FenecRequest, res: ServerResponse, caller: Checked): boolean {
    if (caller instanceof FenecError) {
      this.fail(req, res, caller);
      return false;
    }
    req.state.caller = caller;
    return true;
  }

  /** The body of a route of the node's own: parsed for a `json` one, the handler's to read for a `plain` one. */
  #ownBody(
    req: FenecRequest,
    res: ServerResponse,
    route: NodeRoute,
    handler: Exclude<NodeHandler, { kind: 'work' }>,
  ): void {
    if (handler.kind === 'plain') return handler.run(req, res, this);
    readJson(req, route.body as number, handler.refusals).then(
      (body) => handler.run(req, res, this, body),
      (err: unknown) => this.fail(req, res, err),
    );
  }

  /** A work route's body: refused at its Content-Length or encoding before a byte is read, else read by hand. */
  #workBody(req: FenecRequest, res: ServerResponse, limit: number): void {
    if (this.#stopping) {
      return this.fail(
        req,
        res,
        new FenecError('unavailable', 'the server is stopping', { hint: 'retry on another node, or once it is back' }),
        { connection: 'close' },
      );
    }
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > limit) return this.#tooLarge(req, res, limit);
    const encoding = encodingRefusal(req);
    // The body is not read: the connection is closed once the answer is out.
    if (encoding !== undefined) return this.fail(req, res, encoding, { connection: 'close' });
    if (req.method === 'GET') return this.#work(req, res, EMPTY);
    if (req.headers.expect !== undefined) res.writeContinue();
    req.state.response = res;
    req.state.sink = this;
    req.on('data', onData);
    req.on('end', onEnd);
  }

  /** A chunk of a work route's body. */
  chunk(req: FenecRequest, chunk: Buffer): void {
    const state = req.state;
    const limit = state.route!.body as number;
    state.received += chunk.length;
    if (state.received > limit) {
      // A body sent without Content-Length (chunked) that outgrows the limit: stop keeping it.
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      if (state.shared !== undefined) this.#bodies.give(state.shared);
      state.first = state.rest = state.shared = undefined;
      this.#tooLarge(req, state.response!, limit);
      return;
    }
    if (state.shared !== undefined) {
      state.shared.set(chunk, state.received - chunk.length);
      return;
    }
    if (state.received > SHARED_BODY_BYTES) return this.#share(req, chunk, limit);
    if (state.first === undefined) state.first = chunk;
    else (state.rest ??= [state.first]).push(chunk);
  }

  /** Moves a body grown past SHARED_BODY_BYTES into shared memory of its declared size (or of the limit). */
  #share(req: FenecRequest, chunk: Buffer, limit: number): void {
    const state = req.state;
    const declared = req.headers['content-length'];
    const shared = this.#bodies.take(declared === undefined ? limit : Number(declared));
    let at = 0;
    for (const part of state.rest ?? (state.first === undefined ? [] : [state.first])) {
      shared.set(part, at);
      at += part.length;
    }
    shared.set(chunk, at);
    state.shared = shared;
    state.first = state.rest = undefined;
  }

  /** The end of a work route's body: the dispatch. */
  end(req: FenecRequest): void {
    const state = req.state;
    const body =
      state.shared !== undefined
        ? state.shared.subarray(0, state.received)
        : state.rest !== undefined
          ? Buffer.concat(state.rest, state.received)
          : (state.first ?? EMPTY);
    state.first = state.rest = state.shared = undefined;
    this.#work(req, state.response!, body);
  }

  /** The dispatch: hands the work over and writes back its answer; a notification (MCP) is a bare 202. */
  #work(req: FenecRequest, res: ServerResponse, body: Uint8Array): void {
    const state = req.state;
    if (state.refusal !== undefined) {
      this.#tenants!.refuseMcp(req, res, this, body);
      this.#bodies.give(body);
      return;
    }
    const handler = state.route!.handler as Extract<NodeHandler, { kind: 'work' }>;
    const route: WorkRoute =
      handler.work === '/_revocations' ? `${req.method as 'GET' | 'POST'} /_revocations` : handler.work;
    const request: WorkRequest = {
      route,
      body,
      caller: state.caller!,
      remote: req.socket.remoteAddress,
      headers: route === '/_mcp' ? req.headers : undefined,
      trace: traceOf(req),
    };
    // HTTP/1.0 has no interim answers.
    const committed =
      req.headers[INTERIM_HEADER] === 'committed' && req.httpVersionMinor > 0 && req.httpVersionMajor === 1
        ? () => res.writeProcessing()
        : undefined;
    let work: Promise<WorkerReply>;
    try {
      work = this.#dispatch(req, request, committed);
    } catch (err) {
      return this.fail(req, res, err);
    }
    // Settled, the worker has read the body: its memory may take the next one.
    work.then(
      (reply) => {
        this.#bodies.give(body);
        if (reply.tools !== undefined) for (const [tool, outcome] of reply.tools) this.#metrics.toolCall(tool, outcome);
        if (reply.embedder !== undefined) for (const call of reply.embedder) this.#metrics.embedderCall(call);
        if (reply.body === undefined) return this.#write(req, res, reply.status, {}, undefined);
        const extra: OutgoingHttpHeaders = this.#stopping ? { connection: 'close' } : {};
        if (reply.retryAfter !== undefined) extra['retry-after'] = String(reply.retryAfter);
        // A token refused in the worker (revoked, past its scopes) is told where to sign in again.
        const challenge =
          route === 'GET /_revocations' || route === 'POST /_revocations'
            ? undefined
            : reply.status === 401
              ? this.#door.challenge(state.tenant, 'invalid_token')
              : reply.scope === undefined
                ? undefined
                : this.#door.challenge(state.tenant, 'insufficient_scope', reply.scope);
        if (challenge !== undefined) extra['www-authenticate'] = challenge;
        this.send(req, res, reply.status, reply.body, extra);
      },
      (err: unknown) => {
        this.#bodies.give(body);
        this.fail(req, res, err);
      },
    );
  }

  #tooLarge(req: FenecRequest, res: ServerResponse, limit: number): void {
    const refusal = req.state.refusal;
    // A quota's refusal stands for an MCP message too large to read for its id.
    if (refusal !== undefined) {
      return this.fail(req, res, refusal.error, { 'retry-after': String(refusal.wait), connection: 'close' });
    }
    const error = new FenecError('payload_too_large', `the request body is larger than ${limit} bytes`, {
      hint: 'send a smaller statement or fewer params, or start the server with a larger --max-body',
    });
    // The rest of the body is not read: the connection is closed once the answer is out.
    this.send(req, res, error.status, JSON.stringify(error.toJSON()), { connection: 'close' });
  }

  /** A path the table does not serve (404, its routes listed), or not for this method: a CORS preflight, or 405. */
  #miss(req: FenecRequest, res: ServerResponse, miss: Miss<NodeHandler>): void {
    const route = miss.route;
    if (route === undefined || miss.allow === undefined) return this.fail(req, res, miss.error);
    req.state.label = route.handler.label;
    if (req.method !== 'OPTIONS') return this.fail(req, res, miss.error, { allow: miss.allow });
    req.state.cors = this.#cors !== undefined && this.#door.isCorsOrigin(req);
    const refusal = this.#door.preflightRefusal(req);
    if (refusal !== undefined) return this.fail(req, res, refusal);
    const headers: OutgoingHttpHeaders = { allow: miss.allow };
    if (req.state.cors) {
      headers['access-control-allow-methods'] = miss.allow;
      // An MCP request repeats its revision, method and tool in headers of its own (2026-07-28).
      headers['access-control-allow-headers'] =
        route.handler.label === '/_mcp'
          ? 'authorization, content-type, mcp-protocol-version, mcp-method, mcp-name'
          : 'authorization, content-type';
      headers['access-control-max-age'] = '600';
    }
    this.#write(req, res, 204, headers, undefined);
  }

  /**
   * The reply stage, for an error: shared/http/reply.ts's answer (with the headers a refusal carries) and CORS
   * headers where due, counted; a fault is logged.
   */
  fail(req: FenecRequest, res: ServerResponse, err: unknown, headers?: OutgoingHttpHeaders): void {
    const { error, body } = errorBody(err);
    if (error.status >= 500) {
      this.#logger.error({ err: error.cause ?? error, code: error.code, route: req.state.label }, 'request failed');
    }
    this.send(req, res, error.status, body, withChallenge(error, headers));
  }

  /** The reply stage: JSON (or `extra`'s content type), counted. */
  send(
    req: FenecRequest,
    res: ServerResponse,
    status: number,
    body: string | Uint8Array,
    extra?: OutgoingHttpHeaders,
  ): void {
    this.#write(req, res, status, jsonHeaders(req, status, body, extra), body);
  }

  #write(
    req: FenecRequest,
    res: ServerResponse,
    status: number,
    headers: OutgoingHttpHeaders,
    body: string | Uint8Array | undefined,
  ): void {
    const state = req.state;
    if (state.cors) {
      headers['access-control-allow-origin'] = this.#cors;
      headers.vary = 'Origin';
    }
    res.writeHead(status, headers);
    res.end(body);
    this.#metrics.observe(state.label, status, (performance.now() - state.started) / 1000);
  }
}

/** The body's listeners, one pair for every request (`this` is the request): no closure is made per request. */
function onData(this: FenecRequest, chunk: Buffer): void {
  this.state.sink!.chunk(this, chunk);
}

function onEnd(this: FenecRequest): void {
  this.state.sink!.end(this);
}

/** The request's span as W3C headers, for the worker's spans to be its children; undefined when not traced. */
function traceOf(req: IncomingMessage): Record<string, string> | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(requestContext(req), carrier);
  return carrier.traceparent === undefined ? undefined : carrier;
}
