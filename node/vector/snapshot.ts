/**
 * Snapshots of vector indexes in the file: the serialized index and its label map as of log seq S.
 * With the log entries after S, they give the index as the rows say without adding every vector
 * again.
 *
 * The parts of a snapshot live in one of two slots of part numbers (0, 1, … or SLOT_BASE, …); the
 * head row (`parts`: positive for slot 0, negative for slot 1) names the slot that holds the stored
 * snapshot. A new snapshot is written into the other slot, part by part — each part its own short
 * write, so that storing an index of hundreds of megabytes never holds the thread for long — and
 * then the head is switched and the log entries it covers are trimmed, in one transaction. A crash
 * before the switch leaves the old snapshot and its log, with stray parts in the other slot that the
 * next snapshot clears; after it, the new one. Files written before slots hold slot 0.
 */
import type { Connection } from '../storage/sqlite.js';
import { LOG_TABLE, SNAPSHOT_PART_TABLE, SNAPSHOT_TABLE } from './vector-log.js';

/**
 * Bytes per part: one part is one insert of a BLOB, a few milliseconds (well under SQLite's 1 GB
 * limit, and no giant single read).
 */
export const PART_BYTES = 512 * 1024;
/** The first part number of slot 1. */
const SLOT_BASE = 1 << 30;
/** Parts deleted per statement when a slot is cleared in steps. */
const DELETE_STEP = 8;

export interface StoredSnapshot {
  readonly seq: number;
  /** The serialized index, its parts joined (short or long when parts are missing: deserialize refuses it). */
  readonly index: Buffer;
  readonly labels: Buffer;
}

interface Head {
  readonly seq: number;
  readonly parts: number;
  readonly labels: Buffer;
}

function readHead(db: Connection, collection: string, field: string): Head | undefined {
  return db
    .prepare(`SELECT seq, parts, labels FROM ${SNAPSHOT_TABLE} WHERE collection = ? AND field = ?`)
    .get(collection, field) as Head | undefined;
}

/** The first part number and the count of the parts a head names. */
function partsOf(head: Head | undefined): { base: number; count: number; slot: 0 | 1 } {
  if (head === undefined) return { base: 0, count: 0, slot: 1 };
  return head.parts < 0 ? { base: SLOT_BASE, count: -head.parts, slot: 1 } : { base: 0, count: head.parts, slot: 0 };
}

/** The field's snapshot, or undefined when it has none (or the file has no snapshot table). */
export function readSnapshot(db: Connection, collection: string, field: string): StoredSnapshot | undefined {
  const head = readHead(db, collection, field);
  if (head === undefined) return undefined;
  const { base, count } = partsOf(head);
  const parts = db
    .prepare(
      `SELECT bytes FROM ${SNAPSHOT_PART_TABLE} WHERE collection = ? AND field = ? AND part >= ? AND part < ? ORDER BY part`,
    )
    .pluck()
    .all(collection, field, base, base + count) as Buffer[];
  return { seq: head.seq, index: parts.length === 1 ? parts[0]! : Buffer.concat(parts), labels: head.labels };
}

/** What a snapshot is written from. */
export interface SnapshotData {
  readonly collection: string;
  readonly field: string;
  readonly seq: number;
  readonly index: Buffer;
  readonly labels: Buffer;
  /** Log entries up to this seq (≤ seq) are deleted with the switch. */
  readonly trimTo: number;
}

/** The steps of writing a snapshot, each a short write; the caller runs them at once or one per turn. */
function* steps(db: Connection, data: SnapshotData): Generator<void, void, void> {
  const { collection, field } = data;
  const old = partsOf(readHead(db, collection, field));
  const slot = old.slot === 0 ? 1 : 0;
  const base = slot === 0 ? 0 : SLOT_BASE;
  yield* clearSlot(db, collection, field, base);
  const count = Math.max(1, Math.ceil(data.index.length / PART_BYTES));
  const insert = db.prepare(`INSERT INTO ${SNAPSHOT_PART_TABLE} (collection, field, part, bytes) VALUES (?, ?, ?, ?)`);
  for (let part = 0; part < count; part++) {
    insert.run(collection, field, base + part, data.index.subarray(part * PART_BYTES, (part + 1) * PART_BYTES));
    yield;
  }
  db.transaction(() => {
    db.prepare(
      `INSERT INTO ${SNAPSHOT_TABLE} (collection, field, seq, parts, labels) VALUES (?, ?, ?, ?, ?) ` +
        'ON CONFLICT (collection, field) DO UPDATE SET seq = excluded.seq, parts = excluded.parts, labels = excluded.labels',
    ).run(collection, field, data.seq, slot === 0 ? count : -count, data.labels);
    db.prepare(`DELETE FROM ${LOG_TABLE} WHERE collection = ? AND field = ? AND seq <= ?`).run(
      collection,
      field,
      data.trimTo,
    );
  })();
  yield;
  yield* clearSlot(db, collection, field, old.slot === 0 ? 0 : SLOT_BASE);
}

/** Deletes a slot's parts a few at a time. */
function* clearSlot(db: Connection, collection: string, field: string, base: number): Generator<void, void, void> {
  const step = db.prepare(
    `DELETE FROM ${SNAPSHOT_PART_TABLE} WHERE rowid IN (SELECT rowid FROM ${SNAPSHOT_PART_TABLE} WHERE collection = ? AND field = ? AND part >= ? AND part < ? LIMIT ${DELETE_STEP})`,
  );
  while (step.run(collection, field, base, base + SLOT_BASE).changes > 0) yield;
}

/**
 * Replaces the field's snapshot with one as of `seq`, and deletes its log entries up to `trimTo`,
 * all at once (at close, or for a small index). The caller holds no transaction.
 */
export function writeSnapshot(db: Connection, data: SnapshotData): void {
  for (const _ of steps(db, data));
}

/**
 * writeSnapshot one part per turn of the event loop. `going()` is asked before each step: when it
 * answers false (the store closed, the field dropped) the writing stops, leaving the stored snapshot
 * as it was (stray parts are cleared by the next). Resolves true once the new snapshot is stored.
 */
export async function writeSnapshotInParts(db: Connection, data: SnapshotData, going: () => boolean): Promise<boolean> {
  const run = steps(db, data);
  for (;;) {
    if (!going() || !db.open) return false;
    // A statement's transaction is its own: a part never joins one a statement holds open.
    if (db.inTransaction) {
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    if (run.next().done === true) return true;
    await new Promise((resolve) => setImmediate(resolve));
  }
}
