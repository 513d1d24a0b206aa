/**
 * `fenec mcp --url URL`: stdio in front of a server's /_mcp. Each line is posted as it came, with
 * the headers HTTP asks of it (a 2026-07-28 message's revision, method and name, read from the
 * message itself) and the bearer token; the server's answer is written back as it came. The server
 * decides everything: tools, tokens, policies, refusals. What only the bridge can see — the server
 * not answering, or answering without JSON-RPC (a refused token) — becomes a JSON-RPC error for the
 * message's id.
 */
import { FenecError } from '../../shared/errors.js';
import { META_VERSION, MODERN } from '../../shared/mcp/revisions.js';

/** JSON-RPC's "server error": the answer the bridge makes when the server gave none it could pass on. */
const BRIDGE_ERROR = -32000;

export interface BridgeOptions {
  readonly url: URL;
  /** The bearer token (FENEC_TOKEN). */
  readonly token: string | undefined;
}

export class McpBridge {
  readonly #url: URL;
  readonly #headers: Readonly<Record<string, string>>;

  constructor(options: BridgeOptions) {
    this.#url = options.url;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    this.#headers = Object.freeze(headers);
  }

  /** Posts one line; answers the JSON-RPC messages to write back (none for a notification). */
  async forward(line: string): Promise<unknown[] | undefined> {
    const message = readMessage(line);
    let response: Response;
    try {
      response = await fetch(this.#url, {
        method: 'POST',
        headers: { ...this.#headers, ...mcpHeaders(message) },
        body: line,
      });
    } catch (err) {
      const cause = (err as Error).cause as NodeJS.ErrnoException | undefined;
      return this.#error(
        message,
        `cannot reach ${this.#url.href}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
        { status: null },
      );
    }
    const text = await response.text();
    if (text === '') return undefined;
    if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) return eventData(text);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return this.#error(
        message,
        `${this.#url.href} answered ${response.status} without JSON; is it a fenecdb server with --mcp?`,
        { status: response.status },
      );
    }
    if (typeof body === 'object' && body !== null && 'jsonrpc' in body) return [body];
    // A refusal before MCP was reached (a token, an Origin, a path): fenecdb's own error JSON.
    const error = (body as { error?: { code?: string; message?: string; hint?: string } }).error;
    const why = error?.message ?? `HTTP ${response.status}`;
    return this.#error(
      message,
      `${this.#url.href} answered ${response.status}: ${why}${error?.hint === undefined ? '' : ` (${error.hint})`}`,
      { status: response.status, ...(error === undefined ? {} : { error }) },
    );
  }

  #error(
    message: Record<string, unknown> | undefined,
    text: string,
    data: Record<string, unknown>,
  ): unknown[] | undefined {
    // A notification is answered by nobody, even when it went nowhere.
    if (message !== undefined && !('id' in message)) return undefined;
    const id = message?.id;
    return [
      {
        jsonrpc: '2.0',
        id: typeof id === 'string' || typeof id === 'number' ? id : null,
        error: { code: BRIDGE_ERROR, message: text, data },
      },
    ];
  }
}

/** The line as a message object, when it is one (anything else is the server's to refuse). */
function readMessage(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** What HTTP repeats of a 2026-07-28 message in headers; the handshake revisions need none. */
function mcpHeaders(message: Record<string, unknown> | undefined): Record<string, string> {
  const params = message?.params as Record<string, unknown> | undefined;
  const version = (params?._meta as Record<string, unknown> | undefined)?.[META_VERSION];
  if (typeof version !== 'string' || version < MODERN || typeof message!.method !== 'string') return {};
  const headers: Record<string, string> = {
    'mcp-protocol-version': headerValue(version),
    'mcp-method': headerValue(message!.method),
  };
  const name = message!.method === 'resources/read' ? params!.uri : params!.name;
  if (
    typeof name === 'string' &&
    (message!.method === 'tools/call' || message!.method === 'prompts/get' || message!.method === 'resources/read')
  ) {
    headers['mcp-name'] = headerValue(name);
  }
  return headers;
}

/** A header value as MCP sends it: plain when printable ASCII without outer blanks, else =?base64?…?=. */
function headerValue(value: string): string {
  return /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)
    ? value
    : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** The messages of a text/event-stream answer: each event's data lines joined. */
function eventData(text: string): unknown[] {
  const messages: unknown[] = [];
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(5).trimStart())
      .join('\n');
    if (data === '') continue;
    try {
      messages.push(JSON.parse(data));
    } catch {
      // An event that is not a message (a comment, a ping) carries nothing to pass on.
    }
  }
  return messages;
}

/**
 * The MCP URL from `--url`: a server's base URL gets /_mcp appended (keeping a path prefix, as
 * /t/<tenant>); a URL ending in /_mcp is kept.
 *
 * @throws FenecError `invalid_option` for what is not an http URL: the bridge speaks plain HTTP only.
 */
export function bridgeUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new FenecError('invalid_option', `--url takes a URL such as http://127.0.0.1:8080/_mcp, not ${text}`);
  }
  if (url.protocol !== 'http:') {
    throw new FenecError(
      'invalid_option',
      `--url takes an http URL, not ${url.protocol.slice(0, -1)}: the bridge speaks plain HTTP only; an agent whose client speaks https can reach a TLS-terminated server directly`,
    );
  }
  if (!url.pathname.endsWith('/_mcp')) url.pathname = `${url.pathname.replace(/\/$/, '')}/_mcp`;
  return url;
}
