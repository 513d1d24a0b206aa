/**
 * The request handler of fenec-server: routes, the guard, the body of `/query`, and every answer.
 *
 * `/query` is the hot route, and express costs 8× here: the body is read by hand into the request
 * object (shared listener functions, not closures made per request), parsed once, and the answer
 * stringified once.
 */
import { IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Audit, subjectOf } from '../../shared/audit.js';
import { EMPTY_POLICY, grantedTools, type Policy } from '../../shared/auth/policy.js';
import { asFenecError, FenecError } from '../../shared/errors.js';
import { isConsolePath, serveConsole } from '../../shared/console.js';
import type { Logger } from '../../shared/logger.js';
import type { ServerConfig } from '../config.js';
import type { ExecuteOptions, FenecDatabase } from '../database.js';
import type { McpEndpoint } from '../../shared/mcp/endpoint.js';
import { SERVER_CALLER, type Caller, type RequestGuard } from './guard.js';
import type { HttpMetrics, RouteLabel } from './metrics.js';
import { parseQueryBody, parseRevocationBody } from './query-body.js';
import type { Revocation, Revocations } from '../storage/revocations.js';
import { mayChangeSchema, schemaChangeOf } from './schema-change.js';
import { CursorKeeper, cursorSubject } from '../../shared/paging/cursor.js';
import { Pager, pages } from '../../shared/paging/pager.js';

/** What the handler needs of a database: statements (as text, or as trees for MCP and pages) in, answers out. */
export type Executor = Pick<FenecDatabase, 'execute' | 'executeStatement' | 'statementOf'>;

/** The revocations a handler checks tokens against and keeps, and the tenant they are of (null for a one-file server). */
export interface RevocationScope {
  readonly list: Revocations;
  readonly tenant: string | null;
}

/** A request carrying its own handling state, so that the body's listeners can be shared functions. */
export class FenecRequest extends IncomingMessage {
  route: RouteLabel = 'other';
  started = 0;
  /** The request comes from the --http-cors origin: its answers carry CORS headers. */
  cors = false;
  /** Who it is from, once the guard let it through. */
  caller: Caller = SERVER_CALLER;
  handler: HttpHandler | undefined;
  response: ServerResponse | undefined;
  received = 0;
  first: Buffer | undefined;
  rest: Buffer[] | undefined;
}

const JSON_TYPE = 'application/json';
const HEALTH_BODY = '{"status":"ok"}';
const ROUTES_TEXT = 'POST /query, GET /_health and GET /_metrics';
const ROUTES_TEXT_MCP = 'POST /query, POST /_mcp, GET /_health and GET /_metrics';
const EMPTY = Buffer.alloc(0);
/** A statement that may be a `get` with a limit: only these are parsed before they run, to page them. */
const MAY_PAGE = /^\s*(?:--[^\n]*\n\s*)*get\b[\s\S]*\blimit\b/i;

export class HttpHandler {
  readonly #db: Executor;
  readonly #guard: RequestGuard;
  readonly #metrics: HttpMetrics;
  readonly #logger: Logger;
  readonly #maxBody: number;
  readonly #executeOptions: ExecuteOptions;
  readonly #readOnly: boolean;
  /** What every JWT is held to: --policy, or the empty policy (no collection) without one. */
  readonly #policy: Policy;
  readonly #cors: string | undefined;
  readonly #audit: Audit;
  /** The MCP endpoint (--mcp), or undefined: then /_mcp is as unknown as any other path. */
  readonly #mcp: McpEndpoint<ExecuteOptions> | undefined;
  readonly #routes: string;
  /** The revocations of the file served (GET/POST /_revocations), or undefined: then no token is revoked here. */
  readonly #revocations: RevocationScope | undefined;
  readonly #granted = new WeakMap<object, ReadonlySet<string> | undefined>();
  /** Pages of `get … limit N` (next_cursor) and their continuations (cursor). */
  readonly #pager: Pager<ExecuteOptions>;

  constructor(
    config: Pick<ServerConfig, 'maxBodyBytes' | 'httpReadOnly' | 'httpCors' | 'policy' | 'cursorSecret'>,
    db: Executor,
    guard: RequestGuard,
    metrics: HttpMetrics,
    logger: Logger,
    audit: Audit = Audit.off,
    mcp?: McpEndpoint<ExecuteOptions>,
    revocations?: RevocationScope,
  ) {
    this.#db = db;
    this.#guard = guard;
    this.#metrics = metrics;
    this.#logger = logger;
    this.#maxBody = config.maxBodyBytes;
    this.#readOnly = config.httpReadOnly;
    this.#executeOptions = Object.freeze({ readOnly: config.httpReadOnly });
    this.#policy = config.policy ?? EMPTY_POLICY;
    this.#cors = config.httpCors;
    this.#audit = audit;
    this.#mcp = mcp;
    this.#revocations = revocations;
    this.#routes = `${mcp === undefined ? ROUTES_TEXT : ROUTES_TEXT_MCP}${revocations === undefined ? '' : ', GET|POST /_revocations'}`;
    this.#pager = new Pager(db, new CursorKeeper(config.cursorSecret));
  }

  /** The `request` listener of the node:http server (requests are FenecRequest, see startServer). */
  readonly handle = (request: IncomingMessage, res: ServerResponse): void => {
    const req = request as FenecRequest;
    req.started = performance.now();
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const method = req.method;
    switch (path) {
      case '/query':
        req.route = '/query';
        if (method === 'POST') return this.#query(req, res);
        return this.#otherMethod(req, res, 'POST');
      case '/_mcp':
        if (this.#mcp === undefined) break;
        req.route = '/_mcp';
        // No stream is offered (GET), and no session is ever made to end (DELETE): 405.
        if (method === 'POST') return this.#query(req, res);
        return this.#otherMethod(req, res, 'POST');
      case '/_health':
        req.route = '/_health';
        // For load balancers: no token, Host or Origin asked, and nothing told but that it runs.
        if (method === 'GET' || method === 'HEAD') return this.#send(req, res, 200, HEALTH_BODY);
        return this.#otherMethod(req, res, 'GET, HEAD');
      case '/_metrics':
        req.route = '/_metrics';
        if (method === 'GET' || method === 'HEAD') return this.#metricsText(req, res);
        return this.#otherMethod(req, res, 'GET, HEAD');
      case '/_revocations':
        if (this.#revocations === undefined) break;
        req.route = '/_revocations';
        if (method === 'GET' || method === 'POST') return this.#revocationsRoute(req, res);
        return this.#otherMethod(req, res, 'GET, POST');
    }
    if (isConsolePath(path)) return serveConsole(req, res, path, 'file');
    return this.#fail(req, res, new FenecError('not_found', `no route ${JSON.stringify(path.slice(0, 200))}; this server answers ${this.#routes}`));
  };

  #query(req: FenecRequest, res: ServerResponse): void {
    req.cors = this.#cors !== undefined && this.#guard.isCorsOrigin(req);
    const caller = this.#guard.caller(req, req.route);
    if (caller instanceof FenecError) return this.#fail(req, res, caller);
    if (caller.kind === 'jwt' && this.#revocations !== undefined) {
      const revoked = this.#revocations.list.refusal(caller.claims);
      if (revoked !== undefined) {
        this.#audit.auth('revoked', req.socket.remoteAddress, req.route);
        return this.#fail(req, res, revoked);
      }
    }
    this.#readBody(req, res, caller);
  }

  /** Reads the body of a request that passed the guard; #onEnd answers it by its route. */
  #readBody(req: FenecRequest, res: ServerResponse, caller: Caller): void {
    req.caller = caller;
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > this.#maxBody) return this.#tooLarge(req, res);
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
      this.first = this.rest = undefined;
      handler.#tooLarge(this, this.response!);
      return;
    }
    if (this.first === undefined) this.first = chunk;
    else (this.rest ??= [this.first]).push(chunk);
  }

  static #onEnd(this: FenecRequest): void {
    const body = this.rest !== undefined ? Buffer.concat(this.rest, this.received) : (this.first ?? EMPTY);
    this.first = this.rest = undefined;
    if (this.route === '/_mcp') this.handler!.#answerMcp(this, this.response!, body);
    else if (this.route === '/_revocations') this.handler!.#revoke(this, this.response!, body);
    else this.handler!.#answer(this, this.response!, body);
  }

  #answer(req: FenecRequest, res: ServerResponse, body: Buffer): void {
    let text: string;
    const caller = req.caller;
    try {
      const { statement, params, cursor } = parseQueryBody(body);
      const options: ExecuteOptions = caller.kind === 'server'
        ? this.#executeOptions
        : { readOnly: this.#readOnly, jwt: caller.claims, policy: this.#policy };
      text = JSON.stringify(this.#run(statement, params, cursor, options, caller));
      // Written (and flushed) before the answer leaves: an answered change is an audited one.
      if (this.#audit.enabled && mayChangeSchema(statement)) this.#auditSchema(statement, caller);
    } catch (err) {
      return this.#fail(req, res, err);
    }
    this.#send(req, res, 200, text);
  }

  /**
   * A statement's answer: a `get` with a limit (or a cursor) a page of its rows, with next_cursor
   * when more follow; any other statement as the database answers it.
   */
  #run(statement: string, params: readonly unknown[], cursor: string | undefined, options: ExecuteOptions, caller: Caller): unknown {
    const tree = cursor === undefined && !MAY_PAGE.test(statement) ? undefined : this.#db.statementOf(statement);
    if (tree?.kind !== 'Get' || (cursor === undefined && (tree.limit === undefined || !pages(tree)))) {
      if (cursor !== undefined) {
        throw new FenecError('bad_request', '"cursor" continues a get whose answer carried next_cursor; this statement is not one', { hint: 'leave "cursor" out' });
      }
      return this.#db.execute(statement, params, options);
    }
    const subject = cursorSubject(caller.kind === 'server' ? undefined : caller.claims);
    return this.#pager.read({ statement: tree, params, options, cursor, scope: '/query', subject }).answer;
  }

  /** One MCP message: its answer is JSON-RPC's, whatever the tool said; a notification is a bare 202. */
  #answerMcp(req: FenecRequest, res: ServerResponse, body: Buffer): void {
    const caller = req.caller;
    const options: ExecuteOptions = caller.kind === 'server'
      ? this.#executeOptions
      : { readOnly: this.#readOnly, jwt: caller.claims, policy: this.#policy };
    const headers = req.headers;
    const tools = caller.kind === 'server' ? undefined : this.#grants(caller.claims);
    const subject = cursorSubject(caller.kind === 'server' ? undefined : caller.claims);
    const reply = this.#mcp!.handle(body.toString('utf8'), { options, scoped: caller.kind === 'jwt', tools, subject }, (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    });
    if (reply.json === undefined) return this.#write(req, res, reply.status, {}, undefined);
    this.#send(req, res, reply.status, reply.json);
  }

  /** A token's tools, worked out once per token: the verifier hands back the same claims for it. */
  #grants(claims: object): ReadonlySet<string> | undefined {
    if (this.#granted.has(claims)) return this.#granted.get(claims);
    const tools = grantedTools(this.#policy, claims as Readonly<Record<string, unknown>>);
    this.#granted.set(claims, tools);
    return tools;
  }

  #auditSchema(statement: string, caller: Caller): void {
    const change = schemaChangeOf(statement);
    if (change === undefined) return;
    const who = caller.kind === 'server' ? caller : { kind: 'jwt' as const, sub: subjectOf(caller.claims) };
    this.#audit.schema(change.statement, change.collection, who);
  }

  /** GET lists the revocations, POST {"jti": …} or {"sub": …} revokes: the server's token only. */
  #revocationsRoute(req: FenecRequest, res: ServerResponse): void {
    const caller = this.#guard.caller(req, '/_revocations', false);
    if (caller instanceof FenecError) return this.#fail(req, res, caller);
    if (req.method === 'GET') return this.#send(req, res, 200, JSON.stringify({ revocations: this.#revocations!.list.list().map(revocationJson) }));
    this.#readBody(req, res, caller);
  }

  #revoke(req: FenecRequest, res: ServerResponse, body: Buffer): void {
    let answer: { revocation: Revocation; created: boolean };
    try {
      const { kind, value } = parseRevocationBody(body);
      answer = this.#revocations!.list.revoke(kind, value);
      // Written (and flushed) before the answer leaves, as every change of who may do what.
      this.#audit.revocation(kind, value, this.#revocations!.tenant, answer.created);
    } catch (err) {
      return this.#fail(req, res, err);
    }
    this.#send(req, res, answer.created ? 201 : 200, JSON.stringify({ revoked: revocationJson(answer.revocation), created: answer.created }));
  }

  #tooLarge(req: FenecRequest, res: ServerResponse): void {
    const error = new FenecError('payload_too_large', `the request body is larger than ${this.#maxBody} bytes`, {
      hint: 'send a smaller statement or fewer params, or start the server with a larger --max-body',
    });
    // The rest of the body is not read: the connection is closed once the answer is out.
    this.#send(req, res, error.status, JSON.stringify(error.toJSON()), { connection: 'close' });
  }

  #metricsText(req: FenecRequest, res: ServerResponse): void {
    // The server's figures are the operator's: a JWT, whatever its policy, is not taken here.
    const caller = this.#guard.caller(req, '/_metrics', false);
    if (caller instanceof FenecError) return this.#fail(req, res, caller);
    this.#metrics.text().then(
      (text) => this.#send(req, res, 200, text, { 'content-type': this.#metrics.contentType }),
      (err: unknown) => this.#fail(req, res, err),
    );
  }

  /** A known route asked with another method: a CORS preflight (OPTIONS), or 405. */
  #otherMethod(req: FenecRequest, res: ServerResponse, allowed: string): void {
    const allow = `${allowed}, OPTIONS`;
    if (req.method !== 'OPTIONS') {
      return this.#fail(req, res, new FenecError('method_not_allowed', `${req.route} takes ${allowed}, not ${req.method}`), { allow });
    }
    req.cors = this.#cors !== undefined && this.#guard.isCorsOrigin(req);
    const refusal = this.#guard.preflightRefusal(req);
    if (refusal !== undefined) return this.#fail(req, res, refusal);
    const headers: OutgoingHttpHeaders = { allow };
    if (req.cors) {
      headers['access-control-allow-methods'] = allow;
      // An MCP request repeats its revision, method and tool in headers of its own (2026-07-28).
      headers['access-control-allow-headers'] = req.route === '/_mcp'
        ? 'authorization, content-type, mcp-protocol-version, mcp-method, mcp-name'
        : 'authorization, content-type';
      headers['access-control-max-age'] = '600';
    }
    this.#write(req, res, 204, headers, undefined);
  }

  #fail(req: FenecRequest, res: ServerResponse, err: unknown, headers?: OutgoingHttpHeaders): void {
    const error = asFenecError(err);
    if (error.status >= 500) {
      this.#logger.error({ err: error.cause ?? error, code: error.code, route: req.route }, 'request failed');
    }
    const extra: OutgoingHttpHeaders | undefined = error.status === 401 ? { 'www-authenticate': 'Bearer', ...headers } : headers;
    this.#send(req, res, error.status, JSON.stringify(error.toJSON()), extra);
  }

  #send(req: FenecRequest, res: ServerResponse, status: number, body: string, extra?: OutgoingHttpHeaders): void {
    const headers: OutgoingHttpHeaders = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) };
    if (extra !== undefined) Object.assign(headers, extra);
    this.#write(req, res, status, headers, body);
  }

  #write(req: FenecRequest, res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: string | undefined): void {
    if (req.cors) {
      headers['access-control-allow-origin'] = this.#cors;
      headers.vary = 'Origin';
    }
    res.writeHead(status, headers);
    res.end(body);
    this.#metrics.observe(req.route, status, (performance.now() - req.started) / 1000);
  }
}

/** A revocation as answers show it: its time as an ISO date. */
function revocationJson(revocation: Revocation): Record<string, string> {
  return { [revocation.kind]: revocation.value, at: new Date(revocation.at).toISOString() };
}
