/**
 * The entry of a worker thread: opens the audit and the log, then serves what the serving thread
 * sends (see TenantWorker). Its files are closed when the serving thread says so; a worker
 * terminated inside a statement leaves SQLite to roll it back as its connection goes.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { Audit } from '../../shared/audit.js';
import { createLogger } from '../../shared/logger.js';
import { startTracing } from '../../shared/tracing.js';
import { useNativeBuilds } from '../native-builds.js';
import type { ToWorker, WorkerReply, WorkerSetup } from './protocol.js';
import { TenantWorker, type TenantMessage } from './tenant-worker.js';

const setup = workerData as WorkerSetup;
const port = parentPort!;
useNativeBuilds(setup.nativeBuilds);
const logger = createLogger('fenec-server');
/** A worker's nice value over the serving thread's: below it, above background index work (+10, native/faiss). */
const WORKER_NICE = 5;
lowerPriority();
const audit =
  setup.audit === undefined
    ? Audit.off
    : Audit.open(setup.audit, (err) => logger.error({ err }, 'an audit line could not be written'));
// MCP's modules are loaded only where it is served: a worker's start is part of the server's.
const endpoint = setup.mcp === undefined ? undefined : (await import('../mcp/serve-mcp.js')).mcpEndpoint;
// Its own tracer provider (a thread has its own globals): an MCP tool call's span is made here.
const tracing = await startTracing(setup.otel, 'fenec-server', logger);
const worker = new TenantWorker(
  setup,
  logger,
  audit,
  (replies: WorkerReply[], transfer: ArrayBuffer[]) => port.postMessage(replies, transfer),
  endpoint,
);
port.on('message', (messages: ToWorker[]) => {
  const work: TenantMessage[] = [];
  for (const message of messages) {
    if (message.kind !== 'flush') work.push(message);
    else
      void tracing
        .shutdown()
        .then(() =>
          port.postMessage([{ id: message.id, status: 200, body: undefined, ms: 0 }] satisfies WorkerReply[]),
        );
  }
  if (work.length > 0) worker.take(work);
});

/**
 * Statements yield the cores to the serving thread: on Linux a thread has a nice value of its own, and
 * a worker's is raised, so that the thread that reads requests and writes answers for every tenant
 * is never left waiting for a core behind one tenant's load. (Elsewhere a thread cannot be told
 * apart from its process: nothing is changed.)
 */
function lowerPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    const tid = Number(path.basename(fs.readlinkSync('/proc/thread-self')));
    // On Linux the process's id is its first thread's, the serving thread's.
    os.setPriority(tid, Math.min(19, os.getPriority(process.pid) + WORKER_NICE));
  } catch (err) {
    logger.warn({ err }, "the worker thread's priority could not be lowered");
  }
}
