/**
 * Snapshots of vector indexes in the file: the serialized index and its label map as of log seq S.
 * With the log entries after S, they give the index as the rows say without adding every vector
 * again. A snapshot is written in one transaction with the trimming of the log entries it covers,
 * so a crash leaves either the old snapshot and its log, or the new one and its log.
 */
import type { Connection } from '../storage/sqlite.js';
import { LOG_TABLE, SNAPSHOT_PART_TABLE, SNAPSHOT_TABLE } from './vector-log.js';

/** Bytes per part: well under SQLite's 1 GB BLOB limit, and no giant single read. */
export const PART_BYTES = 64 * 1024 * 1024;

export interface StoredSnapshot {
  readonly seq: number;
  /** The serialized index, its parts joined (short or long when parts are missing: deserialize refuses it). */
  readonly index: Buffer;
  readonly labels: Buffer;
}

/** The field's snapshot, or undefined when it has none (or the file has no snapshot table). */
export function readSnapshot(db: Connection, collection: string, field: string): StoredSnapshot | undefined {
  const head = db.prepare(`SELECT seq, parts, labels FROM ${SNAPSHOT_TABLE} WHERE collection = ? AND field = ?`).get(collection, field) as
    | { seq: number; parts: number; labels: Buffer }
    | undefined;
  if (head === undefined) return undefined;
  const parts = db.prepare(`SELECT bytes FROM ${SNAPSHOT_PART_TABLE} WHERE collection = ? AND field = ? AND part < ? ORDER BY part`).pluck().all(collection, field, head.parts) as Buffer[];
  return { seq: head.seq, index: parts.length === 1 ? parts[0]! : Buffer.concat(parts), labels: head.labels };
}

/**
 * Replaces the field's snapshot with one as of `seq`, and deletes its log entries up to `trimTo`
 * (≤ seq: entries after a running rebuild's start are kept for it). The caller holds no transaction.
 */
export function writeSnapshot(db: Connection, collection: string, field: string, seq: number, index: Buffer, labels: Buffer, trimTo: number): void {
  const parts = Math.max(1, Math.ceil(index.length / PART_BYTES));
  db.transaction(() => {
    db.prepare(`DELETE FROM ${SNAPSHOT_PART_TABLE} WHERE collection = ? AND field = ?`).run(collection, field);
    const insert = db.prepare(`INSERT INTO ${SNAPSHOT_PART_TABLE} (collection, field, part, bytes) VALUES (?, ?, ?, ?)`);
    for (let part = 0; part < parts; part++) insert.run(collection, field, part, index.subarray(part * PART_BYTES, (part + 1) * PART_BYTES));
    db.prepare(
      `INSERT INTO ${SNAPSHOT_TABLE} (collection, field, seq, parts, labels) VALUES (?, ?, ?, ?, ?) ` +
        'ON CONFLICT (collection, field) DO UPDATE SET seq = excluded.seq, parts = excluded.parts, labels = excluded.labels',
    ).run(collection, field, seq, parts, labels);
    db.prepare(`DELETE FROM ${LOG_TABLE} WHERE collection = ? AND field = ? AND seq <= ?`).run(collection, field, trimTo);
  })();
}
