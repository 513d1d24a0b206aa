/**
 * A replicated tenant node's side of its tenants (`--nats`): the directory's tenants kept in the registry (their
 * quotas, their policy file), each request's tenant made this node's and its file the log's head before the worker
 * runs it, and each reply's change in the log before the answer is given.
 */
import * as fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import * as path from 'node:path';
import { parsePolicy } from '../../shared/auth/policy.js';
import { FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { TenantEntry } from '../../shared/nats/directory.js';
import type { Replication } from '../replication/replication.js';
import type { TenantLimits, WorkerReply } from '../workers/protocol.js';
import type { WorkerPool } from '../workers/worker-pool.js';
import type { Quotas } from './quotas.js';
import type { OpenTenant, TenantRegistry } from './tenant-registry.js';
import { sendTenantFile } from './tenant-transfer.js';

/** What the admin routes do instead of writing this node's files alone (tenant-routes.ts). */
export interface TenantAdmin {
  put(name: string, body: unknown): Promise<{ created: boolean }>;
  /** A restore replaced the tenant's file (it is closed): the log takes it whole. */
  restored(name: string): Promise<void>;
  /** The tenant's file as of `at` (an ISO time), streamed as a backup is. */
  backupAt(name: string, at: string, res: ServerResponse): Promise<void>;
  delete(name: string): Promise<void>;
  setPolicy(name: string, text: string): Promise<void>;
}

export class ReplicatedTenants<T extends OpenTenant> implements TenantAdmin {
  readonly #replication: Replication;
  readonly #registry: TenantRegistry<T>;
  readonly #pool: WorkerPool;
  readonly #dir: string;
  readonly #limits: (quotas: Quotas) => TenantLimits;
  readonly #logger: Logger;

  constructor(
    replication: Replication,
    registry: TenantRegistry<T>,
    pool: WorkerPool,
    dir: string,
    limits: (quotas: Quotas) => TenantLimits,
    logger: Logger,
  ) {
    this.#replication = replication;
    this.#registry = registry;
    this.#pool = pool;
    this.#dir = dir;
    this.#limits = limits;
    this.#logger = logger;
    replication.attach({
      put: (tenant, entry) => this.#take(tenant, entry),
      delete: (tenant) => {
        if (registry.has(tenant)) void registry.delete(tenant).catch(() => undefined);
      },
      close: (tenant) => this.#closeFile(tenant),
      snapshot: (tenant) => this.#snapshot(tenant),
    });
  }

  /** The refusal of a request for a tenant another node serves, or undefined. */
  refusal(tenant: string): FenecError | undefined {
    return this.#replication.refusal(tenant);
  }

  /**
   * Runs `work` on the tenant once it is this node's and caught up; its change in the log before it resolves.
   * `committed` hears of a write that succeeded in the file while its change waits for the log's ack (a refused one,
   * even with chunks committed before its refusal, is not told: nothing may be sent after it on its word).
   */
  async run(tenant: string, work: () => Promise<WorkerReply>, committed?: () => void): Promise<WorkerReply> {
    await this.#ready(tenant);
    const reply = await work();
    const logged = this.#pool.logged(reply);
    if (logged !== undefined && reply.status === 200) committed?.();
    await logged;
    return reply;
  }

  /**
   * The tenant's file closed by its worker: its last change into the log, its sequence kept beside it — unless a
   * request sent after the close opened it again (the file is still the log's head, open).
   */
  closed(tenant: string, logged: Promise<number> | undefined): Promise<void> {
    return this.#replication.replicas.closed(tenant, logged, () => this.#pool.holds(tenant));
  }

  /**
   * Closes the tenant's file on its worker, whatever the registry holds: a request whose entry a close took away
   * (one that waited for the tenant to be caught up) has its worker open the file again, and only the worker's own
   * close makes it safe to rebuild the file or leave it to another node.
   */
  async #closeFile(tenant: string): Promise<void> {
    await this.#registry.reopen(tenant);
    if (this.#pool.holds(tenant)) await this.closed(tenant, (await this.#pool.close(tenant)).logged);
  }

  async put(name: string, body: unknown): Promise<{ created: boolean }> {
    // Checked as the registry checks it, before anything is written.
    const quotas = this.#registry.check(body);
    // A tenant made here is served here (a router sends its PUT to the node it places the tenant on).
    const created = await this.#replication.putTenant(name, (entry) => ({
      quotas,
      policy: entry?.policy ?? null,
      owner: entry === undefined ? this.#replication.node : entry.owner,
    }));
    this.#registry.put(name, quotas);
    return { created };
  }

  async backupAt(name: string, at: string, res: ServerResponse): Promise<void> {
    const tenant = this.#registry.get(name);
    const when = new Date(at);
    if (Number.isNaN(when.getTime()))
      throw new FenecError('bad_request', `?at= takes a time such as 2026-12-01T22:30:00Z, not ${at}`);
    const file = path.join(this.#dir, `.at-${name}-${process.hrtime.bigint()}.tmp`);
    try {
      await this.#replication.copyAt(name, when, file);
    } catch (err) {
      fs.rmSync(file, { force: true });
      throw err;
    }
    await sendTenantFile(res, name, file, tenant.quotas);
  }

  async restored(name: string): Promise<void> {
    const quotas = this.#registry.get(name).quotas;
    await this.#replication.replaced(name, path.join(this.#dir, `${name}.fenec`), (entry) => ({
      quotas,
      policy: entry?.policy ?? null,
      owner: this.#replication.node,
    }));
  }

  async delete(name: string): Promise<void> {
    this.#registry.get(name);
    await this.#replication.deleteTenant(name);
    if (this.#registry.has(name)) await this.#registry.delete(name);
  }

  async setPolicy(name: string, text: string): Promise<void> {
    this.#registry.get(name);
    parsePolicy(text, path.join(this.#dir, `${name}.policy`));
    await this.#replication.putTenant(name, (entry) => ({
      quotas: entry?.quotas ?? this.#registry.get(name).quotas,
      policy: text,
      owner: entry?.owner ?? null,
    }));
    await this.#writePolicy(name, text);
  }

  /**
   * The tenant this node's and its file the log's head, still so when this resolves: the caller's message to the
   * worker, sent in the same turn, is queued before any close a rebuild sends (a rebuild starts only once the file
   * is no longer the head), so the worker never opens the file a rebuild is about to replace.
   */
  async #ready(tenant: string): Promise<void> {
    do await this.#replication.acquire(tenant);
    while (this.#replication.replicas.seqOf(tenant) === undefined);
  }

  /** A tenant as the directory holds it: its quotas in the registry, its policy in its file. */
  #take(tenant: string, entry: TenantEntry): void {
    try {
      const known = this.#registry.has(tenant) ? this.#registry.get(tenant).quotas : undefined;
      if (known === undefined || JSON.stringify(known) !== JSON.stringify(this.#registry.check(entry.quotas)))
        this.#registry.put(tenant, entry.quotas);
      void this.#writePolicy(tenant, entry.policy);
    } catch (err) {
      this.#logger.warn({ tenant, err }, "a tenant's entry in the directory was not taken");
    }
  }

  /** Writes (or removes) the tenant's policy file when it differs; its file is reopened under it. */
  async #writePolicy(tenant: string, text: string | null): Promise<void> {
    const file = path.join(this.#dir, `${tenant}.policy`);
    const now = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    if (now === text) return;
    if (text === null) fs.rmSync(file, { force: true });
    else {
      fs.writeFileSync(`${file}.tmp`, text);
      fs.renameSync(`${file}.tmp`, file);
    }
    await this.#registry.reopen(tenant);
  }

  /** The tenant's file copied by its worker at the sequence its change gets; undefined when it could not be. */
  async #snapshot(tenant: string): Promise<{ file: string; seq: number } | undefined> {
    if (!this.#registry.has(tenant) || this.#replication.replicas.seqOf(tenant) === undefined) return undefined;
    const record = this.#registry.get(tenant);
    const opened = this.#registry.acquire(record);
    const file = this.#replication.snapshotFile(tenant);
    try {
      await this.#ready(tenant);
      const reply = await this.#pool.snapshot(tenant, this.#limits(record.quotas), file);
      // The copy holds every change up to its own: the sequence that one gets (or the last, when it has none).
      const seq = await (this.#pool.logged(reply) ?? this.#replication.replicas.settled(tenant));
      if (reply.status !== 200 || !fs.existsSync(file)) return undefined;
      return { file, seq };
    } finally {
      this.#registry.release(tenant, opened);
    }
  }
}
