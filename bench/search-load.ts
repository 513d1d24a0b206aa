/**
 * What make search-bench's scenarios run over: its two workloads (search-data.ts) loaded into a real
 * `.fenec` file and, beside it, into the raw libraries (search-raw.ts), with the exact answers of the
 * measured queries; and the figures of those loads (the literal and parametrised inserts, the HNSW
 * build, `compact`'s rebuild).
 */
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { FenecDatabase } from '../node/database.js';
import type { VectorStoreEvent } from '../node/vector/store.js';
import { MAX_STATEMENT_LENGTH } from '../shared/fenecql/limits.js';
import type { VectorIndex } from '../node/vector/vector-index.js';
import { progress } from './harness.js';
import {
  DIMS,
  grp,
  K,
  passesFilter,
  seededRandom,
  uniformData,
  VOCABULARY,
  ZIPF_EXPONENT,
  vectorArray,
  vectorBlob,
  vectorLiteral,
  zipfWorkload,
} from './search-data.js';
import { bitmapOf, exactNearest, RawDocs, rawFaissBuild, rawHnsw, scanNearest } from './search-raw.js';
import { fmtInt, fmtMs, type Results, type SearchConfig } from './search-results.js';

/** Rows of one bulk write into the loaded collection (`insert into docs $1`, one array param). */
export const BULK_ROWS = 1_000;
/** The most rows a literal insert holds, when the statement limit allows that many. */
const LITERAL_MAX_ROWS = 1_000;
/** Parameters a statement may have: $1 … $99. */
const MAX_PARAMS = 99;

/** Vectors loaded into fenecdb and into raw Faiss, and the exact answers of the measured queries. */
export interface Loaded {
  readonly data: 'clustered' | 'uniform';
  readonly rows: number;
  readonly db: FenecDatabase;
  /** The raw Faiss HNSW index of the same rows, with the database's parameters. */
  readonly hnsw: VectorIndex;
  /** The rows' vectors, and those of the rows the write scenarios add after them. */
  readonly vectors: Float32Array;
  readonly queries: Float32Array;
  /** Each query vector as the plain array a client's JSON params arrive as. */
  readonly queryArrays: readonly number[][];
  /**
   * The queries measured (those after the warm-up), and their exact answers: all rows, and the rows that pass `where
   * grp = 7`.
   */
  readonly measured: readonly number[];
  readonly exact: readonly number[][];
  readonly exactFiltered: readonly number[][];
  /** The rows that pass the filter, as raw Faiss's allow bitmap. */
  readonly allow: Uint8Array;
}

/** The clustered run: the rows also have text, in fenecdb and in raw SQLite + FTS5. */
export interface Clustered extends Loaded {
  readonly raw: RawDocs;
  readonly bodies: readonly string[];
  /** Query q as a user types it, and as the FTS5 query fenecdb sends for it: two Zipf-drawn words. */
  readonly texts: readonly string[];
  readonly ftsQueries: readonly string[];
  /** The same for two words drawn uniformly from the vocabulary (mostly rare). */
  readonly rareTexts: readonly string[];
  readonly rareFtsQueries: readonly string[];
  readonly otherRareTexts: readonly string[];
  readonly otherRareFtsQueries: readonly string[];
  /** Row i as the object a bulk write's array param holds. */
  readonly object: (i: number) => Record<string, unknown>;
  /** What the vector store reported during the run (snapshots written, failures). */
  readonly events: readonly VectorStoreEvent[];
}

// Loading into fenecdb --------------------------------------------------------------------------------

export interface Loader {
  readonly collection: string;
  /** Row i as a FenecQL object literal. */
  readonly literal: (i: number) => string;
  /** The collection's fields, and row i's values for them as params. */
  readonly fields: readonly string[];
  readonly values: (i: number) => unknown[];
}

export interface LoadTimes {
  readonly literalRows: number;
  /** The literal inserts' rows: [from, to) each, as the raw baseline takes them again. */
  readonly literalBatches: readonly (readonly [number, number])[];
  readonly literalMs: number;
  /** Heap after a full GC, after the literal inserts, less before them. */
  readonly literalHeapGrowth: number;
  readonly rowsPerParamStatement: number;
  readonly paramsMs: number;
  /** From the last commit until db.idle() resolved. */
  readonly idleMs: number;
}

/**
 * Inserts rows 0 … rows-1: the first `literalRows` in statements written as literal text, each holding
 * as many rows as the statement limit (MAX_STATEMENT_LENGTH) takes, up to LITERAL_MAX_ROWS (the text is
 * made outside the timing); the rest with parameters, as many rows per statement as $1 … $99 allow, the
 * same statement text each time. Then waits for the vector index. Checks that row i got id i + 1 (the
 * bench maps ids to labels so).
 *
 * Why not every row as literal text: it is the slow form (every number parsed as FenecQL), which
 * clients use for a few rows, not for loads. The heap is measured around the literal inserts: the
 * statement cache keeps no statement past 8 KB, so they should leave nothing behind.
 */
export async function loadFenec(
  db: FenecDatabase,
  rows: number,
  literalRows: number,
  loader: Loader,
): Promise<LoadTimes> {
  literalRows = Math.min(rows, literalRows);
  const perStatement = Math.floor(MAX_PARAMS / loader.fields.length);
  progress(
    `fenecdb: ${rows} rows into ${loader.collection}: ${literalRows} as literal text up to the statement limit, the rest ${perStatement} per statement with params; then db.idle()`,
  );
  const check = (answer: unknown, from: number, to: number): void => {
    const ids = (answer as { ids: number[] }).ids;
    if (ids.length !== to - from || ids.some((id, j) => id !== from + j + 1))
      throw new Error(`rows ${from + 1}…${to} got ids ${ids.slice(0, 3).join(', ')}…`);
  };
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  let literalMs = 0;
  const literalBatches: [number, number][] = [];
  for (let from = 0; from < literalRows;) {
    const { text, to } = literalInsert(loader, from, literalRows);
    const t0 = performance.now();
    const answer = db.execute(text);
    literalMs += performance.now() - t0;
    check(answer, from, to);
    literalBatches.push([from, to]);
    from = to;
  }
  collectGarbage();
  const literalHeapGrowth = process.memoryUsage().heapUsed - heapBefore;
  const rowText = `{${loader.fields.map((field, f) => `${field}: $${f + 1}`).join(', ')}}`;
  const statementOf = (n: number): string =>
    `insert into ${loader.collection} [${range(0, n)
      .map((r) => rowText.replace(/\$(\d+)/g, (_, f: string) => `$${r * loader.fields.length + Number(f)}`))
      .join(', ')}]`;
  const full = statementOf(perStatement);
  let paramsMs = 0;
  for (let from = literalRows; from < rows; from += perStatement) {
    const to = Math.min(rows, from + perStatement);
    const statement = to - from === perStatement ? full : statementOf(to - from);
    const params = range(from, to).flatMap(loader.values);
    const t0 = performance.now();
    const answer = db.execute(statement, params);
    paramsMs += performance.now() - t0;
    check(answer, from, to);
    if (Math.floor(to / 20_000) > Math.floor(from / 20_000)) progress(`  ${to} rows`);
  }
  const t0 = performance.now();
  await db.idle();
  return {
    literalRows,
    literalBatches,
    literalMs,
    literalHeapGrowth,
    rowsPerParamStatement: perStatement,
    paramsMs,
    idleMs: performance.now() - t0,
  };
}

/** `insert into C [row from, row from+1, …]`: the rows from `from` that fit the statement limit (at least one). */
function literalInsert(loader: Loader, from: number, end: number): { text: string; to: number } {
  const start = `insert into ${loader.collection} [`;
  const parts: string[] = [];
  let length = start.length + 1;
  let to = from;
  while (to < end && parts.length < LITERAL_MAX_ROWS) {
    const part = loader.literal(to);
    const added = part.length + (parts.length > 0 ? 2 : 0);
    if (parts.length > 0 && length + added > MAX_STATEMENT_LENGTH) break;
    parts.push(part);
    length += added;
    to++;
  }
  return { text: `${start}${parts.join(', ')}]`, to };
}

/** A full garbage collection (for the heap figure), without asking for node --expose-gc. */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}

function time(call: () => unknown): number {
  const t0 = performance.now();
  call();
  return performance.now() - t0;
}

// The two workloads ----------------------------------------------------------------------------------

/**
 * The main run: text and clustered vectors, in fenecdb and in raw SQLite + FTS5 and raw Faiss, with the
 * rows the write scenarios add after them drawn too; the load's figures go to `results`.
 */
export async function loadClustered(dir: string, config: SearchConfig, results: Results): Promise<Clustered> {
  progress(`generating ${config.rows} rows (clustered vectors, ${config.clusters} centres)`);
  const extra = config.singleInserts + config.loadedBatches * BULK_ROWS;
  const total = config.queries + config.warmUp;
  const work = zipfWorkload({
    seed: config.seed,
    rows: config.rows + extra,
    queries: total,
    vocabulary: VOCABULARY,
    zipfExponent: ZIPF_EXPONENT,
    minWords: 8,
    maxWords: 20,
    dims: DIMS,
    clusters: config.clusters,
    spread: config.spread,
  });
  // Two words drawn uniformly from the vocabulary: mostly rare, so that FTS5 ranks few rows and what
  // fenecdb adds (the row read, snippets, the answer) is most of the difference.
  const pick = (): string => work.vocabulary[Math.floor(work.random() * VOCABULARY)]!;
  const rareWords = Array.from({ length: total }, () => [pick(), pick()] as const);
  // Others of the same kind for a second baseline: the same words again would find their pages warm.
  const otherRareWords = Array.from({ length: total }, () => [pick(), pick()] as const);

  const events: VectorStoreEvent[] = [];
  const db = FenecDatabase.open({
    file: path.join(dir, 'search.fenec'),
    readOnly: false,
    program: 'search-bench',
    sweepIntervalMs: 0,
    onVectorEvent: (event) => events.push(event),
  });
  db.execute(`create collection docs (body text @text, vec vector<${DIMS}> @hnsw(cosine), grp int @hash)`);
  const load = await loadFenec(db, config.rows, config.literalRows, {
    collection: 'docs',
    literal: (i) =>
      `{body: ${JSON.stringify(work.bodies[i])}, vec: ${vectorLiteral(work.vectors, i, DIMS)}, grp: ${grp(i)}}`,
    fields: ['body', 'vec', 'grp'],
    values: (i) => [work.bodies[i], vectorArray(work.vectors, i, DIMS), grp(i)],
  });

  // The same rows in plain SQLite (FTS5 over the text, the vector as a blob), in transactions of the same sizes.
  const raw = new RawDocs(path.join(dir, 'raw.sqlite'), (i) => ({
    body: work.bodies[i]!,
    vector: vectorBlob(work.vectors, i, DIMS),
    grp: grp(i),
  }));
  progress('raw SQLite: the same rows in transactions of the same sizes');
  let rawLiteralMs = 0;
  let rawParamsMs = 0;
  for (const [from, to] of load.literalBatches) rawLiteralMs += time(() => raw.insert(from, to));
  for (let from = load.literalRows; from < config.rows; from += load.rowsPerParamStatement)
    rawParamsMs += time(() => raw.insert(from, Math.min(config.rows, from + load.rowsPerParamStatement)));

  progress(
    "raw Faiss: HNSW of the same vectors (Faiss's own add, timed; then through the binding, for the raw searches)",
  );
  const vectors = await vectorBaselines(work.vectors, config.rows, work.queries, config);
  let bytes = 0;
  const serializeMs = time(() => (bytes = vectors.hnsw.serialize().length));
  results.notes.push(
    `serializing the raw HNSW index (what a snapshot stores, before writing it to the file): ${fmtInt(bytes / 2 ** 20)} MiB in ${fmtMs(serializeMs)} ms`,
  );
  loadFigures(results, config, load, rawLiteralMs, rawParamsMs, vectors.rawBuildMs);
  if (config.rebuild) await rebuild(db, results, config, vectors.rawBuildMs);

  return {
    data: 'clustered',
    rows: config.rows,
    db,
    raw,
    ...vectors,
    queryArrays: range(0, total).map((q) => vectorArray(work.queries, q, DIMS)),
    bodies: work.bodies,
    texts: work.words.map(([a, b]) => `${a} ${b}`),
    ftsQueries: work.words.map(([a, b]) => `"${a}" OR "${b}"`),
    rareTexts: rareWords.map(([a, b]) => `${a} ${b}`),
    rareFtsQueries: rareWords.map(([a, b]) => `"${a}" OR "${b}"`),
    otherRareTexts: otherRareWords.map(([a, b]) => `${a} ${b}`),
    otherRareFtsQueries: otherRareWords.map(([a, b]) => `"${a}" OR "${b}"`),
    object: (i) => ({ body: work.bodies[i], vec: vectorArray(work.vectors, i, DIMS), grp: grp(i) }),
    events,
  };
}

/** The figures of the clustered load: literal and parametrised inserts against raw SQLite, and the HNSW build. */
function loadFigures(
  results: Results,
  config: SearchConfig,
  load: LoadTimes,
  rawLiteralMs: number,
  rawParamsMs: number,
  rawBuildMs: number,
): void {
  const paramRows = config.rows - load.literalRows;
  if (load.literalRows > 0) {
    const perStatement = fmtInt(load.literalRows / load.literalBatches.length);
    results.writes.push({
      what: `insert, ${perStatement} rows per statement as literal text (the statement limit), 0 → ${fmtInt(load.literalRows)} rows (commits)`,
      unit: 'rows/s',
      fenec: load.literalRows / (load.literalMs / 1000),
      baseline: `raw SQLite + FTS5, the same rows per transaction`,
      raw: load.literalRows / (rawLiteralMs / 1000),
    });
    results.notes.push(
      `the ${load.literalBatches.length} literal inserts of ${perStatement} rows left the heap ${fmtInt(load.literalHeapGrowth / 2 ** 20)} MiB larger after a full GC ` +
        `(the statement cache keeps no statement past 8 KB)`,
    );
  }
  if (paramRows > 0) {
    results.writes.push({
      what: `insert, ${load.rowsPerParamStatement} rows per statement with params, ${fmtInt(load.literalRows)} → ${fmtInt(config.rows)} rows (commits)`,
      unit: 'rows/s',
      fenec: paramRows / (load.paramsMs / 1000),
      baseline: `raw SQLite + FTS5, ${load.rowsPerParamStatement} per transaction`,
      raw: paramRows / (rawParamsMs / 1000),
    });
  }
  const loadMs = load.literalMs + load.paramsMs + load.idleMs;
  results.writes.push({
    what: `HNSW build: load until db.idle() (rows committed and indexed)`,
    unit: 'vectors/s',
    fenec: config.rows / (loadMs / 1000),
    baseline: 'raw Faiss add',
    raw: config.rows / (rawBuildMs / 1000),
  });
  results.seconds.clusteredLoad = loadMs / 1000;
  results.seconds.clusteredIndexAfterLastCommit = load.idleMs / 1000;
  results.seconds.rawFaissBuild = rawBuildMs / 1000;
}

/** `compact docs`: the index built again from the rows, until db.idle(). */
async function rebuild(db: FenecDatabase, results: Results, config: SearchConfig, rawBuildMs: number): Promise<void> {
  progress('compact docs: the index built again from the rows');
  const compactStart = performance.now();
  db.execute('compact docs');
  const rebuildStart = performance.now();
  // compact starts the rebuild after its own transaction, from a promise: let it begin before waiting.
  await new Promise((resolve) => setImmediate(resolve));
  await db.idle();
  const rebuildMs = performance.now() - rebuildStart;
  results.seconds.compactStatement = (rebuildStart - compactStart) / 1000;
  results.seconds.compactRebuildUntilIdle = rebuildMs / 1000;
  results.writes.push({
    what: 'HNSW build: compact, from the rows until db.idle()',
    unit: 'vectors/s',
    fenec: config.rows / (rebuildMs / 1000),
    baseline: 'raw Faiss add',
    raw: config.rows / (rawBuildMs / 1000),
  });
}

/** Closes the clustered run, noting what its vector store reported. */
export function closeClustered(w: Clustered, results: Results): void {
  const snapshots = w.events.filter((e) => e.kind === 'snapshot_written');
  if (snapshots.length > 0)
    results.notes.push(
      `vector index snapshots written: ${snapshots.length}, the last ${snapshots.at(-1)!.message.replace(/^.*: /, '')}`,
    );
  for (const failure of w.events.filter((e) => e.kind !== 'snapshot_written'))
    results.notes.push(`VECTOR INDEX EVENT (figures not to be trusted): ${failure.kind}: ${failure.message}`);
  w.raw.close();
  closeLoaded(w);
}

export function closeLoaded(w: Loaded): void {
  w.hnsw.dispose();
  w.db.close();
}

/** Uniform random vectors, the worst case for HNSW: recall and `near` latency. */
export async function loadUniform(dir: string, config: SearchConfig, results: Results): Promise<Loaded> {
  progress(`generating ${config.uniformRows} rows (uniform vectors)`);
  const total = config.queries + config.warmUp;
  const data = uniformData(config.uniformRows, total, DIMS, seededRandom(config.seed + 1));
  const db = FenecDatabase.open({
    file: path.join(dir, 'uniform.fenec'),
    readOnly: false,
    program: 'search-bench',
    sweepIntervalMs: 0,
  });
  db.execute(`create collection uni (vec vector<${DIMS}> @hnsw(cosine), grp int @hash)`);
  const load = await loadFenec(db, config.uniformRows, 0, {
    collection: 'uni',
    literal: (i) => `{vec: ${vectorLiteral(data.vectors, i, DIMS)}, grp: ${grp(i)}}`,
    fields: ['vec', 'grp'],
    values: (i) => [vectorArray(data.vectors, i, DIMS), grp(i)],
  });
  progress(
    "raw Faiss: HNSW of the uniform vectors (Faiss's own add, timed; then through the binding, for the raw searches)",
  );
  const vectors = await vectorBaselines(data.vectors, config.uniformRows, data.queries, config);
  const loadMs = load.literalMs + load.paramsMs + load.idleMs;
  results.writes.push({
    what: `HNSW build, uniform vectors: load until db.idle()`,
    unit: 'vectors/s',
    fenec: config.uniformRows / (loadMs / 1000),
    baseline: 'raw Faiss add',
    raw: config.uniformRows / (vectors.rawBuildMs / 1000),
  });
  results.seconds.uniformLoad = loadMs / 1000;
  results.seconds.uniformRawFaissBuild = vectors.rawBuildMs / 1000;
  return {
    data: 'uniform',
    rows: config.uniformRows,
    db,
    ...vectors,
    queryArrays: range(0, total).map((q) => vectorArray(data.queries, q, DIMS)),
  };
}

/**
 * Raw Faiss's own HNSW build over the first `rows` vectors (timed), an index of them built through the
 * binding (for the raw searches), and the exact answers of the measured queries: a flat index's over all
 * those rows, a scan's over the rows that pass the filter.
 */
async function vectorBaselines(
  vectors: Float32Array,
  rows: number,
  queries: Float32Array,
  config: SearchConfig,
): Promise<Omit<Loaded, 'data' | 'rows' | 'db' | 'queryArrays'> & { rawBuildMs: number }> {
  const rawBuildMs = 1000 * rawFaissBuild(DIMS, vectors.subarray(0, rows * DIMS));
  const hnsw = await rawHnsw(DIMS, vectors.subarray(0, rows * DIMS));
  progress('exact answers (flat index; a scan for the filtered ones)');
  const measured = range(config.warmUp, config.warmUp + config.queries);
  return {
    hnsw,
    rawBuildMs,
    vectors,
    queries,
    measured,
    exact: exactNearest(vectors.subarray(0, rows * DIMS), queries, DIMS, measured, K),
    exactFiltered: measured.map((q) => scanNearest(vectors, rows, queries, DIMS, q, K, passesFilter)),
    allow: bitmapOf(rows, passesFilter),
  };
}
