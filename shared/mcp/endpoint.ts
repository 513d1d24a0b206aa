/**
 * The MCP endpoint, the same over HTTP and stdio: one JSON-RPC message in, at most one answer out.
 *
 * A request carrying `_meta`'s revision (or an HTTP MCP-Protocol-Version of 2026-07-28 or later) is
 * served by 2026-07-28's rules: stateless, headers checked against the body, `server/discover`,
 * an unknown method a 404. Anything else is served as the handshake revisions are — `initialize`,
 * `ping`, tools — without a session: each message stands alone, whatever came before.
 */
import { context, trace, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { performance } from 'node:perf_hooks';
import type { FenecError } from '../errors.js';
import { describeByte, invalidUtf8At } from '../utf8.js';
import {
  errorAnswer,
  parseMessage,
  resultAnswer,
  RpcCode,
  RpcFault,
  type Message,
  type RpcAnswer,
  type RpcRequest,
} from './json-rpc.js';
import {
  agreedRevision,
  checkEnvelope,
  checkHeaders,
  HANDSHAKE,
  META_SERVER_INFO,
  META_VERSION,
  MODERN,
  SUPPORTED,
  unsupportedVersion,
  type HeaderReader,
} from './revisions.js';
import { instructions } from './instructions.js';
import type { OfferedTool, ToolCaller, ToolOutcome } from './tool.js';
import type { ToolRunner } from './tool-runner.js';
import { markUntrusted } from './untrusted.js';

/** What goes back: an HTTP status and one JSON-RPC answer, or none (a notification: 202, or nothing on stdio). */
export interface McpReply {
  readonly status: number;
  readonly answer: RpcAnswer | undefined;
  /** The answer as JSON, one line, made once (a tool's answer is not written out twice for it). */
  readonly json: string | undefined;
  /** A 403 for a tool past the token's scopes: the OAuth scope it needs, for WWW-Authenticate. */
  readonly scope?: string;
}

/**
 * How a tool call ended, for metrics and audit: `refused` is an isError result (every refusal the
 * model can act on, a quota's 507 and 429 included), `failed` a fault inside the server (500).
 */
export type ToolCallOutcome = 'ok' | 'refused' | 'failed';

export interface ToolCallEvent {
  /**
   * The tool's name from the list of tools, or `unknown` for a name this server does not offer (never a caller's text
   * as a label).
   */
  readonly tool: string;
  /** The tool changes rows: the call is an audit line (its `audited`). */
  readonly audited: boolean;
  readonly outcome: ToolCallOutcome;
  readonly error: FenecError | undefined;
  readonly seconds: number;
}

export interface McpEndpointOptions<O> {
  readonly serverInfo: { readonly name: string; readonly version: string };
  /** Told of every tools/call, after its answer is made and before it is sent. */
  readonly onToolCall?: (event: ToolCallEvent, caller: ToolCaller<O>) => void;
  /** Told of a fault inside the server (a bug), answered as -32603: for the log. */
  readonly onFault?: (err: unknown) => void;
}

const ACCEPTED: McpReply = Object.freeze({ status: 202, answer: undefined, json: undefined });

function reply(status: number, answer: RpcAnswer): McpReply {
  return { status, answer, json: JSON.stringify(answer) };
}
const CAPABILITIES = Object.freeze({ tools: {} });
const CACHE = Object.freeze({ ttlMs: 0, cacheScope: 'private' });

/** A refusal made before a tool may run (a tenant past its rate), and figures for the model (`retry_after`). */
export interface Refusal {
  readonly error: FenecError;
  readonly details?: Readonly<Record<string, unknown>>;
}

export class McpEndpoint<O> {
  readonly #runner: ToolRunner<O>;
  readonly #options: McpEndpointOptions<O>;
  /** What a model is told first, by the tools its token is offered (a few sets at most). */
  readonly #instructions = new Map<string, string>();
  readonly #modernMeta: Readonly<Record<string, unknown>>;
  readonly #modernMetaJson: string;
  readonly #tracer: Tracer = trace.getTracer('fenecdb');

  constructor(runner: ToolRunner<O>, options: McpEndpointOptions<O>) {
    this.#runner = runner;
    this.#options = options;
    this.#modernMeta = Object.freeze({ [META_SERVER_INFO]: options.serverInfo });
    this.#modernMetaJson = JSON.stringify(this.#modernMeta);
  }

  /** The tools this caller is offered: the server's, narrowed to the token's when it names some. */
  #tools(caller: ToolCaller<O>): readonly OfferedTool[] {
    const granted = caller.tools;
    return granted === undefined ? this.#runner.offered : this.#runner.offered.filter((o) => granted.has(o.tool.name));
  }

  /** tools/list's tools for this caller. */
  #definitions(caller: ToolCaller<O>): readonly OfferedTool['definition'][] {
    return caller.tools === undefined ? this.#runner.tools : this.#tools(caller).map((o) => o.definition);
  }

  #instructionsFor(tools: readonly OfferedTool[]): string {
    const key = tools.map((o) => o.tool.name).join(',');
    let text = this.#instructions.get(key);
    if (text === undefined) this.#instructions.set(key, (text = instructions(tools)));
    return text;
  }

  /**
   * Answers one message. `header` reads the HTTP request's headers; it is absent over stdio, where
   * only the body's rules apply. Never throws.
   */
  handle(message: string | Uint8Array, caller: ToolCaller<O>, header?: HeaderReader): McpReply {
    if (typeof message === 'string') return this.#answer(message, caller, header, undefined)!;
    const notUtf8 = invalidUtf8At(message);
    if (notUtf8 >= 0)
      return fault(
        new RpcFault(
          RpcCode.parseError,
          `Parse error: the message is not UTF-8 (${describeByte(message, notUtf8)} begins no character)`,
          400,
        ),
      );
    return this.#answer(
      Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('utf8'),
      caller,
      header,
      undefined,
    )!;
  }

  /**
   * Answers a message refused before any tool may run (a tenant past its rate): a tools/call gets
   * the tool's isError result carrying `refusal` and `details`, as a model reads every other refusal,
   * and is counted as the tool's refused call. Any other message: undefined, the caller's HTTP refusal
   * stands. Never throws.
   */
  refuse(text: string, caller: ToolCaller<O>, refusal: Refusal, header?: HeaderReader): McpReply | undefined {
    return this.#answer(text, caller, header, refusal);
  }

  #answer(
    text: string,
    caller: ToolCaller<O>,
    header: HeaderReader | undefined,
    refusal: Refusal | undefined,
  ): McpReply | undefined {
    let message: Message;
    try {
      message = parseMessage(text);
    } catch (err) {
      return fault(err as RpcFault);
    }
    const { method, params } = message.kind === 'request' ? message.request : message.notification;
    const id = message.kind === 'request' ? message.request.id : null;
    try {
      const meta = params._meta as Record<string, unknown> | undefined;
      const headerVersion = header?.('mcp-protocol-version')?.trim();
      const modern =
        (meta !== undefined && meta[META_VERSION] !== undefined) ||
        (headerVersion !== undefined && headerVersion >= MODERN);
      if (modern) {
        if (header !== undefined) checkHeaders(header, method, params, message.kind === 'request');
        checkEnvelope(meta);
        if (message.kind === 'request' && method === 'tools/call')
          return this.#toolReply(message.request, caller, true, refusal);
        if (refusal !== undefined) return undefined;
        if (message.kind === 'notification') return ACCEPTED;
        return reply(200, resultAnswer(message.request.id, this.#modern(message.request, caller)));
      }
      if (headerVersion !== undefined && !(HANDSHAKE as readonly string[]).includes(headerVersion))
        throw unsupportedVersion(headerVersion);
      if (message.kind === 'request' && method === 'tools/call')
        return this.#toolReply(message.request, caller, false, refusal);
      if (refusal !== undefined) return undefined;
      if (message.kind === 'notification') return ACCEPTED;
      return reply(200, resultAnswer(message.request.id, this.#handshake(message.request, caller)));
    } catch (err) {
      if (err instanceof RpcFault) return fault(err, id);
      this.#options.onFault?.(err);
      return fault(new RpcFault(RpcCode.internalError, 'Internal error; the request changed nothing', 500), id);
    }
  }

  #modern(request: RpcRequest, caller: ToolCaller<O>): unknown {
    switch (request.method) {
      case 'server/discover':
        return {
          resultType: 'complete',
          supportedVersions: SUPPORTED,
          capabilities: CAPABILITIES,
          instructions: this.#instructionsFor(this.#tools(caller)),
          ...CACHE,
          _meta: this.#modernMeta,
        };
      case 'tools/list':
        return { resultType: 'complete', tools: this.#definitions(caller), ...CACHE, _meta: this.#modernMeta };
      default:
        throw new RpcFault(
          RpcCode.methodNotFound,
          `Method not found: ${echo(request.method)}; under ${MODERN} this server answers server/discover, tools/list and tools/call`,
          404,
        );
    }
  }

  #handshake(request: RpcRequest, caller: ToolCaller<O>): unknown {
    switch (request.method) {
      case 'initialize':
        return {
          protocolVersion: agreedRevision(request.params.protocolVersion),
          capabilities: CAPABILITIES,
          serverInfo: this.#options.serverInfo,
          instructions: this.#instructionsFor(this.#tools(caller)),
        };
      case 'ping':
        return {};
      case 'tools/list':
        return { tools: this.#definitions(caller) };
      default:
        throw new RpcFault(
          RpcCode.methodNotFound,
          `Method not found: ${echo(request.method)}; this server answers initialize, ping, tools/list and tools/call`,
          200,
        );
    }
  }

  /**
   * tools/call's answer. A tool's answer is JSON already: the message is put together around it,
   * rather than the answer written out a second time as structured content.
   */
  #toolReply(request: RpcRequest, caller: ToolCaller<O>, modern: boolean, refusal: Refusal | undefined): McpReply {
    const { result, json: answerJson, text } = this.#call(request, caller, refusal);
    const answer = resultAnswer(
      request.id,
      modern ? { resultType: 'complete', ...result, _meta: this.#modernMeta } : result,
    );
    if (answerJson === undefined) return reply(200, answer);
    const json =
      `{"jsonrpc":"2.0","id":${JSON.stringify(request.id)},"result":{${modern ? '"resultType":"complete",' : ''}` +
      `"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${answerJson},"isError":false` +
      `${modern ? `,"_meta":${this.#modernMetaJson}` : ''}}}`;
    return { status: 200, answer, json };
  }

  /**
   * tools/call: an unknown tool or malformed params is a fault; anything the tool refuses is its
   * result, and so is a `refusal` made before it could run.
   */
  #call(
    request: RpcRequest,
    caller: ToolCaller<O>,
    refusal: Refusal | undefined,
  ): { result: Record<string, unknown>; json: string | undefined; text: string | undefined } {
    const started = performance.now();
    const name = request.params.name;
    let offered = typeof name === 'string' ? this.#runner.tool(name) : undefined;
    const scope = offered === undefined ? undefined : caller.scopeNeeded?.get(offered.tool.name);
    if (scope !== undefined) {
      throw new RpcFault(
        RpcCode.invalidRequest,
        `Insufficient scope: tool ${offered!.tool.name} needs the OAuth scope ${scope}; sign in again asking for it`,
        403,
        { data: { code: 'insufficient_scope', scope } },
      );
    }
    // A tool the token is not granted is as unknown to it as one the server does not offer.
    if (offered !== undefined && caller.tools !== undefined && !caller.tools.has(offered.tool.name))
      offered = undefined;
    if (offered === undefined) {
      this.#options.onToolCall?.(
        {
          tool: 'unknown',
          audited: false,
          outcome: 'failed',
          error: undefined,
          seconds: (performance.now() - started) / 1000,
        },
        caller,
      );
      if (typeof name !== 'string')
        throw new RpcFault(
          RpcCode.invalidParams,
          'Invalid params: tools/call needs params.name, the tool to call',
          200,
        );
      const names =
        this.#tools(caller)
          .map((o) => o.tool.name)
          .join(', ') || 'no tool';
      const why = caller.tools === undefined ? this.#runner.whyNotOffered(name) : '';
      throw new RpcFault(
        RpcCode.invalidParams,
        `Unknown tool: ${JSON.stringify(echo(name))}; ${caller.tools === undefined ? 'this server offers' : 'this token is offered'} ${names}${why}`,
        200,
      );
    }
    const { tool } = offered;
    const span = this.#tracer.startSpan(`mcp.tool ${tool.name}`, { attributes: { 'mcp.tool': tool.name } });
    // The call runs inside its span, so that spans made below it (a statement's) are its children.
    const outcome: ToolOutcome =
      refusal !== undefined
        ? { ok: false, ...refusal }
        : context.with(trace.setSpan(context.active(), span), () =>
            this.#runner.call(offered, request.params.arguments, caller),
          );
    // Only a fault is one: a full tenant (507) or an unreachable one (503) is a refusal the model can act on.
    const failed = !outcome.ok && outcome.error.status === 500;
    const label: ToolCallOutcome = outcome.ok ? 'ok' : failed ? 'failed' : 'refused';
    span.setAttribute('mcp.outcome', label);
    if (!outcome.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.code });
    span.end();
    this.#options.onToolCall?.(
      {
        tool: tool.name,
        audited: tool.audited,
        outcome: label,
        error: outcome.ok ? undefined : outcome.error,
        seconds: (performance.now() - started) / 1000,
      },
      caller,
    );
    if (outcome.ok) {
      const text = tool.answersRows ? markUntrusted(outcome.text) : outcome.text;
      return {
        result: { content: [{ type: 'text', text }], structuredContent: outcome.answer, isError: false },
        json: outcome.text,
        text,
      };
    }
    if (failed)
      throw new RpcFault(RpcCode.internalError, `Internal error: ${outcome.error.message}`, 200, {
        data: { code: outcome.error.code },
      });
    const { error } = outcome.error.toJSON();
    const refused = { error: { ...error, status: outcome.error.status, ...outcome.details } };
    return {
      result: { content: [{ type: 'text', text: JSON.stringify(refused) }], structuredContent: refused, isError: true },
      json: undefined,
      text: undefined,
    };
  }
}

function fault(err: RpcFault, id: RpcAnswer['id'] | null = err.id): McpReply {
  const answered = reply(err.httpStatus, errorAnswer(id, err.body()));
  const scope = err.httpStatus === 403 ? (err.data as { scope?: string } | undefined)?.scope : undefined;
  return scope === undefined ? answered : { ...answered, scope };
}

/** A name the client sent, as an error repeats it: at most 100 characters, so that no answer echoes a megabyte back. */
function echo(name: string): string {
  return name.length <= 100 ? name : `${name.slice(0, 100)}…`;
}
