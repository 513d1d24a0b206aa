/**
 * make peers-bench's LanceDB: a small node:http server in a process of its own, as fenec-server runs in its own,
 * holding one LanceDB table on disk, `docs (id, body, vec float32 × 384, grp)`, so that both are measured from
 * outside by the same client. LanceDB is not a dependency of fenecdb: it is loaded from the folder --peers names
 * (bench/peers/, where bench/peers.sh installs it).
 *
 * POST /rows `{rows: [{id, body, vec, grp}, …]}` adds a batch; POST /index compacts the batches and builds the
 * indexes (the vector index --index over `vec`, cosine, and a bitmap index over `grp`), answering once they serve,
 * with the seconds it took; POST /query
 * `{statement, params}` answers the statements of make peers-bench's `near` and filtered `near` (docs-load.ts's
 * READS, the same bodies fenecdb is sent) as fenecdb answers them: `{rows: [{id, body, grp, _score}], count}`,
 * `_score` the cosine similarity. Logs `{"msg":"listening","url":…}` on stderr once listening.
 *
 * Flags: --dir (the table's folder), --peers, --index `hnsw_sq` (default) or `ivf_pq`, --partitions (IVF's; default: 1
 * for hnsw_sq, as LanceDB advises, and LanceDB's, the square root of the rows, for ivf_pq), --sub-vectors (PQ's,
 * default 48: 8 dimensions each), --nprobes (default 20), --refine-factor (default 10: the PQ candidates re-ranked by
 * their full vectors), --ef (HNSW's, default 100). HNSW_SQ is the default as the one that reaches recall@10 ≥ 0.95
 * here: at 5 000 rows IVF_PQ with 20 or 40 probes and a refine factor of 10 found 0.92 of the exact top 10 (and took
 * 36 s to build on a loaded machine, HNSW_SQ 2 s).
 */
import { createRequire } from 'node:module';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { READS } from './docs-load.js';
import { DIMS, GROUP, K } from './search-data.js';

const { values: flags } = parseArgs({
  options: {
    dir: { type: 'string' },
    peers: { type: 'string' },
    index: { type: 'string', default: 'hnsw_sq' },
    partitions: { type: 'string' },
    'sub-vectors': { type: 'string', default: String(DIMS / 8) },
    nprobes: { type: 'string', default: '20' },
    'refine-factor': { type: 'string', default: '10' },
    ef: { type: 'string', default: '100' },
  },
});
if (flags.dir === undefined || flags.peers === undefined) throw new Error('lance-server takes --dir and --peers');
if (flags.index !== 'ivf_pq' && flags.index !== 'hnsw_sq')
  throw new Error(`--index takes ivf_pq or hnsw_sq, not ${flags.index}`);
const whole = (name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} takes a whole number ≥ 1, not ${text}`);
  return n;
};
const PARTITIONS = whole('partitions', flags.partitions) ?? (flags.index === 'hnsw_sq' ? 1 : undefined);
const SUB_VECTORS = whole('sub-vectors', flags['sub-vectors'])!;
const NPROBES = whole('nprobes', flags.nprobes)!;
const REFINE = whole('refine-factor', flags['refine-factor'])!;
const EF = whole('ef', flags.ef)!;

// LanceDB and its Arrow, from the peers' own node_modules (their types are not this tree's to check).
const peers = createRequire(path.join(path.resolve(flags.peers), 'package.json'));
const lancedb = peers('@lancedb/lancedb');
const arrow = peers('apache-arrow');

const schema = new arrow.Schema([
  new arrow.Field('id', new arrow.Int32(), false),
  new arrow.Field('body', new arrow.Utf8(), false),
  new arrow.Field('vec', new arrow.FixedSizeList(DIMS, new arrow.Field('item', new arrow.Float32(), true)), false),
  new arrow.Field('grp', new arrow.Int32(), false),
]);
const db = await lancedb.connect(path.resolve(flags.dir));
const table = await db.createEmptyTable('docs', schema, { mode: 'overwrite' });

/** What each statement of READS asks LanceDB: the query vector is params[0], as fenecdb takes it. */
const SEARCHES: Record<string, (vector: number[]) => any> = {
  [READS.near]: (vector) => search(vector),
  [READS['filtered near']]: (vector) => search(vector).where(`grp = ${GROUP}`),
};

function search(vector: number[]): any {
  const query = table.vectorSearch(vector).column('vec').distanceType('cosine').select(['id', 'body', 'grp']);
  const tuned = flags.index === 'ivf_pq' ? query.nprobes(NPROBES).refineFactor(REFINE) : query.ef(EF);
  return tuned.limit(K);
}

async function buildIndexes(): Promise<unknown> {
  const t0 = performance.now();
  // Every batch added is a fragment of its own: compacted first, as LanceDB advises before indexing.
  await table.optimize();
  const options = { distanceType: 'cosine', numPartitions: PARTITIONS };
  const config =
    flags.index === 'ivf_pq'
      ? lancedb.Index.ivfPq({ ...options, numSubVectors: SUB_VECTORS })
      : lancedb.Index.hnswSq({ ...options, efConstruction: 300 });
  await table.createIndex('vec', { config });
  await table.createIndex('grp', { config: lancedb.Index.bitmap() });
  await table.waitForIndex(['vec_idx', 'grp_idx'], 600);
  return { seconds: (performance.now() - t0) / 1000, indexes: await table.listIndices() };
}

async function answer(route: string, body: any): Promise<unknown> {
  if (route === '/rows') {
    await table.add(body.rows);
    return { count: body.rows.length };
  }
  if (route === '/index') return buildIndexes();
  if (route === '/query') {
    const run = SEARCHES[body.statement];
    if (run === undefined) throw new Error(`lance-server answers only make peers-bench's near statements`);
    const found: any[] = await run(body.params[0]).toArray();
    const rows = found.map((r) => ({ id: r.id, body: r.body, grp: r.grp, _score: 1 - r._distance }));
    return { rows, count: rows.length };
  }
  throw new Error(`no route ${route}`);
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const send = (status: number, json: unknown): void => {
      const text = JSON.stringify(json);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    answer(req.url ?? '/', JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')).then(
      (json) => send(200, json),
      (error: Error) => send(400, { error: error.message }),
    );
  });
});
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => process.exit(0));
server.listen(0, '127.0.0.1', () => {
  process.stderr.write(
    `${JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`,
  );
});
