/**
 * Tables of rows with `@hnsw` vector columns over a real `.fenec` file, with the vector log's
 * triggers, for the vector store's tests; and the brute-force reference that vector searches are held
 * to. Shared by the vector store's tests and the crash fixture.
 *
 * The store reads the vectors of a field from the table its spec names (VectorFieldSpec.table): the
 * product keeps each vector field in a table of its own (catalog.ts), and a file of the older layout
 * in the row's table. These tests keep them in the row's table, `c_docs (id, vec, tag)`, so that one
 * SQL statement writes a row and its vectors.
 */
import { expect } from 'chai';
import type { CreateCollectionStmt, Metric } from '../../shared/fenecql/ast.js';
import { parseStatement } from '../../shared/fenecql/parser.js';
import { columnType } from '../../node/storage/codec.js';
import { ident, type Connection } from '../../node/storage/sqlite.js';
import { vectorFieldSql, type VectorFieldSpec } from '../../node/vector/store.js';

/** The collection test/fixtures/vector-writer.ts writes, and its fields as the store takes them. */
export const WRITER_DEFINITION = 'docs (a vector<16> @hnsw(cosine, m = 16), b vector<8> @hnsw(l2), tag int)';
export const WRITER_SPECS: readonly VectorFieldSpec[] = [
  { collection: 'docs', field: 'a', table: '"c_docs"', dims: 16, metric: 'cosine', m: 16 },
  { collection: 'docs', field: 'b', table: '"c_docs"', dims: 8, metric: 'l2' },
];
/** The writer keeps about this many rows, so that a search with efSearch ≥ ntotal stays exact. */
export const WRITER_TARGET_ROWS = 1500;

export interface Scored {
  readonly rowId: number;
  readonly score: number;
}

/**
 * Creates the table `c_<name>` of a FenecQL definition (`docs (vec vector<16> @hnsw(cosine), tag
 * int)`), every field a column of it, with the triggers of its `@hnsw` fields, in one transaction;
 * returns the specs of those fields.
 */
export function createCollection(db: Connection, definition: string): VectorFieldSpec[] {
  const stmt = parseStatement(`create collection ${definition}`) as CreateCollectionStmt;
  const specs = specsOf(stmt);
  const columns = [
    '"id" INTEGER PRIMARY KEY AUTOINCREMENT',
    ...stmt.fields.map((def) => `${ident(def.name)} ${columnType(def.type)}`),
  ];
  db.transaction(() => {
    db.exec(`CREATE TABLE ${tableOf(stmt.name)} (${columns.join(', ')}) STRICT`);
    for (const spec of specs)
      for (const sql of vectorFieldSql(spec.collection, spec.field, spec.table).create) db.exec(sql);
  })();
  return specs;
}

function tableOf(collection: string): string {
  return ident(`c_${collection}`);
}

/** The `@hnsw` fields of a definition, as the store takes them. */
export function specsOf(stmt: CreateCollectionStmt): VectorFieldSpec[] {
  const specs: VectorFieldSpec[] = [];
  for (const def of stmt.fields) {
    const hnsw = def.annotations.find((a) => a.kind === 'hnsw');
    if (hnsw === undefined || hnsw.kind !== 'hnsw' || def.type.kind !== 'vector') continue;
    specs.push({
      collection: stmt.name,
      field: def.name,
      table: tableOf(stmt.name),
      dims: def.type.dims,
      metric: hnsw.metric,
      m: hnsw.m,
      ef: hnsw.ef,
    });
  }
  return specs;
}

/** A vector as the codec stores it: little-endian float32. */
export function blob(v: ArrayLike<number>): Buffer {
  const out = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) out.writeFloatLE(v[i]!, i * 4);
  return out;
}

/** A random vector of uniform components in [-1, 1). */
export function randomVector(dims: number, random: () => number): Float32Array {
  return Float32Array.from({ length: dims }, () => random() * 2 - 1);
}

/**
 * The reference answer: every row of the table scored in float64 by fenecql.md's formulas (cosine:
 * similarity, 0 for a zero vector; l2: 1/(1+d); ip: the inner product), best first, ties by id.
 */
export function bruteForce(
  db: Connection,
  collection: string,
  field: string,
  query: ArrayLike<number>,
  metric: Metric,
  k: number,
  allowed?: ReadonlySet<number>,
): Scored[] {
  const rows = db
    .prepare(`SELECT "id", ${ident(field)} AS v FROM ${ident(`c_${collection}`)} WHERE ${ident(field)} IS NOT NULL`)
    .all() as { id: number; v: Buffer }[];
  const q = Array.from(query);
  const qNorm = Math.hypot(...q);
  const scored: Scored[] = [];
  for (const { id, v } of rows) {
    if (allowed !== undefined && !allowed.has(id)) continue;
    const x = Array.from({ length: v.length / 4 }, (_, i) => v.readFloatLE(i * 4));
    let dot = 0;
    let dist = 0;
    for (let i = 0; i < q.length; i++) {
      dot += q[i]! * x[i]!;
      dist += (q[i]! - x[i]!) ** 2;
    }
    const xNorm = Math.hypot(...x);
    const score =
      metric === 'l2' ? 1 / (1 + Math.sqrt(dist)) : metric === 'ip' ? dot : xNorm === 0 ? 0 : dot / (qNorm * xNorm);
    scored.push({ rowId: id, score });
  }
  return scored.sort((a, b) => b.score - a.score || a.rowId - b.rowId).slice(0, k);
}

/**
 * The same rows in the same order with scores within `tolerance`. Rows whose scores differ by less
 * than 1e-5 are a tie that float32 arithmetic may order either way: within such a run the order is
 * free, and at the end of the list either of two tied rows may be the one kept.
 */
export function expectSameAnswer(
  got: readonly Scored[],
  want: readonly Scored[],
  context: string,
  tolerance = 1e-4,
): void {
  expect(got.length, `${context}: row count`).to.equal(want.length);
  const tie = 1e-5;
  for (let i = 0; i < want.length; i++) {
    expect(got[i]!.score, `${context}: score of rank ${i}`).to.be.closeTo(want[i]!.score, tolerance);
    if (got[i]!.rowId === want[i]!.rowId) continue;
    // A different row at this rank must be tied with the expected one, and itself expected nearby or cut off by the
    // tie.
    const tied = Math.abs(got[i]!.score - want[i]!.score) < tie;
    const elsewhere = want.findIndex((w) => w.rowId === got[i]!.rowId);
    const explained =
      tied &&
      (elsewhere === -1
        ? i >= want.length - 1 || Math.abs(want[want.length - 1]!.score - got[i]!.score) < tie
        : Math.abs(want[elsewhere]!.score - got[i]!.score) < tie);
    expect(
      explained,
      `${context}: rank ${i} is row ${got[i]!.rowId} (${got[i]!.score}), expected row ${want[i]!.rowId} (${want[i]!.score})`,
    ).to.equal(true);
  }
}
