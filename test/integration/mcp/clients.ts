/**
 * The official MCP clients, as an agent's host uses them: `@modelcontextprotocol/sdk` 1.x (the
 * 2025-11-25 handshake) and `@modelcontextprotocol/client` 2.x in auto mode (2026-07-28, stateless),
 * each over Streamable HTTP or over stdio, behind one small interface.
 */
import { Client as V2Client, StreamableHTTPClientTransport as V2Http } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Stdio } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Http } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport as V1Stdio } from '@modelcontextprotocol/sdk/client/stdio.js';
import { expectFitsOutputSchema } from '../../helpers/tool-output.js';
import { FENEC } from '../processes.js';

export type ClientKind = 'sdk 1.x' | 'client 2.x';

export interface ToolResult {
  readonly content: readonly { readonly type: string; readonly text?: string }[];
  readonly structuredContent?: unknown;
  readonly isError?: boolean;
}

export interface McpTestClient {
  readonly kind: ClientKind;
  /** The revision the client and server settled on. */
  readonly revision: string | undefined;
  listTools(): Promise<{ name: string; description?: string; inputSchema: unknown }[]>;
  /** A tool's result, an answer held to the tool's outputSchema; a JSON-RPC error is thrown, with its `code`. */
  callTool(name: string, args: Record<string, unknown>): Promise<ToolResult>;
  close(): Promise<void>;
}

export type Endpoint =
  | { readonly transport: 'http'; readonly url: string; readonly token?: string }
  | {
      readonly transport: 'stdio';
      readonly args: readonly string[];
      readonly env?: Record<string, string>;
      readonly cwd?: string;
      readonly command?: string;
    };

/** Connects a client of that kind to the endpoint; a stdio endpoint's args follow `node dist/node/cli/fenec.js`. */
export async function connect(kind: ClientKind, endpoint: Endpoint): Promise<McpTestClient> {
  const info = { name: 'fenec-test', version: '1.0.0' };
  const headers: Record<string, string> =
    endpoint.transport === 'http' && endpoint.token !== undefined ? { Authorization: `Bearer ${endpoint.token}` } : {};
  const stdio =
    endpoint.transport === 'stdio'
      ? {
          command: endpoint.command ?? process.execPath,
          args: endpoint.command === undefined ? [FENEC, ...endpoint.args] : [...endpoint.args],
          env: { PATH: process.env.PATH ?? '', ...endpoint.env },
          stderr: 'pipe' as const,
          ...(endpoint.cwd === undefined ? {} : { cwd: endpoint.cwd }),
        }
      : undefined;
  if (kind === 'sdk 1.x') {
    const client = new V1Client(info);
    await client.connect(
      endpoint.transport === 'http'
        ? new V1Http(new URL(endpoint.url), { requestInit: { headers } })
        : new V1Stdio(stdio!),
    );
    return {
      kind,
      revision: endpoint.transport === 'http' ? '2025-11-25' : undefined,
      listTools: async () => (await client.listTools()).tools,
      callTool: async (name, args) => checked(name, (await client.callTool({ name, arguments: args })) as ToolResult),
      close: () => client.close(),
    };
  }
  const client = new V2Client(info, { versionNegotiation: { mode: 'auto' } });
  await client.connect(
    endpoint.transport === 'http'
      ? new V2Http(new URL(endpoint.url), { requestInit: { headers } })
      : new V2Stdio(stdio!),
  );
  return {
    kind,
    revision: client.getNegotiatedProtocolVersion(),
    listTools: async () => (await client.listTools()).tools,
    callTool: async (name, args) => checked(name, (await client.callTool({ name, arguments: args })) as ToolResult),
    close: () => client.close(),
  };
}

/** A result, its answer (when it is not a refusal) held to the tool's outputSchema. */
function checked(name: string, result: ToolResult): ToolResult {
  if (result.isError !== true && result.structuredContent !== undefined)
    expectFitsOutputSchema(name, result.structuredContent);
  return result;
}
