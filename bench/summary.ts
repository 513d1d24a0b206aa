/**
 * `make bench-summary` (and the end of `make bench`): issue 29's targets, and the other issues' bench targets, read
 * from whichever results files the benches wrote (bench/results/NAME.json, harness.ts writeResults), as ONE markdown
 * table — bench | what | baseline | fenecdb ÷ baseline | target | met? | run date. A target whose bench has not
 * written its file is a row saying "not run"; a file from an older bench that lacks the figure, a row saying so:
 * no figure here is anything but what a bench measured.
 *
 *     node dist/bench/summary.js [DIR]     (DIR: the results folder, bench/results unless given)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ROOT, verdict } from './harness.js';

/** One line of the table. */
export interface Row {
  readonly bench: string;
  readonly what: string;
  readonly baseline: string;
  readonly ratio: string;
  readonly target: string;
  /** 'met', 'MISSED', '—' (a figure reported, no target) or 'not run'. */
  readonly met: string;
  readonly date: string;
}

/** A row's figures once its file is read: the run date is the file's. */
type Figures = Omit<Row, 'bench' | 'date'>;

/** A target a bench measures: what a row says when its file is missing, and how to read it when present. */
interface Spec {
  /** The results file, bench/results/<file>.json. */
  readonly file: string;
  readonly bench: string;
  /** The rows' what and target, for the "not run" rows. */
  readonly targets: readonly { readonly what: string; readonly target: string }[];
  readonly rows: (json: any) => Figures[];
}

const NOT_RUN = 'not run';
const NOT_IN_FILE = 'not in this results file (written by an older bench)';

/** The ratio of a time or a size (lower is better) against its bound. */
function atMost(
  what: string,
  baseline: string,
  ours: number | undefined,
  base: number | undefined,
  bound: number,
  digits = 2,
): Figures {
  const target = `≤ ${bound}`;
  if (ours === undefined || base === undefined || !Number.isFinite(ours / base))
    return { what, baseline, ratio: NOT_IN_FILE, target, met: NOT_RUN };
  const ratio = ours / base;
  return { what, baseline, ratio: ratio.toFixed(digits), target, met: verdict(ratio <= bound) };
}

/** The ratio of a rate (higher is better) against its bound. */
function atLeast(what: string, baseline: string, ours: number | undefined, base: number | undefined, bound: number) {
  const target = `≥ ${bound}`;
  if (ours === undefined || base === undefined || !Number.isFinite(ours / base))
    return { what, baseline, ratio: NOT_IN_FILE, target, met: NOT_RUN };
  const ratio = ours / base;
  return { what, baseline, ratio: ratio.toFixed(2), target, met: verdict(ratio >= bound) };
}

const ms = (value: number | undefined, digits = 3): string =>
  value === undefined ? '?' : `${value.toFixed(digits)} ms`;

/** A whole number as the docs write it: 50 000. */
const count = (n: number | undefined): string =>
  n === undefined ? '?' : n.toLocaleString('en-US').replaceAll(',', ' ');

// The build before the worker threads (before-bench.ts): one set of rows per main server the file holds.

const READS = [
  { key: 'near', what: '`near` top 10, 1 client, p50', bound: 1.1 },
  { key: 'filtered near', what: 'filtered `near` top 10, 1 client, p50', bound: 1.1 },
  // "No slower than today": issue 29 measured main ÷ before at ×1.0 for match and ×0.89 for fuse.
  { key: 'match', what: '`match` top 10, 1 client, p50 (today ×1.0)', bound: 1 },
  { key: 'fuse', what: '`fuse` top 10, 1 client, p50 (today ×0.89)', bound: 0.89 },
] as const;

const BEFORE: Spec = {
  file: 'before',
  bench: 'before',
  targets: [
    ...READS.map((r) => ({ what: r.what, target: `≤ ${r.bound}` })),
    { what: 'RSS after the load', target: '≤ 1' },
    { what: 'row by id, 8 clients, req/s', target: '≥ 0.75' },
    { what: 'row by id, 1 client, p50', target: '≤ 1.15' },
    { what: 'server CPU a row by id, all threads', target: 'reported' },
  ],
  rows: (json) => {
    const names = Object.keys(json.rssMb ?? {});
    const before = names.indexOf('before');
    if (before === -1) return [{ what: 'every figure', baseline: '', ratio: NOT_IN_FILE, target: '', met: NOT_RUN }];
    const size = `${count(json.rows)} rows`;
    const byId = (clients: number, name: string): any =>
      (json.rowById as any[][] | undefined)
        ?.find((runs) => runs[0]?.clients === clients)
        ?.find((r) => r.target === name);
    const rows: Figures[] = [];
    for (const [i, name] of names.entries()) {
      if (name === 'before') continue;
      const of = `${name}: `;
      for (const read of READS) {
        const figures = json.readsP50Ms?.[read.key] as number[] | undefined;
        rows.push(
          atMost(
            `${of}${read.what}, ${size}`,
            `before, ${ms(figures?.[before])}`,
            figures?.[i],
            figures?.[before],
            read.bound,
          ),
        );
      }
      rows.push(
        atMost(
          `${of}RSS after the load, ${size}`,
          `before, ${Math.round(json.rssMb.before)} MB`,
          json.rssMb[name],
          json.rssMb.before,
          1,
        ),
      );
      const eight = byId(8, name);
      const eightBefore = byId(8, 'before');
      rows.push(
        atLeast(
          `${of}row by id, 8 clients, req/s`,
          `before, ${count(eightBefore?.requestsPerSecond)} req/s`,
          eight?.requestsPerSecond,
          eightBefore?.requestsPerSecond,
          0.75,
        ),
      );
      const one = byId(1, name);
      const oneBefore = byId(1, 'before');
      rows.push(
        atMost(`${of}row by id, 1 client, p50`, `before, ${ms(oneBefore?.p50Ms)}`, one?.p50Ms, oneBefore?.p50Ms, 1.15),
      );
      for (const clients of [1, 8]) {
        const ours = byId(clients, name);
        const base = byId(clients, 'before');
        const bare = byId(clients, 'bare node:http');
        const ratio = ours?.cpuUs !== undefined && base?.cpuUs ? (ours.cpuUs / base.cpuUs).toFixed(2) : NOT_IN_FILE;
        rows.push({
          what: `${of}server CPU a row by id, all threads, ${clients} client${clients === 1 ? '' : 's'}`,
          baseline: `before ${Math.round(base?.cpuUs ?? NaN)} µs (bare node:http ${Math.round(bare?.cpuUs ?? NaN)} µs); ours ${Math.round(ours?.cpuUs ?? NaN)} µs`,
          ratio,
          target: 'reported beside before and bare node:http',
          met: ratio === NOT_IN_FILE ? NOT_RUN : '—',
        });
      }
    }
    return rows;
  },
};

// match against raw FTS5 answering the same rows with snippet() (match-bench.ts, in process, then over HTTP less a
// bare node:http round trip).

const MATCH_VARIANT = 'fenecdb: match, rows with a vector';
const SNIPPET_BASELINE = 'raw FTS5: ids, bm25, text, snippet()';

const MATCH: Spec = {
  file: 'match',
  bench: 'match',
  targets: [
    { what: '`match` top 10 against raw FTS5 with `snippet()`, p50', target: '≤ 1.3' },
    {
      what: '`match` top 10 over HTTP less a bare round trip, against raw FTS5 with `snippet()`, p50',
      target: '≤ 1.3',
    },
  ],
  rows: (json) => [
    ...['cold', 'warm'].map((pass) => {
      const variants = (json.passes as any[] | undefined)?.find((p) => p.pass === pass)?.variants as any[] | undefined;
      const ours = variants?.find((v) => v.name === MATCH_VARIANT);
      const base = variants?.find((v) => v.name === SNIPPET_BASELINE);
      return atMost(
        `\`match\` top 10, rows with a vector, ${count(json.rows)} rows, ${pass}, in process, p50`,
        `raw FTS5 with the text and \`snippet()\`, ${ms(base?.p50Ms)}`,
        ours?.p50Ms,
        base?.p50Ms,
        1.3,
      );
    }),
    atMost(
      `\`match\` top 10, rows of text, ${count(json.rows)} rows, over HTTP less a bare round trip ` +
        `(${ms(json.overHttp?.bareP50Ms)}), p50`,
      `raw FTS5 with the text and \`snippet()\`, ${ms(json.overHttp?.rawSnippetP50Ms)}`,
      json.overHttp === undefined ? undefined : json.overHttp.fenecP50Ms - json.overHttp.bareP50Ms,
      json.overHttp?.rawSnippetP50Ms,
      1.3,
    ),
  ],
};

// Isolation (isolation-bench.ts): a quiet tenant beside a heavy one, in every phase.

const PHASES = ['a_fuse', 'b_answer_cap', 'c_load', 'd_time_limit'] as const;

const ISOLATION: Spec = {
  file: 'isolation',
  bench: 'isolation',
  targets: [
    { what: "a quiet tenant's p99 beside a heavy one, worst phase", target: '≤ 2' },
    { what: "the serving thread's event-loop delay, worst phase", target: '≤ 20 ms' },
  ],
  rows: (json) => {
    const phases = PHASES.map((name) => ({ name, phase: json.phases?.[name] })).filter((p) => p.phase !== undefined);
    if (phases.length < PHASES.length)
      return ISOLATION.targets.map((t) => ({ ...t, baseline: '', ratio: NOT_IN_FILE, met: NOT_RUN }));
    const worst = phases.reduce((a, b) => (b.phase.p99RatioToAlone > a.phase.p99RatioToAlone ? b : a));
    const all = [json.phases.alone, ...phases.map((p) => p.phase)];
    const delay = Math.max(...all.map((p) => p.loopDelayMaxMs));
    // A process doing nothing but a timer on the same cores, in the same windows (bench/bystander.ts).
    const bystander = Math.max(...all.map((p) => p.bystanderLoopDelayMaxMs ?? NaN));
    return [
      {
        what: `a quiet tenant's p99 beside a heavy one, worst of (a)–(d): ${worst.name}`,
        baseline: `the quiet tenant alone, p99 ${ms(json.phases.alone?.quiet?.p99Ms, 2)}`,
        ratio: worst.phase.p99RatioToAlone.toFixed(2),
        target: '≤ 2 in every phase',
        met: verdict(worst.phase.p99RatioToAlone <= 2),
      },
      {
        what: "the serving thread's event-loop delay, max over the phases",
        baseline: Number.isFinite(bystander) ? `a bystander process's, ${bystander.toFixed(1)} ms` : '—',
        ratio: Number.isFinite(delay) ? `${delay.toFixed(1)} ms` : NOT_IN_FILE,
        target: '≤ 20 ms',
        met: Number.isFinite(delay) ? verdict(delay <= 20) : NOT_RUN,
      },
    ];
  },
};

// Many tenants (tenants-bench.ts): an open tenant among many against the same tenant alone on a node.

const TENANTS: Spec = {
  file: 'tenants',
  bench: 'tenants',
  targets: [{ what: 'an open tenant among 10 000, 8 clients, p50', target: '≤ 2' }],
  rows: (json) => [
    atMost(
      `an open tenant among ${count(json.tenants)} (${json.maxOpenTenants} open), ${json.clients} clients, p50`,
      `the tenant alone on a node, ${ms(json.aloneTenantMs?.p50, 2)}`,
      json.openTenantMs?.p50,
      json.aloneTenantMs?.p50,
      2,
    ),
  ],
};

// Many cores (scaling-bench.ts, issue 29 item 4): tenants on workers of their own at once against one alone.

const SCALING: Spec = {
  file: 'scaling',
  bench: 'scaling',
  targets: [{ what: '`near` from tenants on workers of their own at once, req/s', target: '—' }],
  rows: (json) => {
    const what =
      `\`near\` from ${json.tenants} tenants on ${json.workers} workers at once, ${json.clients} clients each, req/s ` +
      `(cores busy: ${json.busyCores?.together?.toFixed(2) ?? '?'} of ${json.cores ?? '?'})`;
    const alone = json.alone?.requestsPerSecond;
    if (typeof json.scaling !== 'number' || alone === undefined)
      return [{ what, baseline: '', ratio: NOT_IN_FILE, target: '—', met: NOT_RUN }];
    return [
      {
        what,
        baseline: `one tenant alone, ${count(Math.round(alone))} req/s`,
        ratio: json.scaling.toFixed(2),
        target: '—',
        met: '—',
      },
    ];
  },
};

// The embedder (issue 30, embed-bench.ts).

const EMBED: Spec = {
  file: 'embed',
  bench: 'embed',
  targets: [
    { what: '`fenec import` through an embedder, time', target: '≤ 1.1' },
    { what: '`near` by words, their embedding cached, p50', target: '≤ 1.2' },
  ],
  rows: (json) => [
    atMost(
      `\`fenec import\` of ${count(json.rows)} rows through an embedder of ${json.batchMs} ms a batch, time (issue 30)`,
      `the embedder's busy time, ${json.load?.embedderBusySeconds?.toFixed(2)} s`,
      json.load?.importSeconds,
      json.load?.embedderBusySeconds,
      1.1,
    ),
    atMost(
      '`near` by words, their embedding cached, p50 (issue 30)',
      `\`near\` given their vector, ${ms(json.search?.vectorMedianMs)}`,
      json.search?.wordsMedianMs,
      json.search?.vectorMedianMs,
      1.2,
    ),
  ],
};

// Peers (issue 29, peers-bench.ts): a one-file server against LanceDB, both over HTTP, at recall@10 ≥ 0.95 each.

const PEERS: Spec = {
  file: 'peers',
  bench: 'peers',
  targets: [
    { what: '`near` top 10, p50', target: '≤ 1' },
    { what: 'filtered `near` top 10, p50', target: '≤ 1' },
    { what: 'RSS after the load', target: '≤ 1' },
  ],
  rows: (json) => {
    const lance = `LanceDB ${json.lancedb ?? ''}`.trim();
    const near = (name: string): Figures => {
      const read = json.reads?.[name];
      const recall = `recall@10 ${read?.recall?.fenecdb?.toFixed(3)} and ${read?.recall?.lancedb?.toFixed(3)}`;
      return atMost(
        `\`${name}\` top 10 over HTTP, ${count(json.rows)} × 384, p50 (${recall})`,
        `${lance}, ${ms(read?.p50Ms?.lancedb)}`,
        read?.p50Ms?.fenecdb,
        read?.p50Ms?.lancedb,
        1,
      );
    };
    return [
      near('near'),
      near('filtered near'),
      atMost(
        `RSS after the load, ${count(json.rows)} × 384`,
        `${lance}, ${json.rssMb?.lancedb?.toFixed(0)} MB`,
        json.rssMb?.fenecdb,
        json.rssMb?.lancedb,
        1,
      ),
    ];
  },
};

// Replication (issue 31, replication-bench.ts).

const UNREPLICATED = 'unreplicated';

const REPLICATION: Spec = {
  file: 'replication',
  bench: 'replication',
  targets: [
    { what: 'a one-row write, `--nats` (3 replicas), p50', target: '≤ +1.5 ms' },
    { what: 'bulk import, rows/s', target: '≥ 0.7' },
  ],
  rows: (json) => {
    const summary = json.summary as any[] | undefined;
    const base = summary?.find((s) => s.target === UNREPLICATED);
    const repl = summary?.find((s) => s.target !== UNREPLICATED);
    const extra = repl?.p50Ms - base?.p50Ms;
    const write: Figures = Number.isFinite(extra)
      ? {
          what: 'a one-row write over `/query`, 1 client, `--nats` (3 replicas), p50 (issue 31)',
          baseline: `the same node without \`--nats\`, ${ms(base.p50Ms, 2)}`,
          ratio: `+${extra.toFixed(2)} ms (${(repl.p50Ms / base.p50Ms).toFixed(2)})`,
          target: '≤ +1.5 ms',
          met: verdict(extra <= 1.5),
        }
      : { ...REPLICATION.targets[0]!, baseline: '', ratio: NOT_IN_FILE, met: NOT_RUN };
    return [
      write,
      atLeast(
        `bulk import, ${count(json.batch)}-row batches, rows/s (issue 31)`,
        `the same node without \`--nats\`, ${count(Math.round(base?.bulkRowsPerSecond))} rows/s`,
        repl?.bulkRowsPerSecond,
        base?.bulkRowsPerSecond,
        0.7,
      ),
    ];
  },
};

// Failover (issue 31, failover-bench.ts): kill -9 to a write answered on another node, lease 1 s.

const FAILOVER_TARGET = 'within 10 s of the kill';

const FAILOVER: Spec = {
  file: 'failover',
  bench: 'failover',
  targets: [{ what: "a large tenant's failover, `--standby`", target: FAILOVER_TARGET }],
  rows: (json) => {
    const rounds = (json.rounds ?? []) as { standby: boolean; failoverMs: number; fileMb: number }[];
    const worst = (standby: boolean): number | undefined => {
      const times = rounds.filter((r) => r.standby === standby).map((r) => r.failoverMs);
      return times.length === 0 ? undefined : Math.max(...times);
    };
    const without = worst(false);
    const standby = worst(true);
    const mb = rounds[0]?.fileMb.toFixed(0);
    if (without === undefined || standby === undefined)
      return [{ ...FAILOVER.targets[0]!, baseline: '', ratio: NOT_IN_FILE, met: NOT_RUN }];
    return [
      {
        what: `a ${mb} MB tenant's kill -9 to a write answered on another node, \`--standby\`, lease 1 s, slowest round (issue 31)`,
        baseline: `the same without a standby, ${ms(without, 0)}`,
        ratio: `${ms(standby, 0)} (${(standby / without).toFixed(2)})`,
        target: FAILOVER_TARGET,
        met: verdict(standby <= 10_000 && without <= 10_000),
      },
    ];
  },
};

const SPECS: readonly Spec[] = [BEFORE, PEERS, MATCH, ISOLATION, SCALING, TENANTS, EMBED, REPLICATION, FAILOVER];

/** The run's date: the one the file says (`date`, or replication's `at`), else when the file was written. */
function runDate(json: any, file: string): string {
  const stamp = typeof json.date === 'string' ? json.date : typeof json.at === 'string' ? json.at : undefined;
  const date = stamp === undefined ? fs.statSync(file).mtime : new Date(stamp);
  return date.toISOString().slice(0, 16).replace('T', ' ');
}

/** Every row of the table, from the results files under `dir`. */
function summaryRows(dir: string): Row[] {
  return SPECS.flatMap((spec): Row[] => {
    const file = path.join(dir, `${spec.file}.json`);
    if (!fs.existsSync(file))
      return spec.targets.map((t) => ({
        bench: spec.bench,
        ...t,
        baseline: '',
        ratio: `no ${spec.file}.json: make ${spec.file === 'replication' ? 'requests' : spec.file}-bench`,
        met: NOT_RUN,
        date: '',
      }));
    let json: unknown;
    try {
      json = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch (err) {
      const why = `${spec.file}.json does not parse: ${(err as Error).message}`;
      return spec.targets.map((t) => ({ bench: spec.bench, ...t, baseline: '', ratio: why, met: NOT_RUN, date: '' }));
    }
    const date = runDate(json, file);
    return spec.rows(json).map((row) => ({ bench: spec.bench, ...row, date }));
  });
}

/** Issue 29: the seed's own figures, quoted beside the CPU a row by id costs. */
const ANCHOR = "row by id, the seed's anchor (an M1): 0.027 ms a request, 122 000 requests a second at 8 clients";

const HEADER = ['bench', 'what', 'baseline', 'fenecdb ÷ baseline', 'target', 'met?', 'run date'] as const;

/** The rows as a markdown table. */
function markdownTable(rows: readonly Row[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.map((c) => c.replaceAll('|', '\\|')).join(' | ')} |`;
  return [
    line(HEADER),
    line(HEADER.map(() => '---')),
    ...rows.map((r) => line([r.bench, r.what, r.baseline, r.ratio, r.target, r.met, r.date])),
  ].join('\n');
}

function main(): void {
  const args = process.argv.slice(2);
  if (args.length > 1) throw new Error('usage: node dist/bench/summary.js [the results folder]');
  const dir = path.resolve(args[0] ?? path.join(ROOT, 'bench/results'));
  process.stdout.write(`\nbench summary: the targets of issue 29 (and 30, 31), from ${dir}\n\n`);
  process.stdout.write(`${markdownTable(summaryRows(dir))}\n\n${ANCHOR}\n`);
}

main();
