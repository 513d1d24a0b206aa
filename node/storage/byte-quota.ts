/**
 * A file's byte quota, as SQLite enforces it: `max_page_count`. A write that needs a page past the cap
 * fails whole with SQLITE_FULL (`storage_full`, 507), and nothing written before is lost.
 *
 * A file at its quota must still be able to free space, and freeing takes pages too: a `del` writes
 * its text index's tombstones (an FTS5 segment) and its vector log entries, and may split an index
 * page; `compact` merges the text index (a new segment as large as the old ones, before they are
 * freed) and VACUUM rewrites the file. So the cap depends on what runs:
 *
 * - `quota`: the quota itself. Inserts, puts, schema changes that add: whatever may grow the data.
 * - `freeing`: the quota plus a headroom kept for statements that remove or shrink rows (`del`, the
 *   TTL sweeper, `drop`, `alter … drop`, a `set` whose rows do not grow). Their bookkeeping pages come
 *   from the headroom when the file has no free page left; the pages their rows free are reused by
 *   every later write.
 * - `compact`: room for a copy of the file (twice its size), which compact needs at its peak and
 *   gives back: its result is never larger than the file it started from.
 *
 * SQLite never sets the cap below the file's current size, so a file that a freeing statement took
 * into its headroom refuses every write that needs a new page until it shrinks (compact).
 */
import type { Connection } from './sqlite.js';

export type Room = 'quota' | 'freeing' | 'compact';

/** The headroom: 1/64 of the quota, and at least this many bytes. */
const MIN_HEADROOM_BYTES = 256 * 1024;
const HEADROOM_SHARE = 64;

export class ByteQuota {
  readonly #db: Connection;
  /** The quota, in pages. */
  readonly quotaPages: number;
  /** Pages beyond the quota that only freeing statements may take. */
  readonly headroomPages: number;

  constructor(db: Connection, maxBytes: number) {
    this.#db = db;
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    this.quotaPages = Math.max(1, Math.floor(maxBytes / pageSize));
    this.headroomPages = Math.ceil(Math.max(MIN_HEADROOM_BYTES, maxBytes / HEADROOM_SHARE) / pageSize);
    this.#cap(this.quotaPages);
  }

  /** Runs `work` under the cap of its room, then holds the file to its quota again. */
  within<T>(room: Room, work: () => T): T {
    if (room === 'quota') return work();
    const pages = this.#db.pragma('page_count', { simple: true }) as number;
    this.#cap(
      room === 'freeing'
        ? this.quotaPages + this.headroomPages
        : 2 * Math.max(pages, this.quotaPages) + this.headroomPages,
    );
    try {
      return work();
    } finally {
      this.#cap(this.quotaPages);
    }
  }

  #cap(pages: number): void {
    this.#db.pragma(`max_page_count = ${pages}`);
  }
}

/** A write refused for want of a page under the cap (SQLite's error, before it becomes `storage_full`). */
export function isStorageFull(err: unknown): boolean {
  return (err as { code?: unknown }).code === 'SQLITE_FULL';
}
