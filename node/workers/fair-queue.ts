/**
 * Work of many tenants taken in turns: one item of each tenant that has any, round and round, so
 * that a request waits for at most one item of each other tenant, however many they queued.
 */
export class FairQueue<T> {
  /** Tenants with work, in their turn's order (a Map keeps insertion order; a served tenant goes last). */
  readonly #queues = new Map<string, T[]>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(tenant: string, item: T): void {
    const queue = this.#queues.get(tenant);
    if (queue === undefined) this.#queues.set(tenant, [item]);
    else queue.push(item);
    this.#size += 1;
  }

  /** The next tenant's oldest item. */
  shift(): T | undefined {
    const next = this.#queues.entries().next();
    if (next.done === true) return undefined;
    const [tenant, queue] = next.value;
    const item = queue.shift()!;
    this.#queues.delete(tenant);
    if (queue.length > 0) this.#queues.set(tenant, queue);
    this.#size -= 1;
    return item;
  }
}
