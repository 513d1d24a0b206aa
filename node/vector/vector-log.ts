/**
 * The vector log: which rows' vectors may have changed, written by triggers in the writing
 * statement's own transaction, read by the vector store to bring its indexes in step.
 *
 * `_fenec_vector_log(seq, collection, field, row_id)`: one entry per row whose vector of an `@hnsw`
 * field was set, changed, cleared or deleted. An entry says only "look at this row again"; the store
 * reads the row as it is now, so replaying an entry twice, or late, or after a crash, does no harm.
 * `seq` is AUTOINCREMENT: never handed out twice, even after entries are deleted, so "entries after
 * seq S" means the same thing before and after a snapshot trims the log.
 *
 * Each `@hnsw` field F of a collection `notes` has three triggers on its table `c_notes.F`
 * (catalog.ts), `v.notes.F.insert`, `v.notes.F.update` and `v.notes.F.delete` (a '.' cannot occur in
 * a FenecQL name: no clash with a collection's table or another index's names). A row deleted from
 * `c_notes` takes its vector's row with it (the catalogue's trigger), which the delete trigger logs.
 * The update trigger watches `id` too, so that a row whose id changes is looked at under both ids.
 *
 * Writes must not use INSERT OR REPLACE: its implicit delete fires no trigger (unless
 * recursive_triggers is on), and a row it replaces would stay in the index. put's ON CONFLICT DO
 * UPDATE is right.
 */
import type { Connection, Statement } from '../storage/sqlite.js';
import { ident } from '../storage/sqlite.js';

export const LOG_TABLE = '_fenec_vector_log';
export const SNAPSHOT_TABLE = '_fenec_vector_index';
export const SNAPSHOT_PART_TABLE = '_fenec_vector_index_part';

/**
 * The store's tables, each IF NOT EXISTS. A snapshot is one row of `_fenec_vector_index` (log seq,
 * label map) and its serialized index in parts of `_fenec_vector_index_part`: SQLite refuses a BLOB
 * over 1 GB, which an index of a million 384-dim vectors passes.
 */
export const VECTOR_TABLES_SQL: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS ${LOG_TABLE} (seq INTEGER PRIMARY KEY AUTOINCREMENT, collection TEXT NOT NULL, field TEXT NOT NULL, row_id INTEGER NOT NULL) STRICT`,
  `CREATE INDEX IF NOT EXISTS ${ident(`${LOG_TABLE}.field`)} ON ${LOG_TABLE} (collection, field, seq)`,
  `CREATE TABLE IF NOT EXISTS ${SNAPSHOT_TABLE} (collection TEXT NOT NULL, field TEXT NOT NULL, seq INTEGER NOT NULL, parts INTEGER NOT NULL, labels BLOB NOT NULL, PRIMARY KEY (collection, field)) STRICT`,
  `CREATE TABLE IF NOT EXISTS ${SNAPSHOT_PART_TABLE} (collection TEXT NOT NULL, field TEXT NOT NULL, part INTEGER NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (collection, field, part)) STRICT`,
];

export interface VectorFieldSql {
  /**
   * The store's tables (IF NOT EXISTS), the removal of any log entries and snapshot left under the
   * field's name (a dropped collection's, whose drop SQL was not run), and the three triggers (IF NOT EXISTS).
   */
  readonly create: string[];
  /** The three triggers alone (IF NOT EXISTS): what moving the field's table needs (Catalog.upgradeLayout). */
  readonly triggers: string[];
  /**
   * The triggers, then the field's log entries and snapshot. Before ALTER TABLE … DROP COLUMN: SQLite refuses to drop a
   * column a trigger names.
   */
  readonly drop: string[];
}

/** The quoted name of a vector field's own table (catalog.ts): `c_notes.F`. */
export function vectorTable(collection: string, field: string): string {
  return ident(`c_${collection}.${field}`);
}

function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The quoted names of the field's triggers: insert, update, delete. */
export function triggerNames(collection: string, field: string): [string, string, string] {
  const name = (what: string): string => ident(`v.${collection}.${field}.${what}`);
  return [name('insert'), name('update'), name('delete')];
}

/**
 * The SQL that starts and stops logging a vector field whose values are in `table` (quoted; its
 * `id` and a column named as the field). Run it inside the schema change's transaction.
 */
export function vectorFieldSql(collection: string, field: string, table: string): VectorFieldSql {
  const column = ident(field);
  const [insert, update, remove] = triggerNames(collection, field);
  const names = `${sqlString(collection)}, ${sqlString(field)}`;
  const log = `INSERT INTO ${LOG_TABLE} (collection, field, row_id)`;
  const where = `collection = ${sqlString(collection)} AND field = ${sqlString(field)}`;
  const forget = [
    `DELETE FROM ${LOG_TABLE} WHERE ${where}`,
    `DELETE FROM ${SNAPSHOT_PART_TABLE} WHERE ${where}`,
    `DELETE FROM ${SNAPSHOT_TABLE} WHERE ${where}`,
  ];
  const triggers = [
    `CREATE TRIGGER IF NOT EXISTS ${insert} AFTER INSERT ON ${table} WHEN new.${column} IS NOT NULL BEGIN ${log} VALUES (${names}, new."id"); END`,
    `CREATE TRIGGER IF NOT EXISTS ${update} AFTER UPDATE OF "id", ${column} ON ${table} WHEN new.${column} IS NOT old.${column} OR new."id" IS NOT old."id" BEGIN ` +
      `${log} VALUES (${names}, old."id"); ${log} SELECT ${names}, new."id" WHERE new."id" IS NOT old."id"; END`,
    `CREATE TRIGGER IF NOT EXISTS ${remove} AFTER DELETE ON ${table} WHEN old.${column} IS NOT NULL BEGIN ${log} VALUES (${names}, old."id"); END`,
  ];
  return {
    create: [...VECTOR_TABLES_SQL, ...forget, ...triggers],
    triggers,
    drop: [
      ...VECTOR_TABLES_SQL,
      `DROP TRIGGER IF EXISTS ${insert}`,
      `DROP TRIGGER IF EXISTS ${update}`,
      `DROP TRIGGER IF EXISTS ${remove}`,
      ...forget,
    ],
  };
}

export interface LogEntry {
  readonly seq: number;
  readonly collection: string;
  readonly field: string;
  readonly row_id: number;
}

/** Reads of the log. Statements are prepared on first use: a read-only file may not have the table. */
export class VectorLog {
  readonly #db: Connection;
  #exists: boolean | undefined;
  #max: Statement | undefined;
  #maxOf: Statement | undefined;
  #entries: Statement | undefined;

  constructor(db: Connection) {
    this.#db = db;
  }

  /** Whether the file has the store's tables (a writable store creates them at open). */
  get exists(): boolean {
    this.#exists ??=
      this.#db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(LOG_TABLE) !== undefined;
    return this.#exists;
  }

  /** The store created the tables. */
  created(): void {
    this.#exists = true;
  }

  /** The last seq written (0 with an empty log): one step down the table's B-tree. */
  maxSeq(): number {
    if (!this.exists) return 0;
    this.#max ??= this.#db.prepare(`SELECT seq FROM ${LOG_TABLE} ORDER BY seq DESC LIMIT 1`).pluck();
    return (this.#max.get() as number | undefined) ?? 0;
  }

  /** The last seq written for one field (0 when none is left). */
  maxSeqOf(collection: string, field: string): number {
    if (!this.exists) return 0;
    this.#maxOf ??= this.#db
      .prepare(`SELECT seq FROM ${LOG_TABLE} WHERE collection = ? AND field = ? ORDER BY seq DESC LIMIT 1`)
      .pluck();
    return (this.#maxOf.get(collection, field) as number | undefined) ?? 0;
  }

  /** Entries with after < seq ≤ upTo, in seq order. */
  entries(after: number, upTo: number): IterableIterator<LogEntry> {
    if (!this.exists) return [][Symbol.iterator]();
    this.#entries ??= this.#db.prepare(
      `SELECT seq, collection, field, row_id FROM ${LOG_TABLE} WHERE seq > ? AND seq <= ? ORDER BY seq`,
    );
    return this.#entries.iterate(after, upTo) as IterableIterator<LogEntry>;
  }

  /** True when the field's three triggers exist. */
  hasTriggers(collection: string, field: string): boolean {
    const names = triggerNames(collection, field).map((quoted) => quoted.slice(1, -1).replaceAll('""', '"'));
    const found = this.#db
      .prepare(`SELECT count(*) FROM sqlite_schema WHERE type = 'trigger' AND name IN (?, ?, ?)`)
      .pluck()
      .get(...names) as number;
    return found === 3;
  }
}
