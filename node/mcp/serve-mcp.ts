/**
 * The MCP endpoint as fenec-server and `fenec mcp --file` serve it: the tools over this database,
 * every call counted, spanned, and — for the tools that say so (those that change rows) — audited
 * before its answer.
 */
import { createRequire } from 'node:module';
import { Audit, subjectOf } from '../../shared/audit.js';
import { auditedChange } from '../../shared/fenecql/kinds.js';
import { McpEndpoint, type ToolCallEvent } from '../../shared/mcp/endpoint.js';
import { offers, type EmbedderOf, type Tool } from '../../shared/mcp/tool.js';
import { ToolRunner, type StatementRunner, type ToolCaller } from '../../shared/mcp/tool-runner.js';
import { TOOLS } from '../../shared/mcp/tools.js';
import type { Logger } from '../../shared/logger.js';
import { CursorKeeper } from '../../shared/paging/cursor.js';
import type { ServerConfig } from '../config.js';
import type { ExecuteOptions } from '../database.js';
import { EmbeddingsWanted } from '../embedder/round.js';

export type { ToolCaller };

/** fenecdb's name and version, as an MCP client is told them. */
export const SERVER_INFO = Object.freeze({
  name: 'fenecdb',
  version: (createRequire(import.meta.url)('../../../package.json') as { version: string }).version,
});

export interface McpServeOptions {
  /** Offer `write`. */
  readonly write: boolean;
  /** Offer remember, recall and forget over this collection. */
  readonly memory: string | undefined;
  /** No tool that writes is offered (--http-read-only, a read-only file). */
  readonly readOnly: boolean;
  /** The tenant whose file this is, for audit lines; null off a tenant node. */
  readonly tenant?: string | null;
  readonly audit?: Audit;
  readonly logger: Logger;
  /** Signs the cursors of reads (the server's config.cursorSecret); default: a secret of this endpoint's own. */
  readonly cursorSecret?: Uint8Array;
  /** Counts each call by tool and outcome (the server's fenec_mcp_tool_calls_total). */
  readonly count?: (tool: string, outcome: ToolCallEvent['outcome']) => void;
  /** The tools it can offer. Default: the list of tools (shared/mcp/tools.ts). */
  readonly tools?: readonly Tool[];
  /** The server's embedder (--embedder-url): the tools search words by meaning too, and the memories embed. */
  readonly embedder?: EmbedderOf;
  /** --mcp-memory-merge COSINE. */
  readonly memoryMerge?: number;
}

export function mcpEndpoint(
  db: StatementRunner<ExecuteOptions>,
  options: McpServeOptions,
): McpEndpoint<ExecuteOptions> {
  const audit = options.audit ?? Audit.off;
  // Only the server's token (or the file's own process) makes the memory collection: "who" is the server.
  const runner = new ToolRunner<ExecuteOptions>(
    db,
    {
      write: options.write,
      memory: options.memory,
      readOnly: options.readOnly,
      embedder: options.embedder !== undefined,
      ...(options.memoryMerge === undefined ? {} : { memoryMerge: options.memoryMerge }),
    },
    {
      tools: options.tools,
      embedder: options.embedder,
      // The audit reads the tree the tool ran, as the kinds table says to record it.
      onSchemaChange: (change) => {
        const audited = auditedChange(change);
        if (audited !== undefined) audit.schema(audited.statement, audited.collection, { kind: 'server' });
      },
      cursors: options.cursorSecret === undefined ? undefined : new CursorKeeper(options.cursorSecret),
    },
  );
  const tenant = options.tenant ?? null;
  const { logger, count } = options;
  return new McpEndpoint(runner, {
    serverInfo: SERVER_INFO,
    onToolCall: (event, caller) => {
      // A call stopped for texts to embed runs again with them: only that run is counted and audited.
      if (event.error instanceof EmbeddingsWanted) return;
      count?.(event.tool, event.outcome);
      if (event.outcome === 'failed' && event.error !== undefined) {
        logger.error(
          { err: event.error.cause ?? event.error, code: event.error.code, tool: event.tool },
          'MCP tool call failed',
        );
      }
      if (audit.enabled && event.audited) {
        const jwt = caller.options.jwt;
        audit.mcp(
          event.tool,
          tenant,
          jwt === undefined ? null : subjectOf(jwt),
          event.outcome === 'ok',
          event.error?.code,
        );
      }
    },
    onFault: (err) => logger.error({ err }, 'MCP message failed'),
  });
}

/** The MCP endpoint and the tools a server with this config offers, as its startup line names them. */
export function mcpText(
  config: Pick<ServerConfig, 'mcp' | 'httpReadOnly' | 'readOnly'>,
  tools: readonly Tool[] = TOOLS,
): string {
  const setup = {
    write: config.mcp!.write,
    memory: config.mcp!.memory,
    readOnly: config.httpReadOnly || config.readOnly,
  };
  const offered = tools.filter((tool) => offers(tool, tool.define(setup), setup)).map((tool) => tool.name);
  return `POST /_mcp: ${offered.join(', ')}${setup.memory === undefined ? '' : ` (memory: ${setup.memory})`}`;
}
