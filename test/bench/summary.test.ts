/**
 * bench/summary.ts, the table `make bench` ends with: run as its make target runs it, on a folder of small results
 * files written here in the benches' own shapes, its rows read back from what it prints.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Row } from '../../bench/summary.js';
import { tempDir } from '../helpers/temp.js';

const SUMMARY = fileURLToPath(new URL('../../bench/summary.js', import.meta.url));

/** The summary of `dir`'s results files: the rows of the markdown table it prints. */
function summary(dir: string): Row[] {
  const out = execFileSync(process.execPath, [SUMMARY, dir], { encoding: 'utf8', timeout: 30_000 });
  const lines = out.split('\n').filter((line) => line.startsWith('|'));
  expect(lines[0]).to.equal('| bench | what | baseline | fenecdb ÷ baseline | target | met? | run date |');
  return lines.slice(2).map((line) => {
    const [bench, what, baseline, ratio, target, met, date] = line
      .slice(2, -2)
      .split(' | ')
      .map((cell) => cell.trim());
    return { bench: bench!, what: what!, baseline: baseline!, ratio: ratio!, target: target!, met: met!, date: date! };
  });
}

function row(rows: readonly Row[], bench: string, what: string): Row {
  const found = rows.filter((r) => r.bench === bench && r.what.includes(what));
  expect(found, `one ${bench} row on ${what} in ${JSON.stringify(rows, null, 1)}`).to.have.length(1);
  return found[0]!;
}

function write(dir: string, name: string, json: unknown): void {
  fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(json));
}

const DATE = '2026-12-02T01:25:10.396Z';

/** before-bench's shape: two main servers and the build before, in the order the bench started them. */
function beforeResults(): unknown {
  const byId = (clients: number, rps: [number, number, number], p50: [number, number, number]) =>
    (['main --workers 0', 'main --workers 1', 'before'] as const)
      .map((target, i) => ({ target, clients, requestsPerSecond: rps[i], p50Ms: p50[i], cpuUs: 100 * (i + 1) }))
      .concat([{ target: 'bare node:http', clients, requestsPerSecond: 9000, p50Ms: 0.1, cpuUs: 50 }] as never[]);
  return {
    bench: 'before',
    date: DATE,
    rows: 50_000,
    workers: [0, 1],
    rssMb: { 'main --workers 0': 250, 'main --workers 1': 400, before: 260 },
    readsP50Ms: {
      near: [2, 3, 2],
      'filtered near': [2, 2, 2],
      match: [1.5, 1.4, 1.5],
      fuse: [4, 4.5, 5],
    },
    rowById: [byId(1, [3000, 2000, 2500], [0.2, 0.3, 0.2]), byId(8, [6000, 4000, 7000], [1, 2, 1])],
  };
}

describe('make bench-summary: the targets of issue 29 in one table (bench/summary.ts)', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => (temp = tempDir('fenec-summary-')));
  afterEach(() => temp.remove());

  it('gives each main server of before.json its own rows, each ratio against the build before', () => {
    write(temp.dir, 'before', beforeResults());
    const rows = summary(temp.dir);
    const near0 = row(rows, 'before', 'main --workers 0: `near`');
    expect(near0).to.include({ baseline: 'before, 2.000 ms', ratio: '1.00', target: '≤ 1.1', met: 'met' });
    expect(near0.what).to.include('50 000 rows');
    expect(near0.date).to.equal('2026-12-02 01:25');
    expect(row(rows, 'before', 'main --workers 1: `near`')).to.include({ ratio: '1.50', met: 'MISSED' });
    expect(row(rows, 'before', 'main --workers 1: `fuse`')).to.include({ ratio: '0.90', met: 'MISSED' });
    expect(row(rows, 'before', 'main --workers 0: RSS')).to.include({ ratio: '0.96', met: 'met' });
    expect(row(rows, 'before', 'main --workers 1: RSS')).to.include({ ratio: '1.54', met: 'MISSED' });
    expect(row(rows, 'before', 'main --workers 0: row by id, 8 clients')).to.include({ ratio: '0.86', met: 'met' });
    expect(row(rows, 'before', 'main --workers 1: row by id, 8 clients')).to.include({
      baseline: 'before, 7 000 req/s',
      ratio: '0.57',
      target: '≥ 0.75',
      met: 'MISSED',
    });
    expect(row(rows, 'before', 'main --workers 1: row by id, 1 client, p50')).to.include({ ratio: '1.50' });
    const cpu = row(rows, 'before', 'main --workers 1: server CPU a row by id, all threads, 8 clients');
    expect(cpu).to.include({ ratio: '0.67', met: '—' });
    expect(cpu.baseline).to.include('before 300 µs').and.include('bare node:http 50 µs').and.include('ours 200 µs');
    expect(rows.filter((r) => r.what.includes('before:'))).to.deep.equal([]);
  });

  it('says "not run" for every target whose results file is missing, and gives no figure for it', () => {
    write(temp.dir, 'tenants', {
      bench: 'tenants',
      date: DATE,
      tenants: 10_000,
      maxOpenTenants: 256,
      clients: 8,
      openTenantMs: { p50: 3, p99: 9 },
      aloneTenantMs: { p50: 2, p99: 5 },
    });
    const rows = summary(temp.dir);
    expect(row(rows, 'tenants', 'among 10 000')).to.include({
      baseline: 'the tenant alone on a node, 2.00 ms',
      ratio: '1.50',
      target: '≤ 2',
      met: 'met',
    });
    for (const bench of ['before', 'match', 'isolation', 'scaling', 'embed', 'replication', 'failover']) {
      const missing = rows.filter((r) => r.bench === bench);
      expect(missing.length, bench).to.be.above(0);
      for (const r of missing) expect(r, bench).to.include({ met: 'not run', baseline: '', date: '' });
      expect(missing[0]!.ratio).to.match(/^no \w+\.json: make \w+-bench$/);
    }
    expect(row(rows, 'replication', 'write').ratio).to.equal('no replication.json: make requests-bench');
  });

  it('judges the other benches against their targets: a missed one says MISSED', () => {
    const phase = (p99RatioToAlone: number, loopDelayMaxMs: number) => ({
      quiet: { p99Ms: 1 },
      p99RatioToAlone,
      loopDelayMaxMs,
      bystanderLoopDelayMaxMs: loopDelayMaxMs / 2,
    });
    write(temp.dir, 'isolation', {
      rows: 1000,
      phases: {
        alone: phase(1, 3),
        a_fuse: phase(1.2, 5),
        b_answer_cap: phase(1.1, 12),
        c_load: phase(2.5, 4),
        d_time_limit: phase(0.5, 2),
      },
    });
    write(temp.dir, 'scaling', {
      cores: 2,
      tenants: 2,
      workers: 2,
      clients: 2,
      alone: { requestsPerSecond: 800 },
      scaling: 1.4,
      busyCores: { alone: 1.3, together: 1.95 },
    });
    write(temp.dir, 'replication', {
      at: DATE,
      batch: 1000,
      summary: [
        { target: 'unreplicated', p50Ms: 1.5, bulkRowsPerSecond: 100_000 },
        { target: 'replicated (--nats, 3 replicas)', p50Ms: 2.5, bulkRowsPerSecond: 60_000 },
      ],
    });
    const variants = (ours: number) => [
      { name: 'raw FTS5: ids, bm25', p50Ms: 0.1 },
      { name: 'raw FTS5: ids, bm25, text, snippet()', p50Ms: 0.2 },
      { name: 'fenecdb: match, rows with a vector', p50Ms: ours },
    ];
    write(temp.dir, 'match', {
      date: DATE,
      rows: 50_000,
      passes: [
        { pass: 'cold', variants: variants(0.24) },
        { pass: 'warm', variants: variants(0.3) },
      ],
      overHttp: { fenecP50Ms: 0.9, bareP50Ms: 0.5, rawSnippetP50Ms: 0.25 },
    });
    write(temp.dir, 'embed', {
      date: DATE,
      rows: 20_000,
      batchMs: 20,
      load: { importSeconds: 9.45, embedderBusySeconds: 9 },
      search: { wordsMedianMs: 1.1, vectorMedianMs: 1 },
    });
    write(temp.dir, 'failover', {
      at: DATE,
      rows: 400_000,
      rounds: [
        { standby: false, failoverMs: 2400, fileMb: 315 },
        { standby: true, failoverMs: 900, fileMb: 315 },
        { standby: true, failoverMs: 12_000, fileMb: 315 },
      ],
    });
    const rows = summary(temp.dir);
    // The slowest round of each: 12 s is past the target.
    expect(row(rows, 'failover', 'kill -9')).to.include({
      baseline: 'the same without a standby, 2400 ms',
      ratio: '12000 ms (5.00)',
      met: 'MISSED',
    });
    expect(row(rows, 'isolation', 'p99')).to.include({ ratio: '2.50', met: 'MISSED' });
    expect(row(rows, 'isolation', 'p99').what).to.include('c_load');
    expect(row(rows, 'isolation', 'event-loop delay')).to.include({
      baseline: "a bystander process's, 6.0 ms",
      ratio: '12.0 ms',
      target: '≤ 20 ms',
      met: 'met',
    });
    // isolation.json has no date of its own: the file's.
    expect(row(rows, 'isolation', 'p99').date).to.match(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);
    expect(row(rows, 'replication', 'write')).to.include({ ratio: '+1.00 ms (1.67)', met: 'met' });
    expect(row(rows, 'replication', 'bulk')).to.include({ ratio: '0.60', target: '≥ 0.7', met: 'MISSED' });
    expect(row(rows, 'match', 'cold')).to.include({ ratio: '1.20', target: '≤ 1.3', met: 'met' });
    expect(row(rows, 'match', 'warm')).to.include({ ratio: '1.50', met: 'MISSED' });
    // Over HTTP: (0.9 − 0.5 ms) ÷ 0.25 ms.
    expect(row(rows, 'match', 'over HTTP')).to.include({ ratio: '1.60', target: '≤ 1.3', met: 'MISSED' });
    expect(row(rows, 'scaling', 'near')).to.include({
      baseline: 'one tenant alone, 800 req/s',
      ratio: '1.40',
      target: '—',
      met: '—',
    });
    expect(row(rows, 'scaling', 'near').what)
      .to.include('2 tenants on 2 workers')
      .and.include('1.95 of 2');
    expect(row(rows, 'embed', 'import')).to.include({ ratio: '1.05', target: '≤ 1.1', met: 'met' });
    expect(row(rows, 'embed', 'by words')).to.include({ ratio: '1.10', target: '≤ 1.2', met: 'met' });
  });

  it("says so when a file lacks a figure (an older bench's) or does not parse, rather than guess", () => {
    write(temp.dir, 'tenants', { tenants: 10_000, maxOpenTenants: 256, clients: 8, openTenantMs: { p50: 11.9 } });
    fs.writeFileSync(path.join(temp.dir, 'embed.json'), '{"load": ');
    const rows = summary(temp.dir);
    expect(row(rows, 'tenants', 'among')).to.include({ met: 'not run' });
    expect(row(rows, 'tenants', 'among').ratio).to.include('not in this results file');
    for (const r of rows.filter((x) => x.bench === 'embed')) {
      expect(r.met).to.equal('not run');
      expect(r.ratio).to.include('embed.json does not parse');
    }
  });
});
