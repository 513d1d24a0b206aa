/**
 * make search-bench's figures: what each scenario and the loads record, and the report — the console
 * tables, the targets and notes, and bench/results/search.json (docs/performance.md quotes both).
 */
import * as os from 'node:os';
import { DEFAULT_EF_SEARCH, DEFAULT_M, EF_CONSTRUCTION } from '../node/vector/store.js';
import { elapsedSeconds, table, verdict, writeResults } from './harness.js';
import { DIMS, VOCABULARY, ZIPF_EXPONENT } from './search-data.js';

/** The knobs of a run (the bench reads them from the environment). */
export interface SearchConfig {
  readonly rows: number;
  readonly uniformRows: number;
  readonly queries: number;
  readonly warmUp: number;
  readonly singleInserts: number;
  readonly loadedBatches: number;
  readonly clusters: number;
  readonly spread: number;
  readonly rebuild: boolean;
  readonly literalRows: number;
  readonly seed: number;
}

export interface Targets {
  readonly recallAt10: number;
  readonly p50Ratio: number;
}

export interface QueryMeasure {
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

export interface RecallMeasure {
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
export interface EfMeasure {
  readonly data: string;
  readonly rows: number;
  readonly efSearch: number;
  readonly recall: number;
  readonly p50Ms: number;
}

export interface WriteMeasure {
  readonly what: string;
  readonly unit: 'rows/s' | 'vectors/s';
  readonly fenec: number;
  readonly baseline: string;
  readonly raw: number | undefined;
}

export interface Results {
  queries: QueryMeasure[];
  recall: RecallMeasure[];
  efSweep: EfMeasure[];
  writes: WriteMeasure[];
  notes: string[];
  seconds: Record<string, number>;
}

export function emptyResults(): Results {
  return { queries: [], recall: [], efSweep: [], writes: [], notes: [], seconds: {} };
}

export function fmtMs(ms: number): string {
  return ms < 10 ? ms.toFixed(2) : ms.toFixed(1);
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US').replaceAll(',', ' ');
}

/** Prints the tables, targets and notes, and writes bench/results/search.json. */
export function report(
  results: Results,
  config: SearchConfig,
  goals: Targets,
  loadBefore: number[],
  loadAfter: number[],
): void {
  const load = (l: number[]): string => l.map((x) => x.toFixed(2)).join(' ');
  const queries = table(
    ['query', 'p50 ms', 'p99 ms', 'baseline', 'p50 ms', 'p99 ms', 'p50 ratio'],
    results.queries.map((m) => [
      m.query,
      fmtMs(m.p50Ms),
      fmtMs(m.p99Ms),
      m.baseline,
      fmtMs(m.baselineP50Ms),
      fmtMs(m.baselineP99Ms),
      m.ratioP50.toFixed(2),
    ]),
  );
  const recalls = table(
    ['recall@10 vs exact', 'rows', 'fenecdb near', 'raw Faiss HNSW'],
    results.recall.map((m) => [`${m.data}, ${m.query}`, fmtInt(m.rows), m.fenec.toFixed(3), m.raw.toFixed(3)]),
  );
  const sweeps = [...new Set(results.efSweep.map((m) => m.data))].flatMap((data) => {
    const of = results.efSweep.filter((m) => m.data === data);
    const name = `${data} ${fmtInt(of[0]!.rows)}`;
    return [
      [`${name}, recall@10`, ...of.map((m) => m.recall.toFixed(3))],
      [`${name}, p50 ms`, ...of.map((m) => fmtMs(m.p50Ms))],
    ];
  });
  const sweep = table(
    ['raw Faiss HNSW by efSearch', ...[...new Set(results.efSweep.map((m) => m.efSearch))].map((ef) => `ef ${ef}`)],
    sweeps,
  );
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
  for (const m of results.recall)
    if (m.target !== undefined)
      targets.push(
        `target: recall@10 ≥ ${m.target} (${m.data}, ${m.query}, ef ${DEFAULT_EF_SEARCH}) — ${m.fenec.toFixed(3)} ${verdict(m.fenec >= m.target)}`,
      );
  for (const m of results.queries)
    if (m.target !== undefined)
      targets.push(
        `target: ${m.query} p50 ≤ ${m.target}× ${m.baseline} — ${m.ratioP50.toFixed(2)}× ${verdict(m.ratioP50 <= m.target)}`,
      );
  const elapsed = elapsedSeconds();
  process.stdout.write(
    `\nsearch-bench: ${fmtInt(config.rows)} rows (${VOCABULARY}-word Zipf vocabulary; ${DIMS}-dim normalised Gaussian mixture of ${config.clusters} centres, spread ${config.spread})` +
      `${config.uniformRows > 0 ? ` and ${fmtInt(config.uniformRows)} uniform` : ''}, ${config.queries} queries each after ${config.warmUp} warm-up, ` +
      `HNSW M ${DEFAULT_M} efConstruction ${EF_CONSTRUCTION} efSearch ${DEFAULT_EF_SEARCH}; ${os.cpus().length} cores, Node ${process.versions.node}, ` +
      `load average ${load(loadBefore)} before, ${load(loadAfter)} after; ${elapsed.toFixed(0)} s\n\n` +
      `${queries}\n\n${recalls}\n\n${sweep}\n\n${writes}\n\n` +
      `${targets.join('\n')}\n` +
      `${results.notes.map((note) => `note: ${note}`).join('\n')}\n`,
  );
  writeResults('search', {
    bench: 'search',
    date: new Date().toISOString(),
    node: process.versions.node,
    cores: os.cpus().length,
    loadAverage: { before: loadBefore, after: loadAfter },
    seconds: { total: elapsed, ...results.seconds },
    config: {
      rows: config.rows,
      uniformRows: config.uniformRows,
      queries: config.queries,
      warmUp: config.warmUp,
      singleInserts: config.singleInserts,
      loadedBatches: config.loadedBatches,
      clusters: config.clusters,
      spread: config.spread,
      seed: config.seed,
      dims: DIMS,
      vocabulary: VOCABULARY,
      zipfExponent: ZIPF_EXPONENT,
      hnsw: { m: DEFAULT_M, efConstruction: EF_CONSTRUCTION, efSearch: DEFAULT_EF_SEARCH },
    },
    targets: goals,
    queries: results.queries,
    recall: results.recall,
    efSweep: results.efSweep,
    writes: results.writes,
    notes: results.notes,
  });
}
