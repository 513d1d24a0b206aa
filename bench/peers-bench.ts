/**
 * `make peers-bench`: a one-file fenec-server (its default: statements on the serving thread) beside LanceDB
 * (bench/lance-server.ts, a Node.js server of its own over a LanceDB table on disk, installed into bench/peers/ by
 * bench/peers.sh), in one run on the same rows, as ratios fenecdb ÷ LanceDB (issue 29's peer targets):
 *
 * - `near` and filtered `near` (`where grp = 7`, 1 % of the rows) top 10 over BENCH_ROWS rows (default 50 000) of
 *   `docs (body text @text, vec vector<384> @hnsw(cosine), grp int @hash)` (bench/docs-load.ts), one client over
 *   HTTP, p50 of BENCH_QUERIES queries (default 200), the two servers asked query by query in turns, the order
 *   swapped each query, after 20 unmeasured;
 * - the recall@10 of each against the exact answers (a flat scan), which the p50s are only comparable at;
 * - the load, one server after the other, in batches of 100 rows over HTTP, until the vector index serves them and
 *   the server is idle; then each server process's RSS.
 *
 * LanceDB's side builds its index after the load (flags passed on to bench/lance-server.ts): `--index hnsw_sq`
 * (default: the one at recall@10 ≥ 0.95 here) or `ivf_pq` (LanceDB's advice where searches filter), `--partitions`,
 * `--sub-vectors`, `--nprobes`, `--refine-factor`, `--ef`. Env: BENCH_ROWS, BENCH_QUERIES, PEERS_DIR (default
 * bench/peers).
 * Writes bench/results/peers.json.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  docsWorkload,
  loadDocs,
  post,
  READS,
  ROWS_PER_INSERT,
  rssMb,
  untilIdle,
  type ReadName,
  type Server,
} from './docs-load.js';
import { intEnv, progress, Programs, ROOT, runInfo, table, turnOrder, verdict, writeResults } from './harness.js';
import { exactNearest, recall, scanNearest } from './search-raw.js';
import { DIMS, K, passesFilter, vectorJson, type Workload } from './search-data.js';
import { percentile } from './stats.js';

const LANCE_FLAGS = ['index', 'partitions', 'sub-vectors', 'nprobes', 'refine-factor', 'ef'] as const;
const { values: flags } = parseArgs({
  options: Object.fromEntries(LANCE_FLAGS.map((f) => [f, { type: 'string' as const }])),
});
const ROWS = intEnv('BENCH_ROWS', 50_000, 1_000);
const QUERIES = intEnv('BENCH_QUERIES', 200, 10);
const PEERS_DIR = path.resolve(ROOT, process.env.PEERS_DIR ?? 'bench/peers');
const TOKEN = randomBytes(16).toString('hex');
const NEAR_READS = ['near', 'filtered near'] as const satisfies readonly ReadName[];
type NearRead = (typeof NEAR_READS)[number];
const RECALL_TARGET = 0.95;

const programs = new Programs();

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(PEERS_DIR, 'node_modules/@lancedb/lancedb')))
    throw new Error(`${PEERS_DIR} holds no LanceDB: run bash bench/peers.sh (make peers-bench does)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-peers-'));
  try {
    const lanceArgs = LANCE_FLAGS.flatMap((f) => (flags[f] === undefined ? [] : [`--${f}`, flags[f] as string]));
    const fenec = await programs.start('dist/node/cli/fenec-server.js', [
      ...['--file', path.join(dir, 'fenec.fenec'), '--port', '0', '--http-token', TOKEN, '--tenant-rate', '1000000'],
    ]);
    const lance = await programs.start('dist/bench/lance-server.js', [
      ...['--dir', path.join(dir, 'lance'), '--peers', PEERS_DIR, ...lanceArgs],
    ]);
    const servers: Server[] = [
      { name: 'fenecdb', program: fenec, query: `${fenec.url}/query` },
      { name: 'LanceDB', program: lance, query: `${lance.url}/query` },
    ];
    const work = docsWorkload(ROWS, QUERIES);
    progress(`loading ${ROWS} rows into fenecdb`);
    const fenecSeconds = await loadDocs(servers[0]!, work, ROWS, TOKEN);
    progress(`fenecdb: ${fenecSeconds.toFixed(1)} s; loading ${ROWS} rows into LanceDB`);
    const { seconds: lanceSeconds, indexSeconds } = await loadLance(servers[1]!, work);
    progress(
      `LanceDB: ${lanceSeconds.toFixed(1)} s, of which compaction and index builds ${indexSeconds.toFixed(1)} s`,
    );
    const rss = servers.map((s) => rssMb(s.program.child.pid!));
    progress(`RSS after the load: ${rss.map((mb) => `${mb.toFixed(0)} MB`).join(', ')}`);
    const measured = Array.from({ length: QUERIES }, (_, q) => q);
    const exact: Record<NearRead, number[][]> = {
      near: exactNearest(work.vectors, work.queries, DIMS, measured, K),
      'filtered near': measured.map((q) => scanNearest(work.vectors, ROWS, work.queries, DIMS, q, K, passesFilter)),
    };
    const reads = await measureReads(servers, work, exact);
    report({ loadSeconds: [fenecSeconds, lanceSeconds], indexSeconds, rss, reads, lanceArgs });
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The same rows in the same batches, then LanceDB's indexes, until they serve and the server is idle. */
async function loadLance(server: Server, work: Workload): Promise<{ seconds: number; indexSeconds: number }> {
  const t0 = performance.now();
  const base = server.program.url;
  for (let start = 0; start < ROWS; start += ROWS_PER_INSERT) {
    const rows = [];
    for (let i = start; i < Math.min(ROWS, start + ROWS_PER_INSERT); i++)
      rows.push({ id: i + 1, body: work.bodies[i], vec: vectorJson(work.vectors, i, DIMS), grp: i % 100 });
    await post(`${base}/rows`, 'POST', { rows }, TOKEN);
  }
  const built = JSON.parse(await post(`${base}/index`, 'POST', {}, TOKEN)) as { seconds: number };
  await untilIdle(server);
  return { seconds: (performance.now() - t0) / 1000, indexSeconds: built.seconds };
}

interface ReadMeasure {
  /** Each server's p50, ms. */
  readonly p50Ms: number[];
  /** Each server's recall@10 against the exact answers. */
  readonly recall: number[];
  /** Each server's median answer, bytes. */
  readonly bytes: number[];
}

/** Each read, query by query, each server in turn (the order swapped every query), after 20 unmeasured. */
async function measureReads(
  servers: readonly Server[],
  work: Workload,
  exact: Record<NearRead, number[][]>,
): Promise<Record<NearRead, ReadMeasure>> {
  const out = {} as Record<NearRead, ReadMeasure>;
  for (const name of NEAR_READS) {
    const times = servers.map((): number[] => []);
    const found = servers.map((): number[][] => []);
    const bytes = servers.map((): number[] => []);
    for (let q = -20; q < QUERIES; q++) {
      const i = ((q % QUERIES) + QUERIES) % QUERIES;
      const body = JSON.stringify({ statement: READS[name], params: [vectorJson(work.queries, i, DIMS)] });
      for (const s of turnOrder(servers.length, q + 20)) {
        const t0 = performance.now();
        const answer = await post(servers[s]!.query, 'POST', body, TOKEN);
        if (q < 0) continue;
        times[s]!.push(performance.now() - t0);
        bytes[s]!.push(Buffer.byteLength(answer));
        found[s]!.push((JSON.parse(answer) as { rows: { id: number }[] }).rows.map((r) => r.id - 1));
      }
    }
    out[name] = {
      p50Ms: times.map((t) => percentile(t, 0.5)),
      recall: found.map((f) => recall(f, exact[name], K)),
      bytes: bytes.map((b) => percentile(b, 0.5)),
    };
    progress(
      `${name}: p50 ${out[name].p50Ms.map((ms) => ms.toFixed(3)).join(' / ')} ms, ` +
        `recall@10 ${out[name].recall.map((r) => r.toFixed(3)).join(' / ')}`,
    );
  }
  return out;
}

function report(r: {
  loadSeconds: number[];
  /** LanceDB's compaction and index builds, after the rows were in. */
  indexSeconds: number;
  rss: number[];
  reads: Record<NearRead, ReadMeasure>;
  lanceArgs: string[];
}): void {
  const row = (what: string, [fenec, lance]: readonly number[], digits: number): string[] => [
    what,
    fenec!.toFixed(digits),
    lance!.toFixed(digits),
    (fenec! / lance!).toFixed(2),
  ];
  const lines: string[][] = [];
  for (const name of NEAR_READS) {
    lines.push(row(`${name} p50 ms`, r.reads[name].p50Ms, 3));
    lines.push(row(`${name} recall@10`, r.reads[name].recall, 3));
    lines.push(row(`${name} answer bytes`, r.reads[name].bytes, 0));
  }
  lines.push(row('RSS after the load, MB', r.rss, 0));
  lines.push(row('load until indexed, s', r.loadSeconds, 1));
  const targets = NEAR_READS.map((name) => {
    const m = r.reads[name];
    const met = m.p50Ms[0]! <= m.p50Ms[1]! && m.recall[0]! >= RECALL_TARGET;
    const lanceLow =
      m.recall[1]! < RECALL_TARGET ? ` (LanceDB's recall is under ${RECALL_TARGET}: not like for like)` : '';
    return `${name} p50 ≤ LanceDB's at recall@10 ≥ ${RECALL_TARGET}: ${verdict(met)}${lanceLow}\n`;
  });
  const lance = r.lanceArgs.length === 0 ? 'its defaults' : r.lanceArgs.join(' ');
  process.stdout.write(
    `\npeers-bench: a one-file fenec-server ÷ LanceDB ${lanceVersion()} (bench/lance-server.ts, ${lance}), ${ROWS} rows × ${DIMS}, ` +
      `${QUERIES} queries each, ${os.cpus().length} cores, Node ${process.versions.node}\n\n` +
      `${table(['', 'fenecdb', 'LanceDB', 'fenecdb ÷ LanceDB'], lines)}\n\n` +
      `LanceDB's load: ${r.indexSeconds.toFixed(1)} s of it compaction and index builds, after the rows were in\n` +
      targets.join('') +
      `RSS after the load ≤ LanceDB's: ${verdict(r.rss[0]! <= r.rss[1]!)}\n`,
  );
  const pair = (figures: readonly number[]): { fenecdb: number; lancedb: number } => ({
    fenecdb: figures[0]!,
    lancedb: figures[1]!,
  });
  writeResults('peers', {
    ...runInfo('peers'),
    rows: ROWS,
    queries: QUERIES,
    lancedb: lanceVersion(),
    lanceFlags: r.lanceArgs,
    rssMb: pair(r.rss),
    loadSeconds: pair(r.loadSeconds),
    lanceIndexSeconds: r.indexSeconds,
    reads: Object.fromEntries(
      NEAR_READS.map((name) => {
        const m = r.reads[name];
        return [name, { p50Ms: pair(m.p50Ms), recall: pair(m.recall), answerBytes: pair(m.bytes) }];
      }),
    ),
  });
}

function lanceVersion(): string {
  const file = path.join(PEERS_DIR, 'node_modules/@lancedb/lancedb/package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

await main();
