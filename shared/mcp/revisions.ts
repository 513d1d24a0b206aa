/**
 * The MCP revisions served, and what tells them apart. 2026-07-28 is stateless: each request names
 * its revision and the client's capabilities in `params._meta`, and over HTTP its headers repeat the
 * revision, the method and the tool's name. The handshake revisions open with `initialize`; they are
 * served the same way, without a session.
 */
import { RpcCode, RpcFault } from './json-rpc.js';

export const MODERN = '2026-07-28';
/** The handshake revisions, latest first: an `initialize` asking for another is answered with the first. */
export const HANDSHAKE = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
/** Every revision served, as a -32022 refusal lists them. */
export const SUPPORTED: readonly string[] = Object.freeze([MODERN, ...HANDSHAKE]);

export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** Request headers as the transport has them: a name in lower case → its value, or undefined. */
export type HeaderReader = (name: string) => string | undefined;

/** The methods whose target a 2026-07-28 request repeats in `Mcp-Name`, and where the body has it. */
const NAMED: Readonly<Record<string, 'name' | 'uri'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
};

export function unsupportedVersion(requested: unknown): RpcFault {
  return new RpcFault(
    RpcCode.unsupportedVersion,
    `Unsupported protocol version ${JSON.stringify(requested)}; this server serves ${SUPPORTED.join(', ')}`,
    400,
    { data: { supported: SUPPORTED, requested } },
  );
}

/**
 * The `_meta` envelope of a 2026-07-28 request: its revision must be served, and its client
 * capabilities given (an object, `{}` for none).
 *
 * @throws RpcFault -32602 for a missing or malformed envelope, -32022 for a revision not served.
 */
export function checkEnvelope(meta: Record<string, unknown> | undefined): void {
  const version = meta?.[META_VERSION];
  if (typeof version !== 'string') {
    throw new RpcFault(
      RpcCode.invalidParams,
      `Invalid params: params._meta["${META_VERSION}"] is required in a ${MODERN} request`,
      400,
    );
  }
  if (version !== MODERN) throw unsupportedVersion(version);
  const capabilities = meta![META_CAPABILITIES];
  if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) {
    throw new RpcFault(
      RpcCode.invalidParams,
      `Invalid params: params._meta["${META_CAPABILITIES}"] is required (an object; {} for none)`,
      400,
    );
  }
}

/**
 * A 2026-07-28 request's headers against its body: MCP-Protocol-Version against `_meta`'s revision, Mcp-Method against
 * `method`, Mcp-Name against the tool (prompt, resource) it names.
 *
 * @throws RpcFault -32020 (400) naming the header and both values; -32602 when the body has no envelope to compare
 * with.
 */
export function checkHeaders(
  header: HeaderReader,
  method: string,
  params: Readonly<Record<string, unknown>>,
  isRequest: boolean,
): void {
  const meta = params._meta as Record<string, unknown> | undefined;
  const version = header('mcp-protocol-version');
  if (version === undefined) throw mismatch('the MCP-Protocol-Version header is missing');
  const bodyVersion = meta?.[META_VERSION];
  if (bodyVersion === undefined) {
    throw new RpcFault(
      RpcCode.invalidParams,
      `Invalid params: MCP-Protocol-Version says ${version} and params._meta["${META_VERSION}"] is missing`,
      400,
    );
  }
  if (decode(version) !== bodyVersion)
    throw mismatch(
      `MCP-Protocol-Version is ${JSON.stringify(version)} and the body's revision ${JSON.stringify(bodyVersion)}`,
    );
  const methodHeader = header('mcp-method');
  if (methodHeader === undefined) {
    if (isRequest) throw mismatch('the Mcp-Method header is missing');
  } else if (decode(methodHeader) !== method) {
    throw mismatch(`Mcp-Method is ${JSON.stringify(methodHeader)} and the body's method ${JSON.stringify(method)}`);
  }
  const key = NAMED[method];
  if (key === undefined) return;
  const nameHeader = header('mcp-name');
  if (nameHeader === undefined)
    throw mismatch(
      `the Mcp-Name header is missing; ${method} names its ${key === 'uri' ? 'resource' : 'target'} in it`,
    );
  if (decode(nameHeader) !== params[key])
    throw mismatch(`Mcp-Name is ${JSON.stringify(nameHeader)} and params.${key} ${JSON.stringify(params[key])}`);
}

function mismatch(what: string): RpcFault {
  return new RpcFault(RpcCode.headerMismatch, `Header mismatch: ${what}`, 400);
}

/**
 * A header value as the client meant it: surrounding blanks dropped, and `=?base64?…?=` (how values
 * outside printable ASCII travel) decoded.
 *
 * @throws RpcFault -32020 for characters a header value may not carry undecoded.
 */
function decode(value: string): string {
  const trimmed = value.trim();
  const encoded = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(trimmed);
  if (encoded !== null) return Buffer.from(encoded[1]!, 'base64').toString('utf8');
  if (!/^[\x20-\x7e\t]*$/.test(trimmed))
    throw mismatch('a header value holds characters outside printable ASCII without =?base64?…?= encoding');
  return trimmed;
}

/** The revision a client's `initialize` agrees on: its own when served, else the latest handshake revision. */
export function agreedRevision(requested: unknown): string {
  return (HANDSHAKE as readonly unknown[]).includes(requested) ? (requested as string) : HANDSHAKE[0];
}
