/**
 * The MCP endpoint as fenec-server and `fenec mcp --file` serve it: the tools over this database,
 * every call counted, spanned, and — for write, remember and forget — audited before its answer.
 */
import { createRequire } from 'node:module';
import { Audit, subjectOf } from '../../shared/audit.js';
import { McpEndpoint, type ToolCallEvent } from '../../shared/mcp/endpoint.js';
import { ToolRunner, type StatementRunner, type ToolCaller } from '../../shared/mcp/tool-runner.js';
import type { Logger } from '../../shared/logger.js';
import { CursorKeeper } from '../../shared/paging/cursor.js';
import type { ExecuteOptions } from '../database.js';

export type { ToolCaller };

/** fenecdb's name and version, as an MCP client is told them. */
export const SERVER_INFO = Object.freeze({
  name: 'fenecdb',
  version: (createRequire(import.meta.url)('../../../package.json') as { version: string }).version,
});

/** The tools that change rows: each call is an audit line. */
const AUDITED: ReadonlySet<string> = new Set(['write', 'remember', 'forget']);

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
}

export function mcpEndpoint(db: StatementRunner<ExecuteOptions>, options: McpServeOptions): McpEndpoint<ExecuteOptions> {
  const audit = options.audit ?? Audit.off;
  // Only the server's token (or the file's own process) makes the memory collection: "who" is the server.
  const runner = new ToolRunner<ExecuteOptions>(db, { write: options.write, memory: options.memory, readOnly: options.readOnly }, (change) => {
    if (change.kind === 'CreateCollection') audit.schema('create', change.name, { kind: 'server' });
    else audit.schema('alter add', change.collection, { kind: 'server' });
  }, options.cursorSecret === undefined ? undefined : new CursorKeeper(options.cursorSecret));
  const tenant = options.tenant ?? null;
  const { logger, count } = options;
  return new McpEndpoint(runner, {
    serverInfo: SERVER_INFO,
    onToolCall: (event, caller) => {
      count?.(event.tool, event.outcome);
      if (event.outcome === 'failed' && event.error !== undefined) {
        logger.error({ err: event.error.cause ?? event.error, code: event.error.code, tool: event.tool }, 'MCP tool call failed');
      }
      if (audit.enabled && AUDITED.has(event.tool)) {
        const jwt = caller.options.jwt;
        audit.mcp(event.tool, tenant, jwt === undefined ? null : subjectOf(jwt), event.outcome === 'ok', event.error?.code);
      }
    },
    onFault: (err) => logger.error({ err }, 'MCP message failed'),
  });
}
