/**
 * The SQLite connection under a `.fenec` file: the only module that imports better-sqlite3.
 */
import Database from 'better-sqlite3';
import { FenecError } from '../../shared/errors.js';
import { findNativeBuild } from '../native-builds.js';
import { checkedNumber, type SqlValue } from './codec.js';

export type Connection = Database.Database;
export type Statement = Database.Statement;

const FORMAT = '1';

/**
 * How much of a file each connection reads through a memory map rather than by read() into its page
 * cache: SQLite's own ceiling (2 GiB), so that a whole file up to that size is mapped. A row read
 * (a `match`'s 10 rows, a `near`'s, a `get` by id) then costs a memory access where it cost a system
 * call and a 4 KiB copy for each page missing from the 16 MB page cache: rows that hold a vector fill
 * a page with two rows, so a 50 000-row collection is 25 000 pages and most reads missed it
 * (bench/HISTORY.md, "Rows read through a memory map"). The map costs address space, not memory: its pages
 * are the operating system's file cache, shared and reclaimable. Writes still go through write(), and
 * pages in the write-ahead log are read from it, so nothing about durability changes. The price: an
 * I/O error while reading the file is a SIGBUS (the process stops) rather than an SQLITE_IOERR.
 */
const MMAP_BYTES = 2 ** 31 - 2 ** 16;

/** How long a write waits in all for a lock another program holds on the file, unless told (--busy-timeout). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/**
 * Drops the connection's memory map (SQLite unmaps the file when mmap_size changes) and lets it map the file
 * again at its next read. The pages of the map a process has read count in its RSS for as long as it is mapped;
 * a bulk read — an index's snapshot read back at open, the rows an index build reads — would otherwise leave
 * the whole file there (about 170 MB for 50 000 rows of 384-dim vectors). Reads after it fault in the pages they
 * use again, from the system's file cache. Call it with no statement running on the connection.
 */
export function releaseMap(db: Connection): void {
  db.pragma('mmap_size = 0');
  db.pragma(`mmap_size = ${MMAP_BYTES}`);
}

/** Quotes a name for SQL. Names are checked against FenecQL's rule before they get here; this is the second fence. */
export function ident(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function registerFunctions(db: Connection): void {
  // BM25 with an IDF that stays positive for every word present (FTS5's own floors it at 1e-6): see
  // native/fts5/src/fenec_fts5.c and node/search/text-index.ts.
  // Our extension (native/fts5, built by `make install`): fenec_bm25, fenec_doclen, fenec_snippet, fenec_deadline.
  db.loadExtension(findNativeBuild('fts5')); // its entry point, sqlite3_fenecfts_init, is named after the file
  // SQLite's own lower()/upper() fold ASCII only; FenecQL's fold every script, as JavaScript does.
  db.function('fenec_lower', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toLowerCase() : s));
  db.function('fenec_upper', { deterministic: true }, (s: unknown) => (typeof s === 'string' ? s.toUpperCase() : s));
  // About the bytes a value takes in a row, to tell whether a set grows its rows (byte-quota.ts).
  db.function('fenec_size', { deterministic: true }, (v: unknown) =>
    typeof v === 'string' ? Buffer.byteLength(v) : Buffer.isBuffer(v) ? v.length : v === null ? 0 : 8,
  );
  // Arithmetic checked as it runs (codec.ts, checkedNumber): an overflow is refused, never stored.
  for (const kind of ['int', 'float', 'timestamp'] as const) {
    db.function(
      `fenec_${kind}`,
      { deterministic: true },
      (value: unknown, label: unknown) => checkedNumber(kind, value, String(label)) as SqlValue,
    );
  }
}

/**
 * Opens (or creates) a `.fenec` file for writing: WAL, and synchronous=FULL so that every
 * acknowledged write has reached the disk. A replicated file's connections never checkpoint on their
 * own: its write-ahead log must hold each commit until replication has taken its pages (wal-tail.ts).
 * Nor do they sync each commit (synchronous=NORMAL: the log is synced at each checkpoint): its writes
 * are answered once the replicated log holds them, and a file not closed cleanly is never trusted — it
 * is rebuilt from the log (node/replication/replicas.ts) — so a commit's fsync, 0.4 ms or more here,
 * would buy nothing. A statement waits up to `busyTimeoutMs` in all for a lock another program holds on
 * the file, then fails `file_busy`.
 */
export function openWritable(file: string, replicated = false, busyTimeoutMs = DEFAULT_BUSY_TIMEOUT_MS): Connection {
  let db: Connection | undefined;
  try {
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma(replicated ? 'synchronous = NORMAL' : 'synchronous = FULL');
    if (replicated) db.pragma('wal_autocheckpoint = 0');
    // While the file opens; once the extension is loaded its busy handler (the same wait, cut short at
    // the request's deadline: native/fts5/src/deadline.c) takes over.
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.pragma(`mmap_size = ${MMAP_BYTES}`);
    initialise(db, file);
    registerFunctions(db);
    db.prepare('SELECT fenec_busy_timeout(?)').get(busyTimeoutMs);
  } catch (err) {
    if (db?.open === true) db.close();
    throw cannotOpen(file, err);
  }
  return db;
}

/**
 * Opens a `.fenec` file read-only and holds one read transaction for the connection's life, so that
 * every read sees the file as it stood at open, whatever a writer beside it does.
 */
export function openSnapshot(file: string): Connection {
  let db: Connection | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.pragma(`mmap_size = ${MMAP_BYTES}`);
    db.exec('BEGIN');
    checkFormat(db, file);
    registerFunctions(db);
  } catch (err) {
    if (db?.open === true) db.close();
    throw cannotOpen(file, err);
  }
  return db;
}

/**
 * Opens a `.fenec` file read-only without holding a transaction: each read sees what the file holds
 * then, as a writer beside it changes it (the revocations of a `--read-only` server).
 */
export function openReader(file: string): Connection {
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 1000');
    checkFormat(db, file);
    return db;
  } catch (err) {
    throw cannotOpen(file, err);
  }
}

function cannotOpen(file: string, err: unknown): FenecError {
  if (err instanceof FenecError) return err;
  const reason = err instanceof Error ? err.message : String(err);
  return new FenecError('cannot_open', `cannot open ${file}: ${reason}`, { cause: err });
}

function initialise(db: Connection, file: string): void {
  db.transaction(() => {
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all() as string[];
    if (tables.length === 0) {
      db.exec(`
        CREATE TABLE _fenec_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
        CREATE TABLE _fenec_collections (name TEXT PRIMARY KEY, definition TEXT NOT NULL, created INTEGER NOT NULL) STRICT;
      `);
      db.prepare("INSERT INTO _fenec_meta (key, value) VALUES ('format', ?)").run(FORMAT);
    }
    checkFormat(db, file);
  })();
}

function checkFormat(db: Connection, file: string): void {
  const hasMeta = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '_fenec_meta'").get();
  const format = hasMeta
    ? (db.prepare("SELECT value FROM _fenec_meta WHERE key = 'format'").pluck().get() as string | undefined)
    : undefined;
  if (format === undefined) {
    throw new FenecError(
      'cannot_open',
      `${file} is a SQLite database but not a fenecdb file; name a new or a .fenec file`,
    );
  }
  if (format !== FORMAT) {
    throw new FenecError('cannot_open', `${file} has format ${format}; this fenecdb reads format ${FORMAT}`);
  }
}
