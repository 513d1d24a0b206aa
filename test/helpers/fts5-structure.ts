/**
 * The shape of an FTS5 index, read from its structure record (row 10 of `<table>_data`; SQLite's
 * fts5StructureDecode): how many levels and segments a query over it reads.
 */
import type { Connection } from '../../node/storage/sqlite.js';

export interface Fts5Structure {
  readonly levels: number;
  readonly segments: number;
}

/** `dataTable` is the quoted name of the index's `_data` shadow table (`"t.notes.fts_data"`). */
export function fts5Structure(db: Connection, dataTable: string): Fts5Structure {
  const record = db.prepare(`SELECT block FROM ${dataTable} WHERE id = 10`).pluck().get() as Buffer;
  // A 4-byte cookie, then (FTS5_STRUCTURE_V2) a 4-byte marker, then the counts as varints.
  let at = record.subarray(4, 8).equals(Buffer.from([0xff, 0, 0, 1])) ? 8 : 4;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = record[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
    }
  };
  const levels = varint();
  return { levels, segments: varint() };
}
