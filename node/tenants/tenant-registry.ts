/**
 * The tenants of one node: `D/<tenant>.tenant.json` says a tenant exists and holds its quotas;
 * `D/<tenant>.fenec` is its data, opened at its first request and closed again, least recently used
 * first, past `maxOpen` (its Faiss indexes with it: FenecDatabase.close frees them).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FenecError } from '../../shared/errors.js';
import { isTenantName } from '../../shared/tenant-name.js';
import { CostBucket, quotasOf, TokenBucket, type Quotas } from './quotas.js';

export interface Tenant {
  readonly name: string;
  readonly quotas: Quotas;
  readonly bucket: TokenBucket;
  /** Its worker time (the costMs quota). */
  readonly cost: CostBucket;
}

/** What the registry keeps open for a tenant: anything with a close() (done once its promise settles). */
export interface OpenTenant {
  close(): void | Promise<void>;
}

interface Entry<T extends OpenTenant> {
  readonly value: T;
  /** Requests under way on it: an entry in use is never the one closed. */
  busy: number;
}

const META = '.tenant.json';

export class TenantRegistry<T extends OpenTenant> {
  readonly #dir: string;
  readonly #defaults: Quotas;
  readonly #maxOpen: number;
  readonly #open: (tenant: Tenant, file: string) => T;
  readonly #tenants = new Map<string, Tenant>();
  /** Open tenants, least recently used first (a Map keeps insertion order). */
  readonly #lru = new Map<string, Entry<T>>();
  /** Closes under way: a close asked meanwhile waits for them (the file is replaced or rebuilt once it resolves). */
  readonly #closing = new Map<string, Promise<void>>();

  constructor(dir: string, defaults: Quotas, maxOpen: number, open: (tenant: Tenant, file: string) => T) {
    this.#dir = dir;
    this.#defaults = defaults;
    this.#maxOpen = maxOpen;
    this.#open = open;
    fs.mkdirSync(dir, { recursive: true });
    for (const file of fs.readdirSync(dir)) {
      if (!file.endsWith(META)) continue;
      const name = file.slice(0, -META.length);
      if (!isTenantName(name)) continue;
      const stored = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { quotas?: unknown };
      this.#tenants.set(name, tenantOf(name, quotasOf(stored.quotas, defaults)));
    }
  }

  /** The quotas a tenant gets when none are given. */
  get defaults(): Quotas {
    return this.#defaults;
  }

  get openCount(): number {
    return this.#lru.size;
  }

  /** The tenant, or `unknown_tenant` (404). */
  get(name: string): Tenant {
    const tenant = this.#tenants.get(name);
    if (tenant === undefined)
      throw new FenecError('unknown_tenant', `no tenant ${name} on this node`, {
        hint: `create it with PUT /t/${name} and the server's token`,
      });
    return tenant;
  }

  has(name: string): boolean {
    return this.#tenants.has(name);
  }

  /** Requests under way on the tenant's open file (0 when it is not open). */
  busy(name: string): number {
    return this.#lru.get(name)?.busy ?? 0;
  }

  list(): readonly Tenant[] {
    return [...this.#tenants.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The quotas a PUT's body gives (the defaults filling what it leaves out). @throws FenecError for a bad one. */
  check(body: unknown): Quotas {
    return quotasOf(body, this.#defaults);
  }

  /** Creates a tenant, or sets the quotas of one that exists (its file kept, or adopted when present). */
  put(name: string, body: unknown): { tenant: Tenant; created: boolean } {
    const before = this.#tenants.get(name);
    const tenant = this.#store(name, quotasOf(body, this.#defaults));
    // The quotas a worker takes as it opens the file (bytes, rows, collections) apply once it is opened
    // again at its next request (its worker closes it before that request). The others travel with
    // each request, and closing the file for them would read every index snapshot again: seconds
    // for a large tenant, on the worker its neighbours share.
    if (before === undefined || OPEN_QUOTAS.some((key) => before.quotas[key] !== tenant.quotas[key]))
      void this.#close(name);
    return { tenant, created: before === undefined };
  }

  /**
   * Makes `file` (a checked copy, on this file system) the tenant's data, replacing what it held,
   * with `quotas` or the ones it had (the defaults for a new tenant). The caller has paused it.
   */
  async adopt(name: string, file: string, quotas: Quotas | undefined): Promise<Tenant> {
    // Closed by its worker before the file is replaced under it.
    await this.#close(name);
    const data = path.join(this.#dir, `${name}.fenec`);
    for (const suffix of ['-wal', '-shm', '.lock']) fs.rmSync(data + suffix, { force: true });
    fs.renameSync(file, data);
    return this.#store(name, quotas ?? this.#tenants.get(name)?.quotas ?? this.#defaults);
  }

  /**
   * Deletes a tenant and its data (`unknown_tenant` when there is none); its .policy file is the operator's and stays.
   */
  async delete(name: string): Promise<void> {
    this.get(name);
    this.#tenants.delete(name);
    await this.#close(name);
    fs.rmSync(path.join(this.#dir, name + META), { force: true });
    for (const suffix of ['.fenec', '.fenec-wal', '.fenec-shm', '.fenec.lock'])
      fs.rmSync(path.join(this.#dir, name + suffix), { force: true });
  }

  /** The tenant's open state (opened now if need be), marked busy until `release`. */
  acquire(tenant: Tenant): T {
    let entry = this.#lru.get(tenant.name);
    if (entry === undefined) {
      entry = { value: this.#open(tenant, path.join(this.#dir, `${tenant.name}.fenec`)), busy: 0 };
      this.#lru.set(tenant.name, entry);
      this.#evict();
    } else {
      this.#lru.delete(tenant.name);
      this.#lru.set(tenant.name, entry);
    }
    entry.busy += 1;
    return entry.value;
  }

  release(name: string, value: T): void {
    const entry = this.#lru.get(name);
    if (entry !== undefined && entry.value === value) entry.busy -= 1;
    this.#evict();
  }

  #store(name: string, quotas: Quotas): Tenant {
    const meta = path.join(this.#dir, name + META);
    fs.writeFileSync(`${meta}.tmp`, `${JSON.stringify({ quotas }, null, 2)}\n`);
    fs.renameSync(`${meta}.tmp`, meta);
    const tenant = tenantOf(name, quotas);
    this.#tenants.set(name, tenant);
    return tenant;
  }

  /** Closes the tenant's file, if open: its next request opens it again (under a new policy, say). */
  reopen(name: string): Promise<void> {
    return this.#close(name);
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.#lru.keys()].map((name) => this.#close(name)));
  }

  #evict(): void {
    if (this.#lru.size <= this.#maxOpen) return;
    for (const [name, entry] of this.#lru) {
      if (this.#lru.size <= this.#maxOpen) break;
      if (entry.busy === 0) void this.#close(name);
    }
  }

  /** Closes the tenant's open entry, if any; resolves once it and every close of the tenant before it are done. */
  #close(name: string): Promise<void> {
    const entry = this.#lru.get(name);
    const before = this.#closing.get(name);
    if (entry === undefined) return before ?? Promise.resolve();
    this.#lru.delete(name);
    const closing = Promise.all([before, entry.value.close()]).then(() => undefined);
    this.#closing.set(name, closing);
    void closing
      .finally(() => {
        if (this.#closing.get(name) === closing) this.#closing.delete(name);
      })
      .catch(() => undefined);
    return closing;
  }
}

/** The quotas a tenant's worker holds its file to from the moment it opens it (node/workers/tenant-worker.ts). */
const OPEN_QUOTAS: readonly (keyof Quotas)[] = ['maxBytes', 'maxRows', 'maxCollections'];

function tenantOf(name: string, quotas: Quotas): Tenant {
  return Object.freeze({
    name,
    quotas,
    bucket: new TokenBucket(quotas.rate, quotas.burst),
    cost: new CostBucket(quotas.costMs, Math.max(quotas.costMs, quotas.statementTimeoutMs)),
  });
}
