/**
 * A warm standby (`--standby`): this node keeps a copy of each tenant it would take if the tenant's owner's lease
 * lapsed — rendezvous's choice among the other live nodes, the one failover picks — caught up from the log as the
 * owner writes it, so that taking the tenant applies the few changes since its last catch-up, not the whole
 * snapshot (whose download grows with the tenant).
 *
 * The owner's appends reach this node as plain NATS messages on the tenant's subject: only a signal that the log
 * grew (one the stream refused comes too), never read as a change. Each catch-up reads the stream itself, at most
 * one at a time and one each CATCH_UP_MS for a tenant, however fast it is written.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Directory } from '../../shared/nats/directory.js';
import type { Logger } from '../../shared/logger.js';
import { rendezvous } from '../../shared/rendezvous.js';
import { logSubject } from './log.js';
import type { Replicas } from './replicas.js';

/** The shortest time between two catch-ups of one tenant's copy. */
const CATCH_UP_MS = 200;
/** Tenants looked at in one turn of the event loop when the live nodes change. */
const UPDATE_BATCH = 500;

interface Follow {
  readonly subscription: Subscription;
  /** A catch-up is due after the one under way (the log grew meanwhile). */
  again: boolean;
  running: boolean;
  timer: NodeJS.Timeout | undefined;
}

export class Standby {
  readonly #node: string;
  readonly #nc: NatsConnection;
  readonly #directory: Directory;
  readonly #replicas: Replicas;
  readonly #logger: Logger;
  readonly #followed = new Map<string, Follow>();
  #pass = 0;

  constructor(node: string, nc: NatsConnection, directory: Directory, replicas: Replicas, logger: Logger) {
    this.#node = node;
    this.#nc = nc;
    this.#directory = directory;
    this.#replicas = replicas;
    this.#logger = logger;
  }

  /** Follows the tenant if this node would take it now, else stops following it (its entry changed). */
  update(tenant: string): void {
    if (this.#wanted(tenant)) {
      if (!this.#followed.has(tenant)) this.#follow(tenant);
    } else this.#stop(tenant);
  }

  /**
   * Every tenant looked at again (the live nodes changed), UPDATE_BATCH a turn: with many tenants, one pass of
   * rendezvous over all of them would hold the serving thread for tens of milliseconds. A newer pass ends an older.
   */
  async updateAll(): Promise<void> {
    const pass = ++this.#pass;
    let n = 0;
    for (const tenant of [...this.#directory.tenants().keys()]) {
      if (this.#pass !== pass) return;
      this.update(tenant);
      if (++n % UPDATE_BATCH === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Whether this node is the one that would take the tenant if its live owner's lease lapsed. */
  #wanted(tenant: string): boolean {
    const live = this.#directory.live;
    const owner = this.#directory.get(tenant)?.entry.owner;
    if (!live.has(this.#node) || owner === null || owner === undefined || owner === this.#node || !live.has(owner))
      return false;
    return (
      rendezvous(
        tenant,
        [...live].filter((name) => name !== owner),
        (name) => name,
      ) === this.#node
    );
  }

  close(): void {
    this.#pass += 1;
    for (const tenant of [...this.#followed.keys()]) this.#stop(tenant);
  }

  #follow(tenant: string): void {
    const subscription = this.#nc.subscribe(logSubject(tenant), { callback: () => this.#due(tenant) });
    this.#followed.set(tenant, { subscription, again: false, running: false, timer: undefined });
    this.#due(tenant);
  }

  #stop(tenant: string): void {
    const follow = this.#followed.get(tenant);
    if (follow === undefined) return;
    follow.subscription.unsubscribe();
    clearTimeout(follow.timer);
    this.#followed.delete(tenant);
  }

  #due(tenant: string): void {
    const follow = this.#followed.get(tenant);
    if (follow === undefined) return;
    if (follow.running || follow.timer !== undefined) {
      follow.again = true;
      return;
    }
    follow.running = true;
    follow.again = false;
    const started = Date.now();
    this.#replicas
      .warm(tenant)
      .catch((err: unknown) =>
        this.#logger.warn({ tenant, err }, "a standby copy's catch-up failed; tried again at the next change"),
      )
      .finally(() => {
        follow.running = false;
        if (!follow.again || this.#followed.get(tenant) !== follow) return;
        follow.timer = setTimeout(
          () => {
            follow.timer = undefined;
            this.#due(tenant);
          },
          Math.max(0, CATCH_UP_MS - (Date.now() - started)),
        );
      });
  }
}
