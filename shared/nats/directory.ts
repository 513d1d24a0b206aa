/**
 * Where replicated tenants live and which nodes are alive, in two JetStream key-value buckets that every node and
 * router with `--nats` watches (no polling):
 *
 * - `fenec-tenants`: a key per tenant — its quotas, its own policy's text, and its owner, the one node that serves
 *   it. An entry is changed only by compare-and-set on its revision, so two nodes that both try to take a tenant
 *   cannot both succeed.
 * - `fenec-nodes`: a key per node, put again every third of its lease. A node whose key was not put for a lease
 *   is dead to whoever watches; its tenants are taken by the live nodes, each by rendezvous over them.
 *
 * A watcher that hears no renewal at all for a lease (its own connection is cut, or every node is gone) has
 * learnt nothing of the nodes: its view is stale, not a sign that they all died (a node is counted dead only while
 * others are heard). It keeps the view it had, owners
 * and live nodes alike (a router goes on routing by it, and the nodes refuse what is no longer theirs), and once
 * it hears again each node gets a lease from then to be heard in.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import { rendezvous } from '../rendezvous.js';

const TENANTS = 'fenec-tenants';
const NODES = 'fenec-nodes';

export interface TenantEntry {
  /** The quotas as PUT /t/<tenant> set them (a node fills in its defaults). */
  readonly quotas: unknown;
  /** The tenant's own policy (the text of D/<tenant>.policy), or null for the node's. */
  readonly policy: string | null;
  /** The node that serves it, or null: none yet (the live nodes' rendezvous picks one). */
  readonly owner: string | null;
}

export interface Held {
  readonly entry: TenantEntry;
  readonly revision: number;
}

/** What a watcher is told: a tenant's entry changed (undefined: deleted), or the live nodes changed. */
export interface DirectoryListener {
  tenant?(tenant: string, held: Held | undefined): void;
  nodes?(live: ReadonlySet<string>, lapsed: readonly string[]): void;
  /** The view went stale (`since`: when a renewal was last heard), or is fresh again (undefined). */
  stale?(since: Date | undefined): void;
}

/** A node's lease (`Directory.hold`). */
export interface Lease {
  /** Whether the node may serve its tenants now: its lease holds, and did not lapse within the last lease. */
  holds(): boolean;
  /** Stops renewing it and deletes its key: the node's tenants are taken at once. */
  release(): Promise<void>;
}

export class Directory {
  readonly #tenants: KV;
  readonly #nodes: KV;
  readonly #held = new Map<string, Held>();
  /** Each node's last renewal, by this process's clock, and the lease it said it holds. */
  readonly #seen = new Map<string, { at: number; readonly leaseMs: number }>();
  readonly #live = new Set<string>();
  readonly #listeners: DirectoryListener[] = [];
  readonly #stops: (() => void)[] = [];
  /** When a node's renewal (or removal) was last heard, by this process's clock. */
  #heardAt = Date.now();
  #stale = false;

  private constructor(tenants: KV, nodes: KV) {
    this.#tenants = tenants;
    this.#nodes = nodes;
  }

  /**
   * Opens both buckets and reads them; then follows them. A node makes them when missing, with `replicas` copies; a
   * router (`replicas` undefined) waits until a node has made them.
   */
  static async open(nc: NatsConnection, replicas: number | undefined): Promise<Directory> {
    const kvm = new Kvm(nc);
    const bucket = async (name: string, ttl: number | undefined): Promise<KV> => {
      if (replicas !== undefined)
        return kvm.create(name, { replicas, history: 1, ...(ttl === undefined ? {} : { ttl }) });
      for (;;) {
        try {
          const kv = await kvm.open(name);
          await kv.status();
          return kv;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 1000));
        }
      }
    };
    const tenants = await bucket(TENANTS, undefined);
    const nodes = await bucket(NODES, 60 * 60_000);
    const directory = new Directory(tenants, nodes);
    await directory.#follow();
    return directory;
  }

  listen(listener: DirectoryListener): void {
    this.#listeners.push(listener);
  }

  get(tenant: string): Held | undefined {
    return this.#held.get(tenant);
  }

  tenants(): ReadonlyMap<string, Held> {
    return this.#held;
  }

  get live(): ReadonlySet<string> {
    return this.#live;
  }

  /** When a renewal was last heard, while none was for a lease (the view is stale); undefined while it is fresh. */
  get staleSince(): Date | undefined {
    return this.#stale ? new Date(this.#heardAt) : undefined;
  }

  /** The node that serves the tenant: its owner while that one is live, else the live nodes' rendezvous. */
  placed(tenant: string, among: Iterable<string> = this.#live): string | undefined {
    const owner = this.#held.get(tenant)?.entry.owner;
    if (owner !== null && owner !== undefined && this.#live.has(owner)) return owner;
    return rendezvous(
      tenant,
      [...among].filter((name) => this.#live.has(name)),
      (name) => name,
    );
  }

  /**
   * Changes a tenant's entry by compare-and-set: `change` is given the entry as it stands (undefined: none) and
   * returns the new one (undefined: leave it); retried on a conflict. Resolves to the entry written, or undefined.
   */
  async update(tenant: string, change: (held: Held | undefined) => TenantEntry | undefined): Promise<Held | undefined> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const current = await this.#tenants.get(tenant);
      const held =
        current === null || current.operation !== 'PUT' ? undefined : heldOf(current.json(), current.revision);
      // What was read is at least as new as what the watch gave: taken now (a node back from a partition).
      if (held !== undefined) this.#take(tenant, held);
      const next = change(held);
      if (next === undefined) return undefined;
      const bytes = new TextEncoder().encode(JSON.stringify(next));
      try {
        const revision =
          current === null
            ? await this.#tenants.create(tenant, bytes)
            : await this.#tenants.update(tenant, bytes, current.revision);
        const written = heldOf(next, revision);
        this.#take(tenant, written);
        return written;
      } catch (err) {
        if (!/wrong last sequence|key exists/i.test(String(err))) throw err;
      }
    }
    throw new Error(`the entry of tenant ${tenant} kept changing under 20 compare-and-sets`);
  }

  async remove(tenant: string): Promise<void> {
    await this.#tenants.delete(tenant);
  }

  /**
   * Holds `node`'s lease: put now and every third of `leaseMs`, until it is released. `lapsed` is called when no
   * renewal was acked for a lease (the node is cut off from the cluster, or paused): the others count it dead.
   */
  async hold(node: string, leaseMs: number, lapsed: () => void): Promise<Lease> {
    const value = new TextEncoder().encode(JSON.stringify({ leaseMs }));
    // Counted from when each renewal was sent, not acked: the others saw it no earlier, so this node's lease ends
    // no later than it does for any of them.
    let until = 0;
    let held = false;
    let resumeAt = 0;
    const renew = async (): Promise<void> => {
      const sentAt = Date.now();
      await this.#nodes.put(node, value);
      until = Math.max(until, sentAt + leaseMs);
      const now = Date.now();
      if (!held && until > now) {
        // Back after a lapse: another lease first, for the renewals of the others (and the tenants they took
        // meanwhile) to reach this node's view of the directory before it serves again.
        resumeAt = resumeAt === 0 ? now : now + leaseMs; // (0: the first renewal, served at once)
        held = true;
      }
    };
    await renew();
    const renewals = setInterval(() => void renew().catch(() => undefined), Math.max(50, Math.floor(leaseMs / 3)));
    const check = setInterval(
      () => {
        if (held && Date.now() >= until) {
          held = false;
          lapsed();
        }
      },
      Math.max(10, Math.min(100, Math.floor(leaseMs / 10))),
    );
    check.unref();
    return {
      holds: () => {
        const now = Date.now();
        return held && now < until && now >= resumeAt;
      },
      release: async () => {
        clearInterval(renewals);
        clearInterval(check);
        await this.#nodes.delete(node).catch(() => undefined);
      },
    };
  }

  close(): void {
    for (const stop of this.#stops.splice(0)) stop();
  }

  async #follow(): Promise<void> {
    await Promise.all([
      this.#watch(this.#tenants, (entry) => {
        this.#take(entry.key, entry.operation === 'PUT' ? heldOf(entry.json(), entry.revision) : undefined);
      }),
      this.#watch(this.#nodes, (entry) => {
        this.#heard();
        if (entry.operation === 'PUT') {
          const { leaseMs } = entry.json<{ leaseMs: number }>();
          // The entry's time only for values from before this process started: later ones count from now.
          const at = entry.isUpdate ? Date.now() : entry.created.getTime();
          this.#seen.set(entry.key, { at, leaseMs });
        } else this.#seen.delete(entry.key);
        this.#checkLeases();
      }),
    ]);
    // Leases lapse by the clock, not by a message: look again at the soonest lapse.
    const timer = setInterval(() => this.#checkLeases(), 100);
    timer.unref();
    this.#stops.push(() => clearInterval(timer));
  }

  /** Follows a bucket; resolves once its values at the start were taken. */
  async #watch(kv: KV, take: (entry: KvWatchEntry) => void): Promise<void> {
    const pending = (await kv.status()).values;
    const watcher = await kv.watch();
    this.#stops.push(() => watcher.stop());
    let initial!: () => void;
    const loaded = new Promise<void>((resolve) => (initial = resolve));
    if (pending === 0) initial();
    void (async () => {
      for await (const entry of watcher) {
        take(entry);
        if (!entry.isUpdate && (entry.delta ?? 0) === 0) initial();
        else if (entry.isUpdate) initial();
      }
    })();
    await loaded;
  }

  #take(tenant: string, held: Held | undefined): void {
    const before = this.#held.get(tenant);
    if (held !== undefined && before !== undefined && before.revision >= held.revision) return;
    if (held === undefined) this.#held.delete(tenant);
    else this.#held.set(tenant, held);
    for (const listener of this.#listeners) listener.tenant?.(tenant, held);
  }

  /** A message from the nodes' bucket: a stale view is fresh again, each node live in it given a lease from now. */
  #heard(): void {
    const now = Date.now();
    this.#heardAt = now;
    if (!this.#stale) return;
    this.#stale = false;
    for (const [node, seen] of this.#seen) if (this.#live.has(node)) seen.at = Math.max(seen.at, now);
    for (const listener of this.#listeners) listener.stale?.(undefined);
  }

  #checkLeases(): void {
    const now = Date.now();
    if (this.#seen.size > 0 && !this.#stale) {
      const longest = Math.max(...[...this.#seen.values()].map((seen) => seen.leaseMs));
      if (now - this.#heardAt >= longest) {
        this.#stale = true;
        for (const listener of this.#listeners) listener.stale?.(new Date(this.#heardAt));
      }
    }
    // Nothing heard: nothing learnt of the nodes, none counted dead.
    if (this.#stale) return;
    const lapsed: string[] = [];
    let changed = false;
    for (const [node, { at, leaseMs }] of this.#seen) {
      const alive = now - at < leaseMs;
      if (alive && !this.#live.has(node)) {
        this.#live.add(node);
        changed = true;
      }
      // Dead only while the others are heard (within half its lease): a cut begins as silence from every node, and
      // the first to fall silent is not taken for dead in the moment before the silence counts as stale.
      if (!alive && this.#live.has(node) && now - this.#heardAt < leaseMs / 2) {
        this.#live.delete(node);
        lapsed.push(node);
        changed = true;
      }
    }
    for (const node of this.#live) {
      if (!this.#seen.has(node)) {
        this.#live.delete(node);
        lapsed.push(node);
        changed = true;
      }
    }
    if (changed) for (const listener of this.#listeners) listener.nodes?.(this.#live, lapsed);
  }
}

function heldOf(value: unknown, revision: number): Held {
  const entry = value as Partial<TenantEntry>;
  return {
    entry: Object.freeze({ quotas: entry.quotas ?? {}, policy: entry.policy ?? null, owner: entry.owner ?? null }),
    revision,
  };
}
