/**
 * The baselines make search-bench and make ingest-bench measure fenecdb against — the raw libraries under
 * it, SQLite + FTS5 through better-sqlite3, Faiss's own HNSW build (bench/raw-faiss) and the Faiss binding's
 * searches with the database's HNSW parameters —
 * and the exact answers recall is measured against.
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { SNIPPET_TOKENS } from '../node/search/text-index.js';
import { DEFAULT_TOKENIZER, FTS5_TOKENIZE } from '../node/search/tokenizers.js';
import { StatementCache } from '../node/query/execute/statement-cache.js';
import { faiss } from '../node/vector/faiss.js';
import { DEFAULT_EF_SEARCH, DEFAULT_M, EF_CONSTRUCTION } from '../node/vector/store.js';
import { findNativeBuild } from '../node/native-builds.js';
import { ROOT } from './harness.js';
import type { VectorIndex } from '../node/vector/vector-index.js';

/**
 * A raw SQLite file, opened as fenecdb opens its files: WAL, synchronous FULL, and fenecdb's extension loaded, whose
 * tokenizer (fenec_stem, @text's default) the raw FTS5 table takes.
 */
export function openRawSqlite(file: string): Database.Database {
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw.loadExtension(findNativeBuild('fts5'));
  return raw;
}

/** The raw FTS5 table of the rows' texts, `t (body)`, with fenecdb's tokenizer; rowid = row id. */
export const RAW_TEXT_TABLE = `CREATE VIRTUAL TABLE t USING fts5(body, tokenize = '${FTS5_TOKENIZE[DEFAULT_TOKENIZER]}')`;

/**
 * Raw FTS5's top k as FTS5's documentation writes it, ranked by FTS5's own bm25(), the limit written in:
 * a limit bound as `?` is read by SQLite's planner, and binding it again re-prepares the statement at
 * each run (about a tenth of this query's time; node/query/plan/read.ts, countSql).
 */
const rawMatch = (k: number): string => `SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY rank LIMIT ${k}`;
/** The same with what fenecdb answers besides the ids: each row's text and its snippet (the database's 20 tokens). */
export const rawMatchSnippet = (k: number): string =>
  `SELECT rowid, body, snippet(t, 0, '**', '**', '…', ${SNIPPET_TOKENS}), bm25(t) FROM t WHERE t MATCH ? ORDER BY rank LIMIT ${k}`;
/**
 * The top k by SQLite's sorter, not FTS5's: what fenecdb's `match` ranks with (node/search/text-index.ts,
 * textTopSelect).
 */
const rawMatchSorted = (k: number): string =>
  `SELECT rowid, bm25(t) AS s FROM t WHERE t MATCH ? ORDER BY s, rowid LIMIT ${k}`;

/**
 * An HNSW index of `vectors` through the Faiss binding with the database's M, efConstruction and
 * efSearch, for the raw searches. Its build is not a baseline: the binding deals out Faiss's inserts
 * itself (native/faiss/src/hnsw-add.cc); rawFaissBuild times Faiss's own.
 */
export async function rawHnsw(dims: number, vectors: Float32Array): Promise<VectorIndex> {
  const index = faiss.create({
    kind: 'hnsw',
    dims,
    metric: 'ip',
    m: DEFAULT_M,
    efConstruction: EF_CONSTRUCTION,
    efSearch: DEFAULT_EF_SEARCH,
  });
  await index.addAsync(vectors);
  return index;
}

/** The benches' raw Faiss program (built by make search-bench and make ingest-bench). */
const RAW_FAISS = path.join(ROOT, 'bench/raw-faiss/build/raw-faiss');

/**
 * Seconds Faiss's own IndexHNSWFlat::add takes to build an index of `vectors` (inner product, the
 * database's M and efConstruction) in one call on every core, in a process of its own
 * (bench/raw-faiss/raw-faiss.cc): the raw build a load is measured against.
 */
export function rawFaissBuild(dims: number, vectors: Float32Array): number {
  if (!fs.existsSync(RAW_FAISS))
    throw new Error(`${RAW_FAISS} is not built: run the bench through make (make ingest-bench, make search-bench)`);
  const dir = fs.mkdtempSync(path.join(tmpdir(), 'fenec-raw-faiss-'));
  try {
    const file = path.join(dir, 'vectors.f32');
    fs.writeFileSync(file, new Uint8Array(vectors.buffer, vectors.byteOffset, vectors.byteLength));
    const out = execFileSync(RAW_FAISS, [file, String(dims), String(DEFAULT_M), String(EF_CONSTRUCTION), 'ip'], {
      encoding: 'utf8',
    });
    const { seconds, ntotal } = JSON.parse(out) as { seconds: number; ntotal: number };
    if (ntotal * dims !== vectors.length)
      throw new Error(`raw-faiss built ${ntotal} vectors of ${vectors.length / dims}`);
    return seconds;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export interface RawRow {
  readonly body: string;
  readonly vector: Buffer;
  readonly grp: number;
}

/** search-bench's `docs` in raw SQLite: `r (id, vec BLOB, grp)` indexed on grp, and FTS5 over the texts. */
export class RawDocs {
  private readonly db: Database.Database;
  private readonly insertRows: (from: number, to: number) => void;
  private readonly statements: StatementCache;

  constructor(file: string, row: (i: number) => RawRow) {
    this.db = openRawSqlite(file);
    this.statements = new StatementCache(this.db);
    this.db.exec(
      `CREATE TABLE r (id INTEGER PRIMARY KEY, vec BLOB NOT NULL, grp INTEGER NOT NULL); CREATE INDEX r_grp ON r (grp); ${RAW_TEXT_TABLE}`,
    );
    const insertVector = this.db.prepare('INSERT INTO r (id, vec, grp) VALUES (?, ?, ?)');
    const insertText = this.db.prepare('INSERT INTO t (rowid, body) VALUES (?, ?)');
    this.insertRows = this.db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const { body, vector, grp } = row(i);
        insertVector.run(i + 1, vector, grp);
        insertText.run(i + 1, body);
      }
    });
  }

  /** Rows from … to-1 (ids from+1 …) in one transaction. */
  insert(from: number, to: number): void {
    this.insertRows(from, to);
  }

  /** The ids of FTS5's top k for an FTS5 query. */
  match(query: string, k: number): number[] {
    return this.#ids(rawMatch(k), query);
  }

  /** The same top k, each row also read with its text and snippet, as fenecdb answers a `match`. */
  matchWithSnippets(query: string, k: number): number[] {
    return this.#ids(rawMatchSnippet(k), query);
  }

  /** The same top k (ties in id order), ranked by SQLite's sorter over FTS5's matches in rowid order. */
  matchSorted(query: string, k: number): number[] {
    return this.#ids(rawMatchSorted(k), query);
  }

  #ids(sql: string, query: string): number[] {
    // Every column read into JavaScript, as fenecdb's answer reads them.
    return (this.statements.get(sql).raw(true).all(query) as [number, ...unknown[]][]).map(([id]) => id);
  }

  /** Reads every row's text once (its pages into the connection's cache): make match-bench's warm pass. */
  scanTexts(): void {
    this.db.prepare('SELECT sum(length(body)) FROM t').pluck().get();
  }

  close(): void {
    this.db.close();
  }
}

/**
 * The exact k nearest of each measured query among `vectors`, from a flat (brute-force) index, all queries in one call
 * (BLAS).
 */
export function exactNearest(
  vectors: Float32Array,
  queries: Float32Array,
  dims: number,
  measured: readonly number[],
  k: number,
): number[][] {
  const flat = faiss.create({ kind: 'flat', dims, metric: 'ip' });
  try {
    flat.add(vectors);
    const first = measured[0]!;
    const found = flat.search(queries.subarray(first * dims, (first + measured.length) * dims), k);
    return measured.map((_, i) => Array.from(found.labels.subarray(i * k, (i + 1) * k)));
  } finally {
    flat.dispose();
  }
}

/** The exact k nearest (by inner product) of query q among the rows that pass, by a scan. */
export function scanNearest(
  vectors: Float32Array,
  rows: number,
  queries: Float32Array,
  dims: number,
  q: number,
  k: number,
  passes: (label: number) => boolean,
): number[] {
  const scored: [number, number][] = [];
  for (let i = 0; i < rows; i++) {
    if (!passes(i)) continue;
    let dot = 0;
    for (let j = 0; j < dims; j++) dot += vectors[i * dims + j]! * queries[q * dims + j]!;
    scored.push([i, dot]);
  }
  return scored
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([i]) => i);
}

/** Mean share of the exact top k found. */
export function recall(
  found: readonly (readonly number[])[],
  exact: readonly (readonly number[])[],
  k: number,
): number {
  let hits = 0;
  found.forEach((labels, i) => {
    const truth = new Set(exact[i]);
    hits += labels.filter((label) => truth.has(label)).length;
  });
  return hits / (found.length * k);
}

/** One bit a row, set where the row passes: Faiss's allow list. */
export function bitmapOf(rows: number, passes: (label: number) => boolean): Uint8Array {
  const bits = new Uint8Array(Math.ceil(rows / 8));
  for (let i = 0; i < rows; i++) if (passes(i)) bits[i >> 3]! |= 1 << (i & 7);
  return bits;
}
