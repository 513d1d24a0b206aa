/**
 * Tenants' snapshots in JetStream's object store: a copy of the file, page for page, as it stood at a sequence of
 * its log (the object's `seq`). Two are kept per tenant (`<tenant>.a`, `<tenant>.b`, the older replaced), and the
 * log is trimmed behind the older one: a tenant can be restored as of any point from the older snapshot on.
 */
import * as fs from 'node:fs';
import { Readable } from 'node:stream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Objm, type ObjectInfo, type ObjectStore } from '@nats-io/obj';
import { FenecError } from '../../shared/errors.js';

const BUCKET = 'fenec-snapshots';
const SLOTS = ['a', 'b'] as const;

export interface SnapshotInfo {
  readonly name: string;
  readonly seq: number;
  readonly time: Date;
}

export class Snapshots {
  readonly #store: ObjectStore;
  /** How long a read waits for the object's next chunk (the log's ack timeout). */
  readonly #stallMs: number;

  private constructor(store: ObjectStore, stallMs: number) {
    this.#store = store;
    this.#stallMs = stallMs;
  }

  static async open(nc: NatsConnection, replicas: number, stallMs: number): Promise<Snapshots> {
    const objm = new Objm(nc);
    let store: ObjectStore;
    try {
      store = await objm.open(BUCKET);
      await store.status();
    } catch {
      store = await objm.create(BUCKET, { replicas });
    }
    return new Snapshots(store, stallMs);
  }

  /** The tenant's snapshots, oldest first. */
  async list(tenant: string): Promise<SnapshotInfo[]> {
    const found: SnapshotInfo[] = [];
    for (const slot of SLOTS) {
      const info = await this.#store.info(`${tenant}.${slot}`);
      if (info !== null && !info.deleted) found.push(infoOf(info));
    }
    return found.sort((a, b) => a.seq - b.seq);
  }

  /**
   * Writes the tenant's latest snapshot at or before `upTo` (the latest of all by default) to `file`; resolves to
   * its sequence, or 0 with no file written when there is none. Rejects `log_unavailable` when no chunk comes for
   * `stallMs`: an object replaced while it is read (another node stored the tenant's next snapshot over it) has
   * its chunks purged, and the store's reader then waits for them for ever.
   */
  async fetch(tenant: string, file: string, upTo = Infinity): Promise<number> {
    const chosen = (await this.list(tenant)).filter((s) => s.seq <= upTo).pop();
    if (chosen === undefined) return 0;
    const result = await this.#store.get(chosen.name);
    if (result === null) return 0;
    const data = Readable.fromWeb(result.data as import('node:stream/web').ReadableStream<Uint8Array>);
    const stall = setTimeout(
      () =>
        data.destroy(
          new FenecError('log_unavailable', `no chunk of tenant ${tenant}'s snapshot came for ${this.#stallMs} ms`, {
            retryAfter: 1,
            hint: 'retry after Retry-After: the snapshot may have been replaced while it was read',
          }),
        ),
      this.#stallMs,
    );
    const out = fs.createWriteStream(file);
    try {
      for await (const chunk of data) {
        stall.refresh();
        out.write(chunk);
      }
    } finally {
      clearTimeout(stall);
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
    }
    const error = await result.error;
    if (error instanceof Error) throw error;
    return chosen.seq;
  }

  /** Stores `file` as the tenant's snapshot at `seq`, over its older one; resolves to the older kept one's sequence. */
  async store(tenant: string, file: string, seq: number): Promise<number> {
    const existing = await this.list(tenant);
    const slot =
      existing.length < SLOTS.length
        ? SLOTS.find((s) => !existing.some((e) => e.name.endsWith(`.${s}`)))!
        : existing[0]!.name.slice(-1);
    const stream = Readable.toWeb(fs.createReadStream(file)) as unknown as ReadableStream<Uint8Array>;
    await this.#store.put({ name: `${tenant}.${slot}`, metadata: { seq: String(seq) } }, stream);
    const kept = existing.filter((e) => !e.name.endsWith(`.${slot}`));
    return kept.length === 0 ? seq : Math.min(seq, ...kept.map((e) => e.seq));
  }

  /** Removes the tenant's snapshots (it was deleted). */
  async remove(tenant: string): Promise<void> {
    for (const slot of SLOTS) await this.#store.delete(`${tenant}.${slot}`).catch(() => undefined);
  }
}

function infoOf(info: ObjectInfo): SnapshotInfo {
  return { name: info.name, seq: Number(info.metadata?.seq ?? 0), time: new Date(info.mtime) };
}
