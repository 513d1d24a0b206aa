/**
 * A one-file server's statements on its serving thread (`--workers 0`, its default): the worker's own code
 * (TenantWorker) handed its messages by a call instead of a postMessage, its replies given back the same way.
 *
 * A one-file server is one tenant, so a worker thread isolates it from nobody; what the thread cost it was the
 * hop — two wake-ups a request, a second V8 heap — measured at 1.3–1.9× a `near`'s and a row by id's latency
 * against the build before the worker threads (docs/performance.md). On this thread SQLite still stops a
 * statement at its deadline (the same interrupt), but work that overruns outside SQLite cannot be ended, and
 * the thread answers nothing else while a statement runs: `--workers 1` keeps the worker thread for that.
 */
import type { Audit } from '../../shared/audit.js';
import type { Logger } from '../../shared/logger.js';
import type { mcpEndpoint } from '../mcp/serve-mcp.js';
import type { ToWorker, WorkerReply, WorkerSetup } from './protocol.js';
import { TenantWorker, type TenantMessage } from './tenant-worker.js';

/** What a worker thread makes for itself at its start (worker-main.ts), given by the serving thread. */
export interface InlineParts {
  readonly audit: Audit;
  /** The MCP endpoint's maker, when the server serves MCP. */
  readonly endpoint: typeof mcpEndpoint | undefined;
}

export class InlineThread {
  readonly #worker: TenantWorker;
  readonly #receive: (replies: WorkerReply[]) => void;

  constructor(setup: WorkerSetup, logger: Logger, parts: InlineParts, receive: (replies: WorkerReply[]) => void) {
    this.#receive = receive;
    // Nothing crosses a thread: the bytes a worker would move are the serving thread's already.
    this.#worker = new TenantWorker(setup, logger, parts.audit, (replies) => receive(replies), parts.endpoint);
  }

  postMessage(messages: readonly ToWorker[]): void {
    const work: TenantMessage[] = [];
    for (const message of messages) {
      // The spans are the serving thread's own, flushed with its tracer: nothing of this thread's waits.
      if (message.kind === 'flush') this.#receive([{ id: message.id, status: 200, body: undefined, ms: 0 }]);
      else work.push(message);
    }
    if (work.length > 0) this.#worker.take(work);
  }

  terminate(): Promise<void> {
    return Promise.resolve();
  }
}
