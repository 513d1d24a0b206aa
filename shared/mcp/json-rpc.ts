/**
 * JSON-RPC 2.0 as MCP uses it: one message per HTTP request or stdio line, read into a request or a
 * notification, and answered with a result or an error. Batches and responses are not taken.
 */

export type JsonRpcId = string | number;

/** The error codes MCP uses: JSON-RPC's own, and the range -32020… reserved by the MCP spec. */
export const RpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
  /**
   * 2026-07-28: an HTTP header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) says other than the body, or is missing.
   */
  headerMismatch: -32020,
  /** 2026-07-28: a request needs a client capability it did not declare. */
  missingClientCapability: -32021,
  /** 2026-07-28: a revision this server does not serve; `data.supported` lists those it does. */
  unsupportedVersion: -32022,
} as const;

export interface RpcRequest {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly params: Readonly<Record<string, unknown>>;
}

export interface RpcNotification {
  readonly method: string;
  readonly params: Readonly<Record<string, unknown>>;
}

export interface RpcErrorBody {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

export type RpcAnswer =
  | { readonly jsonrpc: '2.0'; readonly id: JsonRpcId; readonly result: unknown }
  | { readonly jsonrpc: '2.0'; readonly id: JsonRpcId | null; readonly error: RpcErrorBody };

/** A fault that ends a message with a JSON-RPC error, and the HTTP status that carries it. */
export class RpcFault extends Error {
  readonly code: number;
  readonly httpStatus: number;
  readonly data: unknown;
  /** The id of the request it answers, when one could be read. */
  readonly id: JsonRpcId | null;

  constructor(
    code: number,
    message: string,
    httpStatus: number,
    options: { data?: unknown; id?: JsonRpcId | null } = {},
  ) {
    super(message);
    this.name = 'RpcFault';
    this.code = code;
    this.httpStatus = httpStatus;
    this.data = options.data;
    this.id = options.id ?? null;
  }

  body(): RpcErrorBody {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

export type Message =
  | { readonly kind: 'request'; readonly request: RpcRequest }
  | { readonly kind: 'notification'; readonly notification: RpcNotification };

const NO_PARAMS: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * Reads one message. A JSON array (a batch), a response, or anything not shaped as a request or a
 * notification is refused.
 *
 * @throws RpcFault -32700 (not JSON) or -32600 (not one request or notification), with the id when one was readable.
 */
export function parseMessage(text: string): Message {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new RpcFault(RpcCode.parseError, `Parse error: the message is not JSON (${(err as Error).message})`, 400);
  }
  if (Array.isArray(value)) {
    throw new RpcFault(
      RpcCode.invalidRequest,
      'Invalid request: batches are not taken; send one JSON-RPC message per request',
      400,
    );
  }
  if (typeof value !== 'object' || value === null) {
    throw new RpcFault(RpcCode.invalidRequest, 'Invalid request: a message is a JSON object', 400);
  }
  const message = value as Record<string, unknown>;
  const id = message.id;
  const readableId = typeof id === 'string' || typeof id === 'number' ? id : undefined;
  const fail = (why: string): never => {
    throw new RpcFault(RpcCode.invalidRequest, `Invalid request: ${why}`, 400, { id: readableId });
  };
  if (message.jsonrpc !== '2.0') fail('"jsonrpc" must be "2.0"');
  if (typeof message.method !== 'string') {
    fail(
      'result' in message || 'error' in message
        ? 'this server sends no requests, so takes no responses'
        : '"method" must be a string',
    );
  }
  const params = message.params;
  if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params)))
    fail('"params" must be an object');
  const method = message.method as string;
  const readParams = (params as Record<string, unknown> | undefined) ?? NO_PARAMS;
  if (!('id' in message)) return { kind: 'notification', notification: { method, params: readParams } };
  if (readableId === undefined || (typeof id === 'number' && !Number.isFinite(id)))
    fail('"id" must be a string or a number');
  return { kind: 'request', request: { id: readableId!, method, params: readParams } };
}

export function resultAnswer(id: JsonRpcId, result: unknown): RpcAnswer {
  return { jsonrpc: '2.0', id, result };
}

export function errorAnswer(id: JsonRpcId | null, error: RpcErrorBody): RpcAnswer {
  return { jsonrpc: '2.0', id, error };
}
