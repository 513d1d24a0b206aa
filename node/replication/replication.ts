/**
 * A tenant node's replication (`--nats`): its connection to the NATS cluster, its lease, the tenants' directory,
 * their log, snapshots and this node's copies of them (replicas.ts).
 *
 * Who serves a tenant: its owner in the directory while that node's lease holds; a tenant without a live owner is
 * taken (compare-and-set on its entry) by the live node rendezvous hashing picks among the live ones — at its
 * first request, or at once when its owner's lease lapses (failover: the file restored from snapshot and log
 * before the first request comes). A node told that another took one of its tenants closes its file: its next
 * write would be refused by the log's fence anyway.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Directory, type Held, type Lease, type TenantEntry } from '../../shared/nats/directory.js';
import { FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { NatsConfig } from '../config.js';
import { applyChanges, wholeFile } from '../storage/wal-tail.js';
import { TenantLog } from './log.js';
import { Replicas } from './replicas.js';
import { Snapshots } from './snapshots.js';
import { Standby } from './standby.js';

/** What the node does when the directory changes a tenant (node/tenants/tenant-node.ts). */
export interface TenantSink {
  /** The tenant exists with these quotas and policy (made, changed, or first seen). */
  put(tenant: string, entry: TenantEntry): void;
  /** The tenant was deleted. */
  delete(tenant: string): void;
  /** Close the tenant's file here (another node serves it, or it is rebuilt). */
  close(tenant: string): Promise<void>;
  /** Take a snapshot of the tenant's file: resolves to the file copied and the sequence it holds, or undefined. */
  snapshot(tenant: string): Promise<{ file: string; seq: number } | undefined>;
}

export class Replication {
  readonly node: string;
  readonly replicas: Replicas;
  readonly directory: Directory;
  readonly #nc: NatsConnection;
  readonly #log: TenantLog;
  readonly #snapshots: Snapshots;
  readonly #logger: Logger;
  readonly #dataDir: string;
  readonly #snapshotIntervalMs: number;
  /** The warm standby's copies (`--standby`), or undefined. */
  readonly #standby: Standby | undefined;
  #sink: TenantSink | undefined;
  #lease: Lease | undefined;
  /** Tenants this node served when its lease lapsed: their entries are read afresh before they are served again. */
  readonly #doubted = new Set<string>();
  /** Tenants whose snapshot is being taken, and those changed since their last one (for the schedule). */
  readonly #snapshotting = new Set<string>();
  readonly #changed = new Set<string>();
  #timer: NodeJS.Timeout | undefined;

  private constructor(
    config: NatsConfig,
    dataDir: string,
    nc: NatsConnection,
    log: TenantLog,
    snapshots: Snapshots,
    directory: Directory,
    logger: Logger,
  ) {
    this.node = config.nodeName;
    this.#nc = nc;
    this.#log = log;
    this.#snapshots = snapshots;
    this.directory = directory;
    this.#logger = logger;
    this.#dataDir = dataDir;
    this.#snapshotIntervalMs = config.snapshotIntervalMs;
    this.replicas = new Replicas(config.nodeName, dataDir, log, snapshots, config.snapshotEvery, logger);
    this.#standby = config.standby ? new Standby(config.nodeName, nc, directory, this.replicas, logger) : undefined;
  }

  static async start(config: NatsConfig, dataDir: string, logger: Logger): Promise<Replication> {
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: [...config.servers],
        name: `fenec-server ${config.nodeName}`,
        maxReconnectAttempts: -1,
        // A server gone silent (no reset: a partition, a lost machine) is left after two unanswered pings, about
        // two leases, for another of the cluster's (the client's defaults wait minutes); the tenants have moved
        // by then, but the node is back sooner.
        ...natsTimers(config.leaseMs),
      });
    } catch (err) {
      throw new FenecError('invalid_option', `--nats ${config.servers.join(',')}: cannot connect: ${String(err)}`, {
        cause: err,
      });
    }
    // A cluster that is starting has no JetStream leader yet: a node started beside it waits for one.
    const { log, snapshots, directory } = await whenReady(async () => ({
      log: await TenantLog.open(nc, config.replicas, config.ackTimeoutMs),
      snapshots: await Snapshots.open(nc, config.replicas, config.ackTimeoutMs),
      directory: await Directory.open(nc, config.replicas),
    }));
    const replication = new Replication(config, dataDir, nc, log, snapshots, directory, logger);
    replication.#lease = await whenReady(() =>
      directory.hold(config.nodeName, config.leaseMs, () => replication.#lapsed()),
    );
    return replication;
  }

  /** Follows the directory into the node's tenants (every tenant it holds now, then each change). */
  attach(sink: TenantSink): void {
    this.#sink = sink;
    this.replicas.hooks = {
      close: (tenant) => sink.close(tenant),
      snapshotDue: (tenant) => void this.snapshot(tenant),
      refusal: () => (this.#lease?.holds() === false ? this.#cutOff() : undefined),
    };
    for (const [tenant, held] of this.directory.tenants()) sink.put(tenant, held.entry);
    this.directory.listen({
      tenant: (tenant, held) => {
        this.#tenantChanged(tenant, held);
        this.#standby?.update(tenant);
      },
      nodes: (_live, lapsed) => {
        if (lapsed.length > 0) this.#failover(lapsed);
        void this.#standby?.updateAll();
      },
    });
    void this.#standby?.updateAll();
    this.#timer = setInterval(() => {
      for (const tenant of this.#changed) void this.snapshot(tenant);
    }, this.#snapshotIntervalMs);
    this.#timer.unref();
    // Tenants left without a live owner while this node was away.
    this.#failover([]);
  }

  /**
   * The refusal of a request this node should not serve: another live node owns the tenant, or the live nodes'
   * rendezvous picks another for a tenant without one. Undefined: serve it (claimed at `acquire`).
   */
  refusal(tenant: string): FenecError | undefined {
    if (this.#lease?.holds() === false) return this.#cutOff();
    const placed = this.directory.placed(tenant);
    if (placed === this.node || placed === undefined) return undefined;
    return new FenecError('tenant_moving', `tenant ${tenant} is served by node ${placed}`, {
      retryAfter: 1,
      hint: 'retry through a router, which sends it to that node',
    });
  }

  /** Makes this node the tenant's owner (when it is not) and its file the log's head. */
  async acquire(tenant: string): Promise<void> {
    if (this.#lease?.holds() === false) throw this.#cutOff();
    const held = this.directory.get(tenant);
    if (held?.entry.owner !== this.node || this.#doubted.has(tenant)) {
      await this.#claim(tenant);
      this.#doubted.delete(tenant);
    }
    await this.replicas.ready(tenant);
  }

  /** A reply's change into the log (the tenant marked for the snapshot schedule). */
  commit(tenant: string, change: Uint8Array): Promise<number> {
    this.#changed.add(tenant);
    return this.replicas.commit(tenant, change);
  }

  /**
   * The tenant's file was replaced whole here (a restore): the log takes the file, and this node the tenant (its
   * entry written by `entry`, after the file is guarded from a rebuild).
   */
  async replaced(tenant: string, file: string, entry: (held: TenantEntry | undefined) => TenantEntry): Promise<void> {
    const shipped = this.replicas.replaced(tenant, () => wholeFile(file));
    await this.putTenant(tenant, entry);
    await shipped;
  }

  /**
   * Builds the tenant's file as it stood at `at` into `file`: the latest snapshot stored by then, and the log's
   * changes after it up to `at`. Refused (`bad_request`) before the older snapshot kept: the log behind it is gone.
   */
  async copyAt(tenant: string, at: Date, file: string): Promise<void> {
    const snapshots = await this.#snapshots.list(tenant);
    const base = snapshots.filter((s) => s.time.getTime() <= at.getTime()).pop();
    if (base === undefined && snapshots.length > 0) {
      throw new FenecError(
        'bad_request',
        `tenant ${tenant} can be restored as of ${snapshots[0]!.time.toISOString()} on`,
        {
          hint: 'name a later time: the log before the older snapshot kept was trimmed',
        },
      );
    }
    fs.rmSync(file, { force: true });
    const from = base === undefined ? 0 : await this.#snapshots.fetch(tenant, file, base.seq);
    const head = await this.#log.last(tenant);
    await applyChanges(file, (each) =>
      this.#log.read(tenant, from, head, async (change) => {
        if (change.time.getTime() <= at.getTime()) await each(change.bytes);
      }),
    );
    if (!fs.existsSync(file))
      throw new FenecError('bad_request', `tenant ${tenant} had no data at ${at.toISOString()}`);
  }

  /** Writes the tenant's entry (its quotas, its policy), keeping its owner; resolves to whether it was made. */
  async putTenant(tenant: string, change: (entry: TenantEntry | undefined) => TenantEntry): Promise<boolean> {
    let created = false;
    await this.directory.update(tenant, (held) => {
      created = held === undefined;
      return change(held?.entry);
    });
    return created;
  }

  /** Deletes the tenant everywhere: its entry, its log, its snapshots. */
  async deleteTenant(tenant: string): Promise<void> {
    await this.directory.remove(tenant);
    await this.#log.trim(tenant);
    await this.#snapshots.remove(tenant);
    this.replicas.forget(tenant);
  }

  /** Takes and stores the tenant's snapshot; the log is trimmed behind the older one kept. */
  async snapshot(tenant: string): Promise<void> {
    if (this.#sink === undefined || this.#snapshotting.has(tenant)) return;
    this.#snapshotting.add(tenant);
    this.#changed.delete(tenant);
    try {
      const taken = await this.#sink.snapshot(tenant);
      if (taken === undefined) return;
      try {
        const keep = await this.#snapshots.store(tenant, taken.file, taken.seq);
        // The tenant's last message always stays: a subject emptied by the purge would have no last sequence, and
        // the owner's next append (which names it) would be refused as if another node had written.
        const head = await this.#log.last(tenant);
        if (head > 0) await this.#log.trim(tenant, Math.min(keep + 1, head));
        this.#logger.debug({ tenant, seq: taken.seq }, 'snapshot stored');
      } finally {
        fs.rmSync(taken.file, { force: true });
      }
    } catch (err) {
      this.#logger.warn({ tenant, err }, 'a snapshot failed; the log keeps every change since the last one');
    } finally {
      this.#snapshotting.delete(tenant);
    }
  }

  /** Where a snapshot is copied before it is stored. */
  snapshotFile(tenant: string): string {
    return path.join(this.#dataDir, `${tenant}.snapshot`);
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#standby?.close();
    await this.#lease?.release();
    this.directory.close();
    await this.#nc.drain().catch(() => undefined);
  }

  /** The answer while this node's lease does not hold: another node may serve its tenants now. */
  #cutOff(): FenecError {
    return new FenecError(
      'unavailable',
      `node ${this.node} cannot renew its lease on the NATS cluster: its tenants may be served by another node now`,
      { retryAfter: 1, hint: 'retry through a router, which sends the request to the node that serves the tenant' },
    );
  }

  /**
   * The lease lapsed (the cluster acked no renewal for a lease): the others may take this node's tenants, so each
   * one's file is closed — prepared again from the log's head, its entry read afresh, when the lease holds again.
   */
  #lapsed(): void {
    const tenants = this.replicas.open();
    this.#logger.warn({ tenants: tenants.length }, 'lease lapsed: no renewal acked; serving no tenant until it holds');
    for (const tenant of tenants) {
      this.#doubted.add(tenant);
      void this.#sink?.close(tenant);
    }
  }

  async #claim(tenant: string): Promise<void> {
    const written = await this.directory.update(tenant, (held) => {
      if (held === undefined) return undefined;
      const owner = held.entry.owner;
      if (owner === this.node) return undefined;
      if (owner !== null && this.directory.live.has(owner)) return undefined;
      return { ...held.entry, owner: this.node };
    });
    const now = this.directory.get(tenant);
    if (now === undefined) throw new FenecError('unknown_tenant', `no tenant ${tenant}`);
    if (written === undefined && now.entry.owner !== this.node) {
      throw new FenecError('tenant_moving', `tenant ${tenant} is served by node ${now.entry.owner}`, {
        retryAfter: 1,
        hint: 'retry through a router, which sends it to that node',
      });
    }
    if (written !== undefined) this.#logger.info({ tenant }, 'tenant taken');
  }

  #tenantChanged(tenant: string, held: Held | undefined): void {
    if (held === undefined) {
      this.replicas.forget(tenant);
      this.#sink?.delete(tenant);
      return;
    }
    this.#sink?.put(tenant, held.entry);
    const owner = held.entry.owner;
    if (owner !== null && owner !== this.node && this.replicas.seqOf(tenant) !== undefined) {
      // Another node serves it now: this copy is left as it stands, to be caught up if it comes back.
      this.replicas.forget(tenant);
      void this.#sink?.close(tenant);
    } else if (owner === this.node && this.replicas.seqOf(tenant) === undefined) {
      // Moved here: caught up from the log now, not at its first request.
      this.acquire(tenant).catch((err: unknown) => this.#logger.warn({ tenant, err }, 'taking a tenant failed'));
    } else if (owner !== null && !this.directory.live.has(owner)) this.#failover([]);
  }

  /** Takes the tenants of lapsed nodes (and any without a live owner) that rendezvous gives this node. */
  #failover(lapsed: readonly string[]): void {
    if (lapsed.length > 0) this.#logger.warn({ nodes: lapsed }, 'leases lapsed: taking their tenants');
    for (const [tenant, held] of this.directory.tenants()) {
      const owner = held.entry.owner;
      if (owner !== null && this.directory.live.has(owner)) continue;
      if (this.directory.placed(tenant) !== this.node) continue;
      this.acquire(tenant).catch((err: unknown) => this.#logger.warn({ tenant, err }, 'taking a tenant failed'));
    }
  }
}

/**
 * The NATS client's timers from the lease: a ping each lease (at least a second), the connection given up after two
 * unanswered; a connection attempt waits two leases (at least 2 s) before the next server is tried.
 */
function natsTimers(leaseMs: number): { pingInterval: number; maxPingOut: number; timeout: number } {
  return { pingInterval: Math.max(1000, leaseMs), maxPingOut: 2, timeout: Math.max(2000, 2 * leaseMs) };
}

/** How long a start waits for JetStream to answer (a cluster electing its leader). */
const READY_MS = 60_000;

async function whenReady<T>(open: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + READY_MS;
  for (;;) {
    try {
      return await open();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
