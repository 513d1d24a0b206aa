/**
 * The rows behind a vector index: one field's column read by id or scanned, and the batches of
 * floats an index is given.
 */
import type { Connection, Statement } from '../storage/sqlite.js';
import { ident } from '../storage/sqlite.js';
import { normaliseInto, vectorOf } from './distance.js';

export interface StoredVector {
  readonly rowId: number;
  readonly blob: Buffer;
}

/** Consecutive ids from which one range read serves them better than a read by id each. */
const RANGE_READ = 8;

/** One vector field's column in its table (VectorFieldSpec.table). Statements are prepared on first use. */
export class VectorRows {
  readonly #db: Connection;
  readonly #table: string;
  readonly #column: string;
  #byId: Statement | undefined;
  #all: Statement | undefined;
  #ids: Statement | undefined;
  #range: Statement | undefined;

  /** `table`: quoted, as VectorFieldSpec.table. */
  constructor(db: Connection, table: string, field: string) {
    this.#db = db;
    this.#table = table;
    this.#column = ident(field);
  }

  /** The row's stored vector, or null when the row is gone or the field is null. */
  blob(rowId: number): Buffer | null {
    this.#byId ??= this.#db.prepare(`SELECT ${this.#column} FROM ${this.#table} WHERE "id" = ?`).pluck();
    const value = this.#byId.get(rowId) as unknown;
    return Buffer.isBuffer(value) ? value : null;
  }

  /** The ids of the rows with a non-null vector, in id order. */
  ids(): number[] {
    this.#ids ??= this.#db
      .prepare(`SELECT "id" FROM ${this.#table} WHERE ${this.#column} IS NOT NULL ORDER BY "id"`)
      .pluck();
    return this.#ids.all() as number[];
  }

  /** Every row with a non-null vector, in id order. */
  scan(): IterableIterator<StoredVector> {
    this.#all ??= this.#db.prepare(
      `SELECT "id" AS rowId, ${this.#column} AS blob FROM ${this.#table} WHERE ${this.#column} IS NOT NULL ORDER BY "id"`,
    );
    return this.#all.iterate() as IterableIterator<StoredVector>;
  }

  /**
   * The stored vectors of the given rows that exist and are not null, in id order: a run of consecutive
   * ids (what a load commits) in one range read, where a read by id each cost 11 µs a row of the
   * thread that serves statements.
   */
  gather(rowIds: readonly number[]): StoredVector[] {
    const ids = [...rowIds].sort((a, b) => a - b);
    const found: StoredVector[] = [];
    for (let start = 0, end = 0; start < ids.length; start = end + 1) {
      end = start;
      while (end + 1 < ids.length && ids[end + 1] === ids[end]! + 1) end++;
      if (end - start + 1 >= RANGE_READ) {
        this.#range ??= this.#db.prepare(
          `SELECT "id" AS rowId, ${this.#column} AS blob FROM ${this.#table} WHERE "id" BETWEEN ? AND ? AND ${this.#column} IS NOT NULL ORDER BY "id"`,
        );
        for (const row of this.#range.iterate(ids[start], ids[end]) as IterableIterator<StoredVector>) found.push(row);
      } else {
        for (const stored of this.only(ids.slice(start, end + 1))) found.push(stored);
      }
    }
    return found;
  }

  /** The stored vectors of the given rows that exist and are not null (for an exact search over few rows). */
  *only(rowIds: Iterable<number>): IterableIterator<StoredVector> {
    for (const rowId of rowIds) {
      const blob = this.blob(rowId);
      if (blob !== null) yield { rowId, blob };
    }
  }
}

/** Vectors gathered for one add: n × dims floats (normalised for cosine) and their rows, grown by doubling. */
export class VectorBatch {
  readonly rowIds: number[] = [];
  readonly #dims: number;
  readonly #normalise: boolean;
  #data: Float32Array;

  constructor(dims: number, normalise: boolean) {
    this.#dims = dims;
    this.#normalise = normalise;
    this.#data = new Float32Array(dims * 64);
  }

  get count(): number {
    return this.rowIds.length;
  }

  /** Adds the row's vector; false (and nothing added) when the BLOB is not a vector of the field (see distance.ts). */
  push(rowId: number, blob: Uint8Array): boolean {
    const v = vectorOf(blob, this.#dims);
    if (v === null) return false;
    const at = this.rowIds.length * this.#dims;
    if (at + this.#dims > this.#data.length) {
      const data = new Float32Array(this.#data.length * 2);
      data.set(this.#data);
      this.#data = data;
    }
    if (this.#normalise) normaliseInto(v, this.#data, at);
    else this.#data.set(v, at);
    this.rowIds.push(rowId);
    return true;
  }

  /** The floats gathered (a view). */
  vectors(): Float32Array {
    return this.#data.subarray(0, this.rowIds.length * this.#dims);
  }
}
