/**
 * `make tenants-bench`: what many tenants cost one node. A tenant node (`--max-open-tenants`, 256 unless
 * BENCH_MAX_OPEN) behind a router, BENCH_TENANTS tenants (10 000 unless told) created through the
 * router, each asked once (`get notes count` after `create collection`: the first request opens the
 * tenant's file, a closed one when the LRU is full), then the most recently used ones asked again
 * (found open). Reports the latency of a request that opens a closed tenant and of one that finds it
 * open (p50, p99), the node's open file descriptors and RSS after every tenant was asked (bounded by
 * the open tenants, not by the tenants), and the bytes on disk per tenant.
 *
 * Writes bench/results/tenants.json.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { call, intEnv, Programs, progress, writeResults } from './harness.js';
import { round2, summary, type Summary } from './stats.js';

const TENANTS = intEnv('BENCH_TENANTS', 10_000, 1);
const MAX_OPEN = intEnv('BENCH_MAX_OPEN', 256, 1);
const CLIENTS = 8;
const TOKEN = randomBytes(16).toString('hex');

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-tenants-bench-'));
  const programs = new Programs();
  try {
    const server = await programs.start('dist/node/cli/fenec-server.js', [
      '--data-dir',
      dir,
      '--port',
      '0',
      '--http-token',
      TOKEN,
      '--max-open-tenants',
      String(MAX_OPEN),
    ]);
    const node = server.url;
    const router = (
      await programs.start('dist/router/cli.js', [
        '--port',
        '0',
        '--http-token',
        TOKEN,
        '--nodes',
        `n=${node}`,
        '--workers',
        '1',
      ])
    ).url;
    const nodePid = server.child.pid!;
    const baseline = processFigures(nodePid);
    const names = Array.from({ length: TENANTS }, (_, i) => `t${String(i).padStart(5, '0')}`);

    const started = performance.now();
    await inTurns(names, async (name) => {
      await call(router, TOKEN, 'PUT', `/t/${name}`, {});
    });
    const created = performance.now() - started;
    progress(`${TENANTS} tenants created in ${(created / 1000).toFixed(1)} s`);

    // The first request of each: its file is made and opened (the LRU closes the least recent past MAX_OPEN).
    const cold = await inTurns(names, (name) =>
      call(router, TOKEN, 'POST', `/t/${name}/query`, { statement: 'create collection notes (text text @text)' }),
    );
    const opened = processFigures(nodePid);
    // Asked again, the ones opened last: found open.
    const recent = names.slice(-Math.min(MAX_OPEN, TENANTS) + CLIENTS);
    const warm = await inTurns(recent, (name) =>
      call(router, TOKEN, 'POST', `/t/${name}/query`, { statement: 'get notes count' }),
    );
    // Asked again from the start: closed long ago, opened again.
    const reopened = await inTurns(names.slice(0, Math.min(2000, TENANTS)), (name) =>
      call(router, TOKEN, 'POST', `/t/${name}/query`, { statement: 'get notes count' }),
    );
    const after = processFigures(nodePid);
    const bytes = folderBytes(dir);

    const result = {
      tenants: TENANTS,
      maxOpenTenants: MAX_OPEN,
      clients: CLIENTS,
      createSeconds: round2(created / 1000),
      firstRequestMs: cold,
      openTenantMs: warm,
      reopenMs: reopened,
      node: { baseline, afterAll: opened, afterReopen: after },
      bytesPerTenant: Math.round(bytes / TENANTS),
      machine: { cores: os.cpus().length, loadAverage: os.loadavg().map(round2) },
    };
    process.stdout.write(
      `tenants-bench: ${TENANTS} tenants, --max-open-tenants ${MAX_OPEN}, ${CLIENTS} clients\n` +
        `  first request (file made and opened): p50 ${cold.p50} ms, p99 ${cold.p99} ms\n` +
        `  tenant found open:                    p50 ${warm.p50} ms, p99 ${warm.p99} ms\n` +
        `  closed tenant opened again:           p50 ${reopened.p50} ms, p99 ${reopened.p99} ms\n` +
        `  node: open files ${baseline.openFiles} → ${opened.openFiles} → ${after.openFiles}, RSS ${baseline.rssMiB} → ${opened.rssMiB} → ${after.rssMiB} MiB\n` +
        `  disk: ${result.bytesPerTenant} bytes a tenant\n`,
    );
    writeResults('tenants', result);
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `task` over `items` with CLIENTS at once; the p50 and p99 of their times in ms. */
async function inTurns(items: readonly string[], task: (item: string) => Promise<unknown>): Promise<Summary> {
  const times: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        const started = performance.now();
        await task(item);
        times.push(performance.now() - started);
      }
    }),
  );
  const { p50, p99 } = summary(times);
  return { p50: round2(p50), p99: round2(p99) };
}

function processFigures(pid: number): { openFiles: number; rssMiB: number } {
  const rss = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return { openFiles: fs.readdirSync(`/proc/${pid}/fd`).length, rssMiB: round2(Number(rss ?? 0) / 1024) };
}

function folderBytes(dir: string): number {
  return fs.readdirSync(dir).reduce((total, file) => total + fs.statSync(path.join(dir, file)).size, 0);
}

await main();
