/**
 * A tenant node (`fenec-server --data-dir D`): one pipeline (node/http/handler.ts) for every tenant, its route table
 * the tenants' work routes `/t/<tenant>/query|_mcp|_revocations`, their admin and moves (tenant-routes.ts) and the
 * node's own; its tenant and quota stages (tenant-stages.ts) own what is per tenant — the path's tenant, the token's
 * tenant claim, the quotas. Each tenant's file belongs to one worker thread (WorkerPool), which runs its statements.
 */
import { Gauge } from 'prom-client';
import { Audit } from '../../shared/audit.js';
import { FrontDoor } from '../../shared/http/front-door.js';
import { closeServer, listen, type RunningServer } from '../../shared/http/listen.js';
import { RouteTable } from '../../shared/http/route-table.js';
import type { Logger } from '../../shared/logger.js';
import type { TenantNodeConfig } from '../config.js';
import { HttpHandler } from '../http/handler.js';
import { HttpMetrics } from '../http/metrics.js';
import { metadataRoutes, ownRoutes, workRoutes } from '../http/routes.js';
import { CLOSE_GRACE_MS, createServer } from '../http/server.js';
import { acquireLock, type FileLock } from '../storage/lock.js';
import type { TenantLimits, WorkerEmbedder, WorkerReply } from '../workers/protocol.js';
import { replyError, WorkerPool, workerHeapMb, workerSetup } from '../workers/worker-pool.js';
import { Replication } from '../replication/replication.js';
import { ReplicatedTenants } from './replicated-tenants.js';
import type { QuotaKind, Quotas } from './quotas.js';
import { TenantRegistry, type Tenant } from './tenant-registry.js';
import { tenantRoutes } from './tenant-routes.js';
import { TenantNodeStages } from './tenant-stages.js';
import { TenantTransfers } from './tenant-transfer.js';

export interface TenantNodeOptions {
  /** How many tenants' files are open at once (`--max-open-tenants`); the least recently used is closed past it. */
  readonly maxOpenTenants: number;
  /** The quotas of a tenant created without its own (`--tenant-rate`, `--tenant-burst`, `--tenant-max-bytes`, …). */
  readonly quotas: Quotas;
}

interface OpenedTenant {
  close(): Promise<void>;
}

/** What a tenant's worker holds its file and statements to. */
function limitsOf(quotas: Quotas): TenantLimits {
  return {
    maxBytes: quotas.maxBytes,
    maxCollections: quotas.maxCollections,
    maxRows: quotas.maxRows,
    maxAnswerBytes: quotas.maxAnswerBytes,
    statementTimeoutMs: quotas.statementTimeoutMs,
    embedRate: quotas.embedRate,
  };
}

export async function startTenantNode(
  config: TenantNodeConfig,
  node: TenantNodeOptions,
  logger: Logger,
  audit: Audit = Audit.off,
  embedder?: WorkerEmbedder,
): Promise<RunningServer & { registry: TenantRegistry<OpenedTenant> }> {
  const replication =
    config.nats === undefined ? undefined : await Replication.start(config.nats, config.where.dataDir, logger);
  const metrics = new HttpMetrics();
  const refusals = metrics.counter(
    'fenec_tenant_quota_refusals_total',
    'Requests and MCP tool calls refused for a tenant quota, by quota (rate, cost: worker time, bytes, collections, rows, embed: texts embedded). No tenant is a label.',
    ['quota'],
  );
  const refused = (quota: QuotaKind): void => refusals.inc({ quota });
  const pool = new WorkerPool({
    workers: config.workers,
    logger,
    setup: workerSetup(config, embedder),
    maxHeapMb: workerHeapMb(config.maxAnswerBytes),
    changed: replication === undefined ? undefined : (tenant, change) => replication.commit(tenant, change),
  });
  const { registry, transfers, replicated } = tenantsOf(config, node, pool, replication, logger);
  countTenants(metrics, registry);
  const table = new RouteTable('a tenant node', [
    ...workRoutes('/t/<tenant>', config.maxBodyBytes, config.mcp !== undefined),
    ...tenantRoutes(registry, transfers, replicated),
    ...ownRoutes(metrics, 'tenant-node'),
    ...metadataRoutes(
      '/t/<tenant>',
      config.oauth === undefined ? undefined : (tenant) => config.oauth!.resource.document(tenant),
      (tenant) => registry.has(tenant),
    ),
  ]);
  const elsewhere = replicated === undefined ? undefined : (tenant: string) => replicated.refusal(tenant);
  const stages = new TenantNodeStages({ config, registry, transfers, metrics, audit, logger, refused, elsewhere });
  const pipeline = new HttpHandler(
    config,
    table,
    (req, work, committed) => {
      const tenant = registry.get(req.state.tenant);
      // Quotas set with PUT apply from the next request on.
      const run = (): Promise<WorkerReply> =>
        pool.run(tenant.name, limitsOf(tenant.quotas), work).then((reply) => {
          tenant.cost.charge(reply.ms);
          if (reply.quotas !== undefined) for (const quota of reply.quotas) refused(quota);
          return reply;
        });
      return replicated === undefined ? run() : replicated.run(tenant.name, run, committed);
    },
    new FrontDoor(config, audit, metrics.authRefused),
    metrics,
    logger,
    stages,
  );
  const server = createServer(config, pipeline.handle);
  return listen(server, config, logger, async () => {
    pipeline.stop();
    await closeServer(server, config.statementTimeoutMs + CLOSE_GRACE_MS);
    await registry.closeAll();
    await pool.stop();
    await replication?.close();
  }).then((running) => ({ ...running, registry }));
}

/** The node's tenants (their files, each opened by its worker under the file's lock) and their moves. */
function tenantsOf(
  config: TenantNodeConfig,
  node: TenantNodeOptions,
  pool: WorkerPool,
  replication: Replication | undefined,
  logger: Logger,
): {
  registry: TenantRegistry<OpenedTenant>;
  transfers: TenantTransfers<OpenedTenant>;
  replicated: ReplicatedTenants<OpenedTenant> | undefined;
} {
  const dataDir = config.where.dataDir;
  // The serving thread holds each open file's lock for the worker that opens it: a worker replaced
  // after a time limit opens the file again under the same lock. A file reopened before its worker
  // closed it (new quotas) keeps its lock: it is released when its last opening is closed.
  const locks = new Map<string, { lock: FileLock; opened: number }>();
  const registry: TenantRegistry<OpenedTenant> = new TenantRegistry<OpenedTenant>(
    dataDir,
    node.quotas,
    node.maxOpenTenants,
    (tenant: Tenant, file: string): OpenedTenant => {
      let held = locks.get(tenant.name);
      if (held === undefined) locks.set(tenant.name, (held = { lock: acquireLock(file, 'fenec-server'), opened: 0 }));
      held.opened += 1;
      const lock = held;
      return {
        close: () =>
          pool
            .close(tenant.name)
            .then(({ logged }) => replicated?.closed(tenant.name, logged))
            .finally(() => {
              lock.opened -= 1;
              if (lock.opened > 0) return;
              lock.lock.release();
              locks.delete(tenant.name);
            }),
      };
    },
  );
  const transfers = new TenantTransfers(dataDir, registry, async (tenant) => {
    // Its worker makes the file, with the catalogue, as at a tenant's first request.
    const opened = registry.acquire(tenant);
    try {
      const open = (): Promise<WorkerReply> => pool.open(tenant.name, limitsOf(tenant.quotas));
      const reply = await (replicated === undefined ? open() : replicated.run(tenant.name, open));
      if (reply.status !== 200) throw replyError(reply);
    } finally {
      registry.release(tenant.name, opened);
    }
  });
  const replicated =
    replication === undefined
      ? undefined
      : new ReplicatedTenants(replication, registry, pool, dataDir, limitsOf, logger);
  return { registry, transfers, replicated };
}

/** The tenants' gauges: how many there are, how many are open. */
function countTenants(metrics: HttpMetrics, registry: TenantRegistry<OpenedTenant>): void {
  new Gauge({
    name: 'fenec_tenants_open',
    help: 'Tenants whose file is open now.',
    registers: [metrics.registry],
    collect() {
      this.set(registry.openCount);
    },
  });
  new Gauge({
    name: 'fenec_tenants',
    help: 'Tenants on this node.',
    registers: [metrics.registry],
    collect() {
      this.set(registry.list().length);
    },
  });
}
