/**
 * The entry of a worker thread: opens the audit and the log, then serves what the serving thread
 * sends (see TenantWorker). Its files are closed when the serving thread says so; a worker
 * terminated inside a statement leaves SQLite to roll it back as its connection goes.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Audit } from '../../shared/audit.js';
import { createLogger } from '../../shared/logger.js';
import { startTracing } from '../../shared/tracing.js';
import type { ToWorker, WorkerReply, WorkerSetup } from './protocol.js';
import { TenantWorker } from './tenant-worker.js';

const setup = workerData as WorkerSetup;
const port = parentPort!;
const logger = createLogger('fenec-server');
const audit = setup.audit === undefined ? Audit.off : Audit.open(setup.audit, (err) => logger.error({ err }, 'an audit line could not be written'));
// MCP's modules are loaded only where it is served: a worker's start is part of the server's.
const endpoint = setup.mcp === undefined ? undefined : (await import('../mcp/serve-mcp.js')).mcpEndpoint;
// Its own tracer provider (a thread has its own globals): an MCP tool call's span is made here.
const tracing = await startTracing(setup.otel, 'fenec-server', logger);
const worker = new TenantWorker(setup, logger, audit, (reply: WorkerReply, transfer: ArrayBuffer[]) => port.postMessage(reply, transfer), endpoint);
port.on('message', (message: ToWorker) => {
  if (message.kind !== 'flush') return worker.take(message);
  void tracing.shutdown().then(() => port.postMessage({ id: message.id, status: 200, body: undefined, ms: 0 } satisfies WorkerReply));
});
