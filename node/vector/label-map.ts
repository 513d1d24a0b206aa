/**
 * The label → row-id map of one vector index, and its tombstones.
 *
 * Faiss hands out labels 0 … ntotal-1 in the order vectors are added and never takes one back. A
 * row's vector changing or going away leaves its old label in the index as a tombstone: dead here,
 * so that no search may return it (the `allow` bitmap), until a rebuild drops them all. A label is
 * live, dead, or pending (added by an addAsync still running: not yet searchable, not yet dead).
 */
import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';

const MAGIC = 'FNCLABEL';
const FORMAT = 1;
/** magic, format, crc32 of what follows, shape length. */
const HEADER = 20;

export class LabelMap {
  /** Label → row id; -1 while the label is dead. */
  #rows = new Float64Array(1024);
  /** Bit l (least significant first) of byte l >> 3: label l is live. */
  #live = new Uint8Array(128);
  /** Row id → its live label. */
  readonly #byRow = new Map<number, number>();
  /** Row id → its pending label (an add still running), until activated or tombstoned. */
  readonly #pendingByRow = new Map<number, number>();
  #size = 0;
  #pending = 0;

  /** Labels handed out: the index's ntotal. */
  get size(): number {
    return this.#size;
  }

  get liveCount(): number {
    return this.#byRow.size;
  }

  /** Tombstones: labels whose row has another vector, none, or is gone. */
  get deadCount(): number {
    return this.#size - this.#byRow.size - this.#pending;
  }

  labelOf(rowId: number): number | undefined {
    return this.#byRow.get(rowId);
  }

  /** The row a label stands for (-1 when dead); only live labels are ever returned by a search. */
  rowOf(label: number): number {
    return label >= 0 && label < this.#size ? this.#rows[label]! : -1;
  }

  isLive(label: number): boolean {
    return label >= 0 && label < this.#size && (this.#live[label >> 3]! & (1 << (label & 7))) !== 0;
  }

  /** The next label, for a vector of rowId that the index is about to add; live unless `pending`. */
  append(rowId: number, pending = false): number {
    assert(!this.#byRow.has(rowId) && !this.#pendingByRow.has(rowId), `row ${rowId} has a label already`);
    const label = this.#size;
    this.#grow(label + 1);
    this.#rows[label] = rowId;
    this.#size++;
    if (pending) {
      this.#pending++;
      this.#pendingByRow.set(rowId, label);
    } else {
      this.#setLive(label, rowId);
    }
    return label;
  }

  /** Makes pending labels [from, to) live: the index holds their vectors. One tombstoned meanwhile becomes dead. */
  activate(from: number, to: number): void {
    for (let label = from; label < to; label++) {
      const rowId = this.#rows[label]!;
      this.#pending--;
      if (rowId === -1) continue;
      this.#pendingByRow.delete(rowId);
      this.#setLive(label, rowId);
    }
    assert(this.#pending >= 0, 'activated more labels than were pending');
  }

  /** Kills the row's live (or pending) label, if it has one; true when it had a live one. */
  tombstone(rowId: number): boolean {
    const pending = this.#pendingByRow.get(rowId);
    if (pending !== undefined) {
      // Counted as pending until its add ends; then dead.
      this.#pendingByRow.delete(rowId);
      this.#rows[pending] = -1;
      return false;
    }
    const label = this.#byRow.get(rowId);
    if (label === undefined) return false;
    this.#byRow.delete(rowId);
    this.#rows[label] = -1;
    this.#live[label >> 3]! &= ~(1 << (label & 7));
    return true;
  }

  /** The live labels as a search's `allow` bitmap (a view: copy it before keeping it). */
  liveBitmap(): Uint8Array {
    return this.#live.subarray(0, (this.#size + 7) >> 3);
  }

  /** A bitmap of the live labels of the given rows (rows without a live label are left out), and how many. */
  bitmapOf(rowIds: Iterable<number>): { bits: Uint8Array; count: number } {
    const bits = new Uint8Array((this.#size + 7) >> 3);
    let count = 0;
    for (const rowId of rowIds) {
      const label = this.#byRow.get(rowId);
      if (label === undefined) continue;
      const mask = 1 << (label & 7);
      if ((bits[label >> 3]! & mask) === 0) count++;
      bits[label >> 3]! |= mask;
    }
    return { bits, count };
  }

  /** The map as bytes for a snapshot, with `shape` (what index it belongs to) and a checksum. No label may be pending. */
  encode(shape: string): Buffer {
    assert(this.#pending === 0, 'a label map with pending labels is not a snapshot');
    const shapeBytes = Buffer.from(shape, 'utf8');
    const out = Buffer.alloc(HEADER + shapeBytes.length + 4 + this.#size * 8);
    out.write(MAGIC, 0, 'latin1');
    out.writeUInt32LE(FORMAT, 8);
    out.writeUInt32LE(shapeBytes.length, 16);
    shapeBytes.copy(out, HEADER);
    let at = HEADER + shapeBytes.length;
    out.writeUInt32LE(this.#size, at);
    at += 4;
    for (let label = 0; label < this.#size; label++, at += 8) out.writeDoubleLE(this.isLive(label) ? this.#rows[label]! : -1, at);
    out.writeUInt32LE(crc32(out.subarray(16)), 12);
    return out;
  }

  /**
   * A map from encode()'s bytes, or null when they are damaged, belong to another shape, or do not
   * hold exactly `size` labels (the index they go with).
   */
  static decode(bytes: Uint8Array, shape: string, size: number): LabelMap | null {
    const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
    if (b.length < HEADER + 4 || b.toString('latin1', 0, 8) !== MAGIC || b.readUInt32LE(8) !== FORMAT) return null;
    if (b.readUInt32LE(12) !== crc32(b.subarray(16))) return null;
    const shapeLength = b.readUInt32LE(16);
    if (HEADER + shapeLength + 4 > b.length || b.toString('utf8', HEADER, HEADER + shapeLength) !== shape) return null;
    let at = HEADER + shapeLength;
    const count = b.readUInt32LE(at);
    at += 4;
    if (count !== size || b.length !== at + count * 8) return null;
    const map = new LabelMap();
    map.#grow(count);
    map.#size = count;
    for (let label = 0; label < count; label++, at += 8) {
      const rowId = b.readDoubleLE(at);
      if (rowId === -1) {
        map.#rows[label] = -1;
        continue;
      }
      if (!Number.isSafeInteger(rowId) || map.#byRow.has(rowId)) return null;
      map.#rows[label] = rowId;
      map.#setLive(label, rowId);
    }
    return map;
  }

  #setLive(label: number, rowId: number): void {
    assert(!this.#byRow.has(rowId), `row ${rowId} has a live label already`);
    this.#byRow.set(rowId, label);
    this.#live[label >> 3]! |= 1 << (label & 7);
  }

  /** Room for `labels` labels, by doubling. */
  #grow(labels: number): void {
    if (labels <= this.#rows.length) return;
    let capacity = this.#rows.length;
    while (capacity < labels) capacity *= 2;
    const rows = new Float64Array(capacity);
    rows.set(this.#rows.subarray(0, this.#size));
    this.#rows = rows;
    const live = new Uint8Array(capacity >> 3);
    live.set(this.#live);
    this.#live = live;
  }
}
