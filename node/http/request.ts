/**
 * A request of fenec-server, carrying its handling state in one typed object: the stages of node/http/handler.ts
 * fill it in turn, and the body's listeners, shared functions rather than closures made per request, read it.
 */
import { IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import type { FenecError } from '../../shared/errors.js';
import type { BodyRefusals } from '../../shared/http/body.js';
import type { Caller } from '../../shared/http/front-door.js';
import type { Route } from '../../shared/http/route-table.js';
import type { RouteLabel } from './metrics.js';

/** How the pipeline answers (node/http/handler.ts): JSON, or an error, counted and with CORS headers where due. */
export interface Reply {
  send(
    req: FenecRequest,
    res: ServerResponse,
    status: number,
    body: string | Uint8Array,
    extra?: OutgoingHttpHeaders,
  ): void;
  fail(req: FenecRequest, res: ServerResponse, err: unknown, headers?: OutgoingHttpHeaders): void;
}

/**
 * What a route does once its stages before dispatch let it through: `work` hands its body to the worker that owns
 * the file; `json` is given its small body parsed; `plain` reads its body itself if it has one (a backup's stream).
 */
export type NodeHandler =
  | { readonly kind: 'work'; readonly label: RouteLabel; readonly work: '/query' | '/_mcp' | '/_revocations' }
  | {
      readonly kind: 'json';
      readonly label: RouteLabel;
      readonly refusals: BodyRefusals;
      run(req: FenecRequest, res: ServerResponse, reply: Reply, body: unknown): void;
    }
  | {
      readonly kind: 'plain';
      readonly label: RouteLabel;
      run(req: FenecRequest, res: ServerResponse, reply: Reply): void;
    };

export type NodeRoute = Route<NodeHandler>;

/**
 * A request header (value `committed`) asking a replicated node for `102 Processing` once the write is committed in
 * the tenant's file, before the log acks it and the final answer comes: `fenec import` sends its next batch then,
 * so that a batch's ack is waited for beside the next batch's write, in the order of the file.
 */
export const INTERIM_HEADER = 'fenec-interim';

/** The pipeline reading a work route's body (node/http/handler.ts), for the listeners every request shares. */
export interface BodySink {
  chunk(req: FenecRequest, chunk: Buffer): void;
  end(req: FenecRequest): void;
}

/** A quota's refusal of an MCP message, answered once its body is read (a tools/call's isError result). */
export interface QuotaRefusal {
  readonly error: FenecError;
  readonly wait: number;
}

export interface RequestState {
  /** When the request came (performance.now()), for its duration. */
  started: number;
  /** Its route, once found (undefined for a path the table does not serve). */
  route: NodeRoute | undefined;
  /** Its route in the metrics' labels. */
  label: RouteLabel;
  /** The tenant its path names ('' on a one-file server and on the node's own routes). */
  tenant: string;
  /** The request comes from the --http-cors origin: its answers carry CORS headers. */
  cors: boolean;
  /** Who it is from, once the front door let it through. */
  caller: Caller | undefined;
  /** A tenant past its rate or worker time, told to an MCP message once its body is read. */
  refusal: QuotaRefusal | undefined;
  /** The answer and the pipeline, for the body's listeners. */
  response: ServerResponse | undefined;
  sink: BodySink | undefined;
  /** The body's bytes so far: the first chunk, the rest, or shared memory for a large body. */
  received: number;
  first: Buffer | undefined;
  rest: Buffer[] | undefined;
  shared: Uint8Array | undefined;
}

export class FenecRequest extends IncomingMessage {
  readonly state: RequestState = {
    started: 0,
    route: undefined,
    label: 'other',
    tenant: '',
    cors: false,
    caller: undefined,
    refusal: undefined,
    response: undefined,
    sink: undefined,
    received: 0,
    first: undefined,
    rest: undefined,
    shared: undefined,
  };
}
