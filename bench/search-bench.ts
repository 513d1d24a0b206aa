/**
 * `make search-bench`: full-text, vector and fused search of a real `.fenec` file, in process, beside
 * the raw libraries under it, measured in one run on the same data.
 *
 * Data (bench/search-data.ts, seeded): BENCH_ROWS rows (default 100 000) of
 * `docs (body text @text, vec vector<384> @hnsw(cosine), grp int @hash)`: body 8–20 words drawn
 * Zipf-distributed from a 5 000-word vocabulary, vec from a normalised Gaussian mixture (BENCH_CLUSTERS
 * centres, default 1 000; noise BENCH_SPREAD per component, default 0.5), grp = i % 100, so that
 * `where grp = 7` passes 1 %. Queries: two words drawn as the documents' words are; vectors drawn
 * from the same mixture (not among the rows). A second, smaller run (BENCH_UNIFORM_ROWS, default
 * 20 000; 0 skips it) has uniform random vectors, the worst case for HNSW recall.
 *
 * Baselines, same process, same data: raw FTS5 through better-sqlite3 on a file of its own (same
 * tokenizer, `SELECT rowid, bm25(t) … MATCH '"w1" OR "w2"' ORDER BY rank LIMIT 10`), and the raw Faiss
 * binding (node/vector/faiss.ts) with the database's own HNSW parameters (M 32, efConstruction 40,
 * efSearch 128). Exact answers for recall@10 come from a flat (brute-force) Faiss index of the same
 * vectors, and for the filtered queries from a scan in JavaScript.
 *
 * Each query is run against fenecdb and its baseline back to back, the order swapped every query,
 * after BENCH_WARM_UP (default 20) unmeasured ones: on two cores the machine's other work then falls
 * on both alike. Figures are per query (p50, p99 of BENCH_QUERIES, default 300), in milliseconds.
 *
 * Writes, each statement a transaction (WAL, synchronous=FULL, as the database opens its files):
 * the first BENCH_LITERAL_ROWS rows (default 10 000) go in as 1 000-row `insert into docs [ … ]`
 * statements of literal text (as a client sends them; the text is made outside the timing), the rest
 * with parameters, 33 rows per statement ($1 … $99); then 1-row inserts with parameters
 * (BENCH_SINGLE_INSERTS, default 2 000) and BENCH_LOADED_BATCHES (default 3) literal 1 000-row
 * inserts into the loaded collection. The raw baseline inserts the same rows into SQLite + FTS5 in
 * transactions of the same sizes (and, for the loaded collection, adds them to the raw Faiss index).
 * Not every row goes in as literal text: the database's statement cache keeps each statement's text
 * and parsed tree, about 57 MiB per 1 000 rows of 384 numbers, and 100 of them outgrow Node's heap.
 *
 * HNSW build rate: rows loaded until `await db.idle()` (the index is built while the rows go in), and
 * `compact docs` rebuilding it from the rows (BENCH_REBUILD=0 skips it), beside raw Faiss `addAsync`
 * of the same vectors.
 *
 * Other knobs: BENCH_SEED.
 * Writes bench/results/search.json. Targets (issue 3): recall@10 ≥ 0.95 on the clustered data at the
 * default ef; `match` and `near` p50 within 1.5× of the raw library calls.
 */
import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { VectorIndex } from '../shared/vector-index.js';
import { FenecDatabase } from '../node/database.js';
import { FUSE_DEPTH, FUSE_MIN, RRF_K } from '../node/query/run-vector.js';
import { TEXT_TOKENIZER } from '../node/search/text-index.js';
import { faiss } from '../node/vector/faiss.js';
import { DEFAULT_EF_SEARCH, DEFAULT_M, EF_CONSTRUCTION, type VectorStoreEvent } from '../node/vector/store.js';
import { clusteredData, documents, seededRandom, twoWordQueries, uniformData, vectorLiteral, vocabulary, zipfSampler, type VectorData } from './search-data.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RESULTS = path.join(ROOT, 'bench/results/search.json');

const ROWS = intEnv('BENCH_ROWS', 100_000, 1_000);
const UNIFORM_ROWS = intEnv('BENCH_UNIFORM_ROWS', 20_000, 0);
const QUERIES = intEnv('BENCH_QUERIES', 300, 10);
const WARM_UP = intEnv('BENCH_WARM_UP', 20, 0);
const SINGLE_INSERTS = intEnv('BENCH_SINGLE_INSERTS', 2_000, 0);
const LOADED_BATCHES = intEnv('BENCH_LOADED_BATCHES', 3, 0);
const CLUSTERS = intEnv('BENCH_CLUSTERS', 1_000, 1);
const SPREAD = numberEnv('BENCH_SPREAD', 0.5);
const REBUILD = process.env.BENCH_REBUILD !== '0';
const LITERAL_ROWS = intEnv('BENCH_LITERAL_ROWS', 10_000, 0);
const SEED = intEnv('BENCH_SEED', 42, 0);

const DIMS = 384;
const VOCABULARY = 5_000;
const ZIPF_EXPONENT = 1;
const BATCH = 1_000;
/** Parameters a statement may have: $1 … $99. */
const MAX_PARAMS = 99;
const K = 10;
const GROUPS = 100;
const GROUP = 7;
/** Candidates each ranking brings to `fuse … limit 10`, as node/query/run-vector.ts takes them. */
const FUSE_CANDIDATES = Math.max(FUSE_MIN, FUSE_DEPTH * K);
const TARGET_RECALL = 0.95;
/** efSearch values the raw index is also searched with (the database's default is DEFAULT_EF_SEARCH). */
const EF_SWEEP = [32, 64, 128, 256, 512] as const;
const TARGET_RATIO = 1.5;
/** Issue 12: `match` with its snippets and rows within 1.3× of raw FTS5's top-10 bm25 query (at 50 000 rows). */
const TARGET_MATCH_RATIO = 1.3;

const CREATE_DOCS = `create collection docs (body text @text, vec vector<${DIMS}> @hnsw(cosine), grp int @hash)`;
const CREATE_UNIFORM = `create collection uni (vec vector<${DIMS}> @hnsw(cosine), grp int @hash)`;
const MATCH = `get docs match body $1 limit ${K}`;
const NEAR = `get docs near vec $1 limit ${K}`;
const NEAR_FILTERED = `get docs near vec $1 where grp = ${GROUP} limit ${K}`;
const FUSE = `get docs match body $1 near vec $2 fuse limit ${K}`;
const INSERT_ONE = 'insert into docs {body: $1, vec: $2, grp: $3}';
const UNIFORM_NEAR = `get uni near vec $1 limit ${K}`;
const UNIFORM_NEAR_FILTERED = `get uni near vec $1 where grp = ${GROUP} limit ${K}`;
const RAW_MATCH = 'SELECT rowid, bm25(t) FROM t WHERE t MATCH ? ORDER BY rank LIMIT ?';

interface QueryMeasure {
  readonly query: string;
  readonly statement: string;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly baseline: string;
  readonly baselineP50Ms: number;
  readonly baselineP99Ms: number;
  /** fenecdb's p50 over the baseline's. */
  readonly ratioP50: number;
  /** The target on ratioP50, when the issue sets one. */
  readonly target?: number;
}

interface RecallMeasure {
  readonly data: string;
  readonly rows: number;
  readonly query: string;
  /** recall@10 of fenecdb's answers against the exact ones. */
  readonly fenec: number;
  /** recall@10 of the raw Faiss HNSW search of the same vectors. */
  readonly raw: number;
  readonly target?: number;
}

/** The raw Faiss HNSW index at one efSearch: what a field's `ef` would buy. */
interface EfMeasure {
  readonly data: string;
  readonly rows: number;
  readonly efSearch: number;
  readonly recall: number;
  readonly p50Ms: number;
}

interface WriteMeasure {
  readonly what: string;
  readonly unit: 'rows/s' | 'vectors/s';
  readonly fenec: number;
  readonly baseline: string;
  readonly raw: number | undefined;
}

interface Results {
  queries: QueryMeasure[];
  recall: RecallMeasure[];
  efSweep: EfMeasure[];
  writes: WriteMeasure[];
  notes: string[];
  seconds: Record<string, number>;
}

/** Milliseconds each call took, and what it answered. */
interface Timed<T> {
  readonly ms: number[];
  readonly out: T[];
}

const started = performance.now();
const results: Results = { queries: [], recall: [], efSweep: [], writes: [], notes: [], seconds: {} };

async function main(): Promise<void> {
  const loadBefore = os.loadavg();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-search-bench-'));
  try {
    await clusteredRun(dir);
    if (UNIFORM_ROWS > 0) await uniformRun(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  report(loadBefore, os.loadavg());
}

/** The main run: text, clustered vectors, every query, writes. */
async function clusteredRun(dir: string): Promise<void> {
  progress(`generating ${ROWS} rows (clustered vectors, ${CLUSTERS} centres)`);
  const extra = SINGLE_INSERTS + LOADED_BATCHES * BATCH;
  const total = QUERIES + WARM_UP;
  const random = seededRandom(SEED);
  const vocab = vocabulary(VOCABULARY, random);
  const rank = zipfSampler(VOCABULARY, ZIPF_EXPONENT, random);
  const bodies = documents(ROWS + extra, vocab, rank, random);
  const words = twoWordQueries(total, vocab, rank);
  const data = clusteredData(ROWS + extra, total, DIMS, CLUSTERS, SPREAD, random);
  const grp = (i: number): number => i % GROUPS;
  const userTexts = words.map(([a, b]) => `${a} ${b}`);
  const ftsQueries = words.map(([a, b]) => `"${a}" OR "${b}"`);
  // Two words drawn uniformly from the vocabulary: mostly rare, so that FTS5 ranks few rows and what
  // fenecdb adds (the row read, snippets, the answer) is most of the difference.
  const rareWords = Array.from({ length: total }, () => [vocab[Math.floor(random() * VOCABULARY)]!, vocab[Math.floor(random() * VOCABULARY)]!] as const);
  const queryArrays = arraysOf(data.queries, total);

  const events: VectorStoreEvent[] = [];
  const db = FenecDatabase.open({
    file: path.join(dir, 'search.fenec'),
    readOnly: false,
    program: 'search-bench',
    sweepIntervalMs: 0,
    onVectorEvent: (event) => events.push(event),
  });
  const raw = new Database(path.join(dir, 'raw.sqlite'));
  let hnsw: VectorIndex | undefined;
  let flat: VectorIndex | undefined;
  try {
    db.execute(CREATE_DOCS);
    const row = (i: number): string => `{body: ${JSON.stringify(bodies[i])}, vec: ${vectorLiteral(data.vectors, i, DIMS)}, grp: ${grp(i)}}`;
    const load = await loadFenec(db, ROWS, LITERAL_ROWS, {
      collection: 'docs',
      literal: row,
      fields: ['body', 'vec', 'grp'],
      values: (i) => [bodies[i], Array.from(data.vectors.subarray(i * DIMS, (i + 1) * DIMS)), grp(i)],
    });

    // The same rows in plain SQLite (FTS5 over the text, the vector as a blob), 1 000 per transaction.
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    raw.exec(
      'CREATE TABLE r (id INTEGER PRIMARY KEY, vec BLOB NOT NULL, grp INTEGER NOT NULL); CREATE INDEX r_grp ON r (grp); ' +
        `CREATE VIRTUAL TABLE t USING fts5(body, tokenize = '${TEXT_TOKENIZER}')`,
    );
    const insertVector = raw.prepare('INSERT INTO r (id, vec, grp) VALUES (?, ?, ?)');
    const insertText = raw.prepare('INSERT INTO t (rowid, body) VALUES (?, ?)');
    const insertRaw = raw.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        insertVector.run(i + 1, blobOf(data.vectors, i), grp(i));
        insertText.run(i + 1, bodies[i]);
      }
    });
    progress('raw SQLite: the same rows in transactions of the same sizes');
    let rawLiteralMs = 0;
    let rawParamsMs = 0;
    for (let from = 0; from < load.literalRows; from += BATCH) rawLiteralMs += time(() => insertRaw(from, Math.min(load.literalRows, from + BATCH)));
    for (let from = load.literalRows; from < ROWS; from += load.rowsPerParamStatement) rawParamsMs += time(() => insertRaw(from, Math.min(ROWS, from + load.rowsPerParamStatement)));

    progress('raw Faiss: HNSW addAsync of the same vectors');
    hnsw = faiss.create({ kind: 'hnsw', dims: DIMS, metric: 'ip', m: DEFAULT_M, efConstruction: EF_CONSTRUCTION, efSearch: DEFAULT_EF_SEARCH });
    const rawBuildStart = performance.now();
    await hnsw.addAsync(data.vectors.subarray(0, ROWS * DIMS));
    const rawBuildMs = performance.now() - rawBuildStart;
    flat = faiss.create({ kind: 'flat', dims: DIMS, metric: 'ip' });
    flat.add(data.vectors.subarray(0, ROWS * DIMS));
    let bytes = 0;
    const serializeMs = time(() => (bytes = hnsw!.serialize().length));
    results.notes.push(`serializing the raw HNSW index (what a snapshot stores, before writing it to the file): ${fmtInt(bytes / 2 ** 20)} MiB in ${fmtMs(serializeMs)} ms`);

    const paramRows = ROWS - load.literalRows;
    if (load.literalRows > 0) {
      results.writes.push({
        what: `insert, 1 000 rows per statement as literal text, 0 → ${fmtInt(load.literalRows)} rows (commits)`,
        unit: 'rows/s',
        fenec: load.literalRows / (load.literalMs / 1000),
        baseline: 'raw SQLite + FTS5, 1 000 per transaction',
        raw: load.literalRows / (rawLiteralMs / 1000),
      });
      results.notes.push(
        `the ${load.literalRows / BATCH} literal 1 000-row inserts left the heap ${fmtInt(load.literalHeapGrowth / 2 ** 20)} MiB larger after a full GC ` +
          `(the statement cache keeps each statement's text and parsed tree)`,
      );
    }
    if (paramRows > 0) {
      results.writes.push({
        what: `insert, ${load.rowsPerParamStatement} rows per statement with params, ${fmtInt(load.literalRows)} → ${fmtInt(ROWS)} rows (commits)`,
        unit: 'rows/s',
        fenec: paramRows / (load.paramsMs / 1000),
        baseline: `raw SQLite + FTS5, ${load.rowsPerParamStatement} per transaction`,
        raw: paramRows / (rawParamsMs / 1000),
      });
    }
    const loadMs = load.literalMs + load.paramsMs + load.idleMs;
    results.writes.push({ what: `HNSW build: load until db.idle() (rows committed and indexed)`, unit: 'vectors/s', fenec: ROWS / (loadMs / 1000), baseline: 'raw Faiss addAsync', raw: ROWS / (rawBuildMs / 1000) });
    results.seconds.clusteredLoad = loadMs / 1000;
    results.seconds.clusteredIndexAfterLastCommit = load.idleMs / 1000;
    results.seconds.rawFaissBuild = rawBuildMs / 1000;

    if (REBUILD) {
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
      results.writes.push({ what: 'HNSW build: compact, from the rows until db.idle()', unit: 'vectors/s', fenec: ROWS / (rebuildMs / 1000), baseline: 'raw Faiss addAsync', raw: ROWS / (rawBuildMs / 1000) });
    }

    progress('exact answers (flat index; a scan for the filtered ones)');
    const measured = range(WARM_UP, total);
    const exact = exactNearest(flat, data.queries, measured);
    const passes = (label: number): boolean => grp(label) === GROUP;
    const exactFiltered = measured.map((q) => scanNearest(data.vectors, ROWS, data.queries, q, passes));
    const allow = bitmapOf(ROWS, passes);

    progress(`match: ${MATCH} against raw FTS5`);
    const rawMatch = raw.prepare(RAW_MATCH);
    const match = measurePair(
      (q) => idsOf(db.execute(MATCH, [userTexts[q]])),
      (q) => (rawMatch.raw(true).all(ftsQueries[q], K) as [number, number][]).map(([id]) => id),
    );
    const sameTop = match.ours.out.filter((ids, i) => sameList(ids, match.theirs.out[i]!)).length;
    results.notes.push(`match: ${sameTop} of ${QUERIES} queries answered the same ${K} rows in the same order as raw FTS5 (fenecdb ranks by BM25 with Lucene's IDF, raw FTS5 by its own bm25(), whose IDF is ~0 for a word in half the rows or more: rankings differ where such a word is in the query)`);
    results.queries.push(queryMeasure('match body (2 words)', MATCH, match, `raw FTS5 '"w1" OR "w2"'`, TARGET_RATIO));
    const rare = measurePair(
      (q) => idsOf(db.execute(MATCH, [`${rareWords[q]![0]} ${rareWords[q]![1]}`])),
      (q) => (rawMatch.raw(true).all(`"${rareWords[q]![0]}" OR "${rareWords[q]![1]}"`, K) as [number, number][]).map(([id]) => id),
    );
    results.queries.push(queryMeasure('match body (2 rare words)', MATCH, rare, `raw FTS5 '"w1" OR "w2"'`, TARGET_MATCH_RATIO));

    progress(`near: ${NEAR} against raw Faiss`);
    const near = measurePair(
      (q) => labelsOf(db.execute(NEAR, [queryArrays[q]])),
      (q) => rawSearch(hnsw!, data.queries, q, K),
    );
    results.queries.push(queryMeasure('near vec', NEAR, near, 'raw Faiss HNSW search', TARGET_RATIO));
    results.recall.push({ data: 'clustered', rows: ROWS, query: 'near', fenec: recall(near.ours.out, exact), raw: recall(near.theirs.out, exact), target: TARGET_RECALL });
    efSweep('clustered', ROWS, hnsw, data.queries, measured, exact);

    progress(`filtered near: ${NEAR_FILTERED} against raw Faiss with an allow bitmap`);
    const filtered = measurePair(
      (q) => labelsOf(db.execute(NEAR_FILTERED, [queryArrays[q]])),
      (q) => rawSearch(hnsw!, data.queries, q, K, allow),
    );
    results.queries.push(queryMeasure(`near vec where grp = ${GROUP} (1 %)`, NEAR_FILTERED, filtered, 'raw Faiss, allow bitmap'));
    results.recall.push({ data: 'clustered', rows: ROWS, query: `near where grp = ${GROUP} (1 %)`, fenec: recall(filtered.ours.out, exactFiltered), raw: recall(filtered.theirs.out, exactFiltered) });
    checkFiltered(filtered.ours.out, passes);

    progress(`fuse: ${FUSE} against raw FTS5 + raw Faiss + RRF in JavaScript`);
    const fused = measurePair(
      (q) => idsOf(db.execute(FUSE, [userTexts[q], queryArrays[q]])),
      (q) => {
        const text = (rawMatch.raw(true).all(ftsQueries[q], FUSE_CANDIDATES) as [number, number][]).map(([id]) => id);
        const vector = rawSearch(hnsw!, data.queries, q, FUSE_CANDIDATES).map((label) => label + 1);
        return rrf([text, vector]).slice(0, K);
      },
    );
    const sameFused = fused.ours.out.filter((ids, i) => sameList(ids, fused.theirs.out[i]!)).length;
    results.notes.push(`fuse: ${sameFused} of ${QUERIES} queries answered the same ${K} rows in the same order as the raw composition (its text ranking is FTS5's bm25(), fenecdb's BM25 with Lucene's IDF)`);
    results.queries.push(queryMeasure('match … near … fuse', FUSE, fused, `raw FTS5 + raw Faiss (${FUSE_CANDIDATES} each) + RRF`));

    if (SINGLE_INSERTS > 0) {
      progress(`${SINGLE_INSERTS} single-row inserts, against raw SQLite + Faiss add, one transaction each`);
      const insertOneRaw = raw.transaction((i: number) => {
        insertVector.run(i + 1, blobOf(data.vectors, i), grp(i));
        insertText.run(i + 1, bodies[i]);
      });
      const single = measurePair(
        (n) => {
          const i = ROWS + n;
          db.execute(INSERT_ONE, [bodies[i], Array.from(data.vectors.subarray(i * DIMS, (i + 1) * DIMS)), grp(i)]);
        },
        (n) => {
          const i = ROWS + n;
          insertOneRaw(i);
          hnsw!.add(data.vectors.subarray(i * DIMS, (i + 1) * DIMS));
        },
        SINGLE_INSERTS,
        0,
      );
      results.writes.push({
        what: `insert, 1 row per statement with params, into ${fmtInt(ROWS)} rows (each vector added to the index at commit)`,
        unit: 'rows/s',
        fenec: SINGLE_INSERTS / (sum(single.ours.ms) / 1000),
        baseline: 'raw SQLite + FTS5 transaction, then raw Faiss add',
        raw: SINGLE_INSERTS / (sum(single.theirs.ms) / 1000),
      });
      results.notes.push(
        `insert of 1 row: p50 ${fmtMs(percentile(single.ours.ms, 0.5))} ms, p99 ${fmtMs(percentile(single.ours.ms, 0.99))} ms ` +
          `(raw: ${fmtMs(percentile(single.theirs.ms, 0.5))} / ${fmtMs(percentile(single.theirs.ms, 0.99))} ms)`,
      );
    }

    if (LOADED_BATCHES > 0) {
      progress(`${LOADED_BATCHES} inserts of 1 000 rows into the loaded index, against raw SQLite + Faiss addAsync`);
      let commitMs = 0;
      let indexedMs = 0;
      let rawMs = 0;
      const scanMs: number[] = [];
      for (let b = 0; b < LOADED_BATCHES; b++) {
        const from = ROWS + SINGLE_INSERTS + b * BATCH;
        const text = `insert into docs [${range(from, from + BATCH).map(row).join(', ')}]`;
        const t0 = performance.now();
        db.execute(text);
        const t1 = performance.now();
        // While the batch goes into the index on Faiss's thread, searches scan the rows exactly.
        scanMs.push(time(() => db.execute(NEAR, [queryArrays[WARM_UP + b]])));
        const t2 = performance.now();
        await db.idle();
        commitMs += t1 - t0;
        indexedMs += performance.now() - t2 + (t1 - t0);
        const r0 = performance.now();
        insertRaw(from, from + BATCH);
        await hnsw.addAsync(data.vectors.subarray(from * DIMS, (from + BATCH) * DIMS));
        rawMs += performance.now() - r0;
      }
      const rows = LOADED_BATCHES * BATCH;
      results.writes.push(
        { what: `insert, 1 000 rows per statement as literal text, into ${fmtInt(ROWS)} rows (commits)`, unit: 'rows/s', fenec: rows / (commitMs / 1000), baseline: 'raw SQLite + FTS5, no vector index', raw: undefined },
        { what: `insert, 1 000 rows per statement as literal text, into ${fmtInt(ROWS)} rows, until db.idle()`, unit: 'rows/s', fenec: rows / (indexedMs / 1000), baseline: 'raw SQLite + FTS5, then raw Faiss addAsync', raw: rows / (rawMs / 1000) },
      );
      results.notes.push(`near while a 1 000-row add runs (an exact scan of the rows): ${scanMs.map(fmtMs).join(', ')} ms`);
    }

    const snapshots = events.filter((e) => e.kind === 'snapshot_written');
    if (snapshots.length > 0) results.notes.push(`vector index snapshots written: ${snapshots.length}, the last ${snapshots.at(-1)!.message.replace(/^.*: /, '')}`);
    const failures = events.filter((e) => e.kind !== 'snapshot_written');
    for (const failure of failures) results.notes.push(`VECTOR INDEX EVENT (figures not to be trusted): ${failure.kind}: ${failure.message}`);
  } finally {
    hnsw?.dispose();
    flat?.dispose();
    raw.close();
    db.close();
  }
}

/** Recall and `near` latency on uniform random vectors, the worst case for HNSW. */
async function uniformRun(dir: string): Promise<void> {
  progress(`generating ${UNIFORM_ROWS} rows (uniform vectors)`);
  const total = QUERIES + WARM_UP;
  const data = uniformData(UNIFORM_ROWS, total, DIMS, seededRandom(SEED + 1));
  const queryArrays = arraysOf(data.queries, total);
  const grp = (i: number): number => i % GROUPS;
  const db = FenecDatabase.open({ file: path.join(dir, 'uniform.fenec'), readOnly: false, program: 'search-bench', sweepIntervalMs: 0 });
  let hnsw: VectorIndex | undefined;
  let flat: VectorIndex | undefined;
  try {
    db.execute(CREATE_UNIFORM);
    const load = await loadFenec(db, UNIFORM_ROWS, 0, {
      collection: 'uni',
      literal: (i) => `{vec: ${vectorLiteral(data.vectors, i, DIMS)}, grp: ${grp(i)}}`,
      fields: ['vec', 'grp'],
      values: (i) => [Array.from(data.vectors.subarray(i * DIMS, (i + 1) * DIMS)), grp(i)],
    });
    progress('raw Faiss: HNSW addAsync of the uniform vectors');
    hnsw = faiss.create({ kind: 'hnsw', dims: DIMS, metric: 'ip', m: DEFAULT_M, efConstruction: EF_CONSTRUCTION, efSearch: DEFAULT_EF_SEARCH });
    const rawBuildStart = performance.now();
    await hnsw.addAsync(data.vectors);
    const rawBuildMs = performance.now() - rawBuildStart;
    flat = faiss.create({ kind: 'flat', dims: DIMS, metric: 'ip' });
    flat.add(data.vectors);
    results.writes.push({
      what: `HNSW build, uniform vectors: load until db.idle()`,
      unit: 'vectors/s',
      fenec: UNIFORM_ROWS / ((load.literalMs + load.paramsMs + load.idleMs) / 1000),
      baseline: 'raw Faiss addAsync',
      raw: UNIFORM_ROWS / (rawBuildMs / 1000),
    });
    results.seconds.uniformLoad = (load.literalMs + load.paramsMs + load.idleMs) / 1000;
    results.seconds.uniformRawFaissBuild = rawBuildMs / 1000;

    const measured = range(WARM_UP, total);
    const exact = exactNearest(flat, data.queries, measured);
    const passes = (label: number): boolean => grp(label) === GROUP;
    const exactFiltered = measured.map((q) => scanNearest(data.vectors, UNIFORM_ROWS, data.queries, q, passes));
    const allow = bitmapOf(UNIFORM_ROWS, passes);

    progress(`uniform near: ${UNIFORM_NEAR}`);
    const near = measurePair(
      (q) => labelsOf(db.execute(UNIFORM_NEAR, [queryArrays[q]])),
      (q) => rawSearch(hnsw!, data.queries, q, K),
    );
    results.queries.push(queryMeasure(`near vec, uniform ${fmtInt(UNIFORM_ROWS)}`, UNIFORM_NEAR, near, 'raw Faiss HNSW search', TARGET_RATIO));
    results.recall.push({ data: 'uniform', rows: UNIFORM_ROWS, query: 'near', fenec: recall(near.ours.out, exact), raw: recall(near.theirs.out, exact) });
    efSweep('uniform', UNIFORM_ROWS, hnsw, data.queries, measured, exact);
    const filtered = measurePair(
      (q) => labelsOf(db.execute(UNIFORM_NEAR_FILTERED, [queryArrays[q]])),
      (q) => rawSearch(hnsw!, data.queries, q, K, allow),
    );
    results.recall.push({ data: 'uniform', rows: UNIFORM_ROWS, query: `near where grp = ${GROUP} (1 %)`, fenec: recall(filtered.ours.out, exactFiltered), raw: recall(filtered.theirs.out, exactFiltered) });
    checkFiltered(filtered.ours.out, passes);
  } finally {
    hnsw?.dispose();
    flat?.dispose();
    db.close();
  }
}

interface Loader {
  readonly collection: string;
  /** Row i as a FenecQL object literal. */
  readonly literal: (i: number) => string;
  /** The collection's fields, and row i's values for them as params. */
  readonly fields: readonly string[];
  readonly values: (i: number) => unknown[];
}

interface LoadTimes {
  readonly literalRows: number;
  readonly literalMs: number;
  /** Heap after a full GC, after the literal inserts, less before them. */
  readonly literalHeapGrowth: number;
  readonly rowsPerParamStatement: number;
  readonly paramsMs: number;
  /** From the last commit until db.idle() resolved. */
  readonly idleMs: number;
}

/**
 * Inserts rows 0 … rows-1: the first `literalRows` in statements of BATCH rows written as literal text
 * (the statement text is made outside the timing), the rest with parameters, as many rows per
 * statement as $1 … $99 allow, the same statement text each time. Then waits for the vector index.
 * Checks that row i got id i + 1 (the bench maps ids to labels so).
 *
 * Why not every row as literal text: the database keeps each statement's text and parsed tree in
 * its cache of recent statements (up to 2 000 of them), about 57 MiB for 1 000 rows of 384 numbers,
 * so 100 such statements outgrow Node's default heap of about 4 GiB.
 */
async function loadFenec(db: FenecDatabase, rows: number, literalRows: number, loader: Loader): Promise<LoadTimes> {
  literalRows = Math.min(rows, literalRows);
  const perStatement = Math.floor(MAX_PARAMS / loader.fields.length);
  progress(`fenecdb: ${rows} rows into ${loader.collection}: ${literalRows} ${BATCH} per statement as text, the rest ${perStatement} per statement with params; then db.idle()`);
  const check = (answer: unknown, from: number, to: number): void => {
    const ids = (answer as { ids: number[] }).ids;
    if (ids.length !== to - from || ids.some((id, j) => id !== from + j + 1)) throw new Error(`rows ${from + 1}…${to} got ids ${ids.slice(0, 3).join(', ')}…`);
  };
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  let literalMs = 0;
  for (let from = 0; from < literalRows; from += BATCH) {
    const to = Math.min(literalRows, from + BATCH);
    const text = `insert into ${loader.collection} [${range(from, to).map(loader.literal).join(', ')}]`;
    const t0 = performance.now();
    const answer = db.execute(text);
    literalMs += performance.now() - t0;
    check(answer, from, to);
  }
  collectGarbage();
  const literalHeapGrowth = process.memoryUsage().heapUsed - heapBefore;
  const rowText = `{${loader.fields.map((field, f) => `${field}: $${f + 1}`).join(', ')}}`;
  const statementOf = (n: number): string =>
    `insert into ${loader.collection} [${range(0, n).map((r) => rowText.replace(/\$(\d+)/g, (_, f: string) => `$${r * loader.fields.length + Number(f)}`)).join(', ')}]`;
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
  return { literalRows, literalMs, literalHeapGrowth, rowsPerParamStatement: perStatement, paramsMs, idleMs: performance.now() - t0 };
}

/**
 * Runs ours(q) and theirs(q) for q in [warmUp, warmUp + count), back to back, the order swapped every
 * q, after the first warmUp unmeasured.
 */
function measurePair<A, B>(ours: (q: number) => A, theirs: (q: number) => B, count = QUERIES, warmUp = WARM_UP): { ours: Timed<A>; theirs: Timed<B> } {
  for (let q = 0; q < warmUp; q++) {
    ours(q);
    theirs(q);
  }
  const a: Timed<A> = { ms: [], out: [] };
  const b: Timed<B> = { ms: [], out: [] };
  const once = <T>(call: (q: number) => T, into: Timed<T>, q: number): void => {
    const t0 = performance.now();
    const out = call(q);
    into.ms.push(performance.now() - t0);
    into.out.push(out);
  };
  for (let q = warmUp; q < warmUp + count; q++) {
    if (q % 2 === 0) {
      once(ours, a, q);
      once(theirs, b, q);
    } else {
      once(theirs, b, q);
      once(ours, a, q);
    }
  }
  return { ours: a, theirs: b };
}

function queryMeasure(query: string, statement: string, pair: { ours: Timed<unknown>; theirs: Timed<unknown> }, baseline: string, target?: number): QueryMeasure {
  const p50 = percentile(pair.ours.ms, 0.5);
  const baselineP50 = percentile(pair.theirs.ms, 0.5);
  return {
    query,
    statement,
    p50Ms: p50,
    p99Ms: percentile(pair.ours.ms, 0.99),
    baseline,
    baselineP50Ms: baselineP50,
    baselineP99Ms: percentile(pair.theirs.ms, 0.99),
    ratioP50: p50 / baselineP50,
    ...(target === undefined ? {} : { target }),
  };
}

/** The rows' ids, in order. */
function idsOf(answer: unknown): number[] {
  return (answer as { rows: { id: number }[] }).rows.map((r) => r.id);
}

/** The rows' labels in the bench's vector arrays (row id i + 1 holds vector i). */
function labelsOf(answer: unknown): number[] {
  return idsOf(answer).map((id) => id - 1);
}

function rawSearch(index: VectorIndex, queries: Float32Array, q: number, k: number, allow?: Uint8Array): number[] {
  const found = index.search(queries.subarray(q * DIMS, (q + 1) * DIMS), k, { efSearch: DEFAULT_EF_SEARCH, ...(allow === undefined ? {} : { allow }) });
  return Array.from(found.labels).filter((label) => label >= 0);
}

/** recall@10 and p50 of the raw index at each efSearch of EF_SWEEP. */
function efSweep(data: string, rows: number, index: VectorIndex, queries: Float32Array, measured: readonly number[], exact: readonly (readonly number[])[]): void {
  progress(`raw Faiss, ${data}: efSearch ${EF_SWEEP.join(', ')}`);
  for (const efSearch of EF_SWEEP) {
    const ms: number[] = [];
    const found: number[][] = [];
    for (const q of measured) {
      const t0 = performance.now();
      const labels = index.search(queries.subarray(q * DIMS, (q + 1) * DIMS), K, { efSearch }).labels;
      ms.push(performance.now() - t0);
      found.push(Array.from(labels));
    }
    results.efSweep.push({ data, rows, efSearch, recall: recall(found, exact), p50Ms: percentile(ms, 0.5) });
  }
}

/** The exact k nearest of each query, from the flat index, all queries in one call (BLAS). */
function exactNearest(flat: VectorIndex, queries: Float32Array, measured: readonly number[]): number[][] {
  const first = measured[0]!;
  const found = flat.search(queries.subarray(first * DIMS, (first + measured.length) * DIMS), K);
  return measured.map((_, i) => Array.from(found.labels.subarray(i * K, (i + 1) * K)));
}

/** The exact k nearest (by inner product) of query q among the rows that pass, by a scan. */
function scanNearest(vectors: Float32Array, rows: number, queries: Float32Array, q: number, passes: (label: number) => boolean): number[] {
  const scored: [number, number][] = [];
  for (let i = 0; i < rows; i++) {
    if (!passes(i)) continue;
    let dot = 0;
    for (let j = 0; j < DIMS; j++) dot += vectors[i * DIMS + j]! * queries[q * DIMS + j]!;
    scored.push([i, dot]);
  }
  return scored.sort((a, b) => b[1] - a[1]).slice(0, K).map(([i]) => i);
}

/** Mean share of the exact top k found. */
function recall(found: readonly (readonly number[])[], exact: readonly (readonly number[])[]): number {
  let hits = 0;
  found.forEach((labels, i) => {
    const truth = new Set(exact[i]);
    hits += labels.filter((label) => truth.has(label)).length;
  });
  return hits / (found.length * K);
}

/** A filtered `near` must answer `limit` rows, each passing the filter. */
function checkFiltered(answers: readonly (readonly number[])[], passes: (label: number) => boolean): void {
  const short = answers.filter((labels) => labels.length !== K).length;
  const wrong = answers.filter((labels) => labels.some((label) => !passes(label))).length;
  if (short > 0 || wrong > 0) results.notes.push(`FILTERED NEAR WRONG: ${short} answers short of ${K} rows, ${wrong} with a row the filter refuses`);
}

/** Reciprocal rank fusion, as node/query/run-vector.ts fuses (ties by id). */
function rrf(rankings: readonly (readonly number[])[]): number[] {
  const scores = new Map<number, number>();
  for (const ranking of rankings) ranking.forEach((id, index) => scores.set(id, (scores.get(id) ?? 0) + 1 / (RRF_K + index + 1)));
  return [...scores].sort((a, b) => b[1] - a[1] || a[0] - b[0]).map(([id]) => id);
}

function bitmapOf(rows: number, passes: (label: number) => boolean): Uint8Array {
  const bits = new Uint8Array(Math.ceil(rows / 8));
  for (let i = 0; i < rows; i++) if (passes(i)) bits[i >> 3]! |= 1 << (i & 7);
  return bits;
}

function blobOf(vectors: Float32Array, i: number): Buffer {
  return Buffer.from(vectors.buffer, vectors.byteOffset + i * DIMS * 4, DIMS * 4);
}

/** Each query vector as the plain array a client's JSON params arrive as. */
function arraysOf(queries: Float32Array, count: number): number[][] {
  return range(0, count).map((q) => Array.from(queries.subarray(q * DIMS, (q + 1) * DIMS)));
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}

function time(call: () => unknown): number {
  const t0 = performance.now();
  call();
  return performance.now() - t0;
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}

function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function fmtMs(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US').replaceAll(',', ' ');
}

function table(header: readonly string[], lines: readonly (readonly string[])[]): string {
  const widths = header.map((cell, i) => Math.max(cell.length, ...lines.map((line) => line[i]!.length)));
  const row = (cells: readonly string[]): string => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  return [row(header), ...lines.map(row)].join('\n');
}

function verdict(met: boolean): string {
  return met ? 'met' : 'MISSED';
}

function report(loadBefore: number[], loadAfter: number[]): void {
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  const queries = table(
    ['query', 'p50 ms', 'p99 ms', 'baseline', 'p50 ms', 'p99 ms', 'p50 ratio'],
    results.queries.map((m) => [m.query, fmtMs(m.p50Ms), fmtMs(m.p99Ms), m.baseline, fmtMs(m.baselineP50Ms), fmtMs(m.baselineP99Ms), m.ratioP50.toFixed(2)]),
  );
  const recalls = table(
    ['recall@10 vs exact', 'rows', 'fenecdb near', 'raw Faiss HNSW'],
    results.recall.map((m) => [`${m.data}, ${m.query}`, fmtInt(m.rows), m.fenec.toFixed(3), m.raw.toFixed(3)]),
  );
  const sweeps = [...new Set(results.efSweep.map((m) => m.data))].flatMap((data) => {
    const of = results.efSweep.filter((m) => m.data === data);
    const name = `${data} ${fmtInt(of[0]!.rows)}`;
    return [[`${name}, recall@10`, ...of.map((m) => m.recall.toFixed(3))], [`${name}, p50 ms`, ...of.map((m) => fmtMs(m.p50Ms))]];
  });
  const sweep = table(['raw Faiss HNSW by efSearch', ...EF_SWEEP.map((ef) => `ef ${ef}`)], sweeps);
  const writes = table(
    ['write', 'fenecdb', 'baseline', 'raw', 'ratio'],
    results.writes.map((m) => [
      m.what,
      `${fmtInt(m.fenec)} ${m.unit}`,
      m.baseline,
      m.raw === undefined ? '' : `${fmtInt(m.raw)} ${m.unit}`,
      m.raw === undefined ? '' : (m.fenec / m.raw).toFixed(2),
    ]),
  );
  const targets: string[] = [];
  for (const m of results.recall) if (m.target !== undefined) targets.push(`target: recall@10 ≥ ${m.target} (${m.data}, ${m.query}, ef ${DEFAULT_EF_SEARCH}) — ${m.fenec.toFixed(3)} ${verdict(m.fenec >= m.target)}`);
  for (const m of results.queries) if (m.target !== undefined) targets.push(`target: ${m.query} p50 ≤ ${m.target}× ${m.baseline} — ${m.ratioP50.toFixed(2)}× ${verdict(m.ratioP50 <= m.target)}`);
  const elapsed = (performance.now() - started) / 1000;
  process.stdout.write(
    `\nsearch-bench: ${fmtInt(ROWS)} rows (${VOCABULARY}-word Zipf vocabulary; ${DIMS}-dim normalised Gaussian mixture of ${CLUSTERS} centres, spread ${SPREAD})` +
      `${UNIFORM_ROWS > 0 ? ` and ${fmtInt(UNIFORM_ROWS)} uniform` : ''}, ${QUERIES} queries each after ${WARM_UP} warm-up, ` +
      `HNSW M ${DEFAULT_M} efConstruction ${EF_CONSTRUCTION} efSearch ${DEFAULT_EF_SEARCH}; ${os.cpus().length} cores, Node ${process.versions.node}, ` +
      `load average ${load(loadBefore)} before, ${load(loadAfter)} after; ${elapsed.toFixed(0)} s\n\n` +
      `${queries}\n\n${recalls}\n\n${sweep}\n\n${writes}\n\n` +
      `${targets.join('\n')}\n` +
      `${results.notes.map((note) => `note: ${note}`).join('\n')}\n`,
  );
  fs.mkdirSync(path.dirname(RESULTS), { recursive: true });
  const json = {
    bench: 'search',
    date: new Date().toISOString(),
    node: process.versions.node,
    cores: os.cpus().length,
    loadAverage: { before: loadBefore, after: loadAfter },
    seconds: { total: elapsed, ...results.seconds },
    config: {
      rows: ROWS,
      uniformRows: UNIFORM_ROWS,
      queries: QUERIES,
      warmUp: WARM_UP,
      singleInserts: SINGLE_INSERTS,
      loadedBatches: LOADED_BATCHES,
      clusters: CLUSTERS,
      spread: SPREAD,
      seed: SEED,
      dims: DIMS,
      vocabulary: VOCABULARY,
      zipfExponent: ZIPF_EXPONENT,
      hnsw: { m: DEFAULT_M, efConstruction: EF_CONSTRUCTION, efSearch: DEFAULT_EF_SEARCH },
    },
    targets: { recallAt10: TARGET_RECALL, p50Ratio: TARGET_RATIO },
    queries: results.queries,
    recall: results.recall,
    efSweep: results.efSweep,
    writes: results.writes,
    notes: results.notes,
  };
  fs.writeFileSync(RESULTS, `${JSON.stringify(json, null, 2)}\n`);
  process.stdout.write(`written: ${path.relative(process.cwd(), RESULTS) || RESULTS}\n`);
}

/** A full garbage collection (for the heap figure), without asking for node --expose-gc. */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

function progress(message: string): void {
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
}

function intEnv(name: string, fallback: number, min: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be a whole number ≥ ${min}, not ${text}`);
  return value;
}

function numberEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!(value > 0)) throw new Error(`${name} must be a positive number, not ${text}`);
  return value;
}

await main();
