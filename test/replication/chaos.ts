/**
 * A Jepsen-style round against replicated nodes: three nats-servers as a JetStream cluster, three fenecdb nodes
 * with `--nats` (each through a partition proxy of its own, partition-proxy.ts), two routers; writers insert rows
 * with keys of their own into many tenants through both routers, and readers read tenants back through them, while
 * a nemesis kills a node (-9, started again on its folder and port), pauses one (SIGSTOP, then SIGCONT), or cuts
 * one off from the NATS cluster (its proxy black-holes, or resets, for 3 s). The checker holds the history to:
 *
 * - every acknowledged write is there at the end, and none twice;
 * - no write that was refused for certain (fenced: another node owned the tenant) is there — two nodes never both
 *   took writes for one tenant;
 * - each read (answered 200, through a router or straight from a node) holds every write to its tenant
 *   acknowledged before the read was sent: no node answers from a copy that a failover left behind;
 * - each tenant's quotas and policy are the ones it was given.
 *
 * `make chaos` runs a long round (test/replication/chaos-main.ts); `make test` a short one (chaos.test.ts).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  FENEC_ROUTER,
  request,
  Sandbox,
  tenantQuery,
  type Reply,
  type ServerProcess,
} from '../integration/processes.js';
import { pause } from '../helpers/pause.js';
import { describe, Exits, processState } from './exits.js';
import { freePort, NatsCluster } from './nats-cluster.js';
import { PartitionProxy } from './partition-proxy.js';

const TOKEN = 'chaos-test-token-0123456789abcdef0123';
const AUTH = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

export interface ChaosOptions {
  readonly durationMs: number;
  readonly tenants: number;
  readonly writers: number;
  /** Milliseconds between the nemesis's faults. */
  readonly faultEveryMs: number;
  /**
   * The fewest faults a round makes: it goes on past durationMs until the nemesis has made them, with writes
   * running a fault's interval after the last (a loaded machine takes seconds to start a killed node again).
   */
  readonly minFaults?: number;
  readonly log?: (line: string) => void;
}

export interface ChaosResult {
  readonly acknowledged: number;
  readonly unknown: number;
  readonly refused: number;
  readonly faults: string[];
  /** Problems the checker found (empty: the history holds). */
  readonly violations: string[];
  /** Per kill -9: how long until every tenant took a write again (ms). */
  readonly recoveries: number[];
  /** Per partition: how long from the cut until every tenant took a write again (ms). */
  readonly partitionRecoveries: number[];
  /** Reads answered and checked against the writes acknowledged before them. */
  readonly reads: number;
  /** How each node's and router's process ended during the round (exits.ts), one line each. */
  readonly exits: string[];
}

interface NodeSlot {
  readonly name: string;
  readonly port: number;
  readonly dir: string;
  readonly proxy: PartitionProxy;
  process: ServerProcess | undefined;
  paused: boolean;
  /** The logs of the node's earlier processes (killed). */
  readonly logs: string[];
}

type Outcome = 'ok' | 'unknown' | 'refused';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const post = (base: string, tenant: string, statement: string, params: unknown[] = []): Promise<Reply> =>
  tenantQuery(base, TOKEN, tenant, statement, params, 15_000);

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? (() => undefined);
  const sandbox = new Sandbox();
  let cluster: NatsCluster | undefined;
  const slots: NodeSlot[] = [];
  const exits = new Exits();
  try {
    cluster = await NatsCluster.start(3);
    const nats = cluster.urls;
    for (const name of ['n1', 'n2', 'n3']) {
      const [port, proxy] = [await freePort(), await PartitionProxy.start(nats)];
      slots.push({ name, port, dir: sandbox.dir(), proxy, process: undefined, paused: false, logs: [] });
    }
    const start = async (slot: NodeSlot): Promise<void> => {
      const through = slot.proxy.urls;
      slot.process = await sandbox.startServer(
        [
          ...['--data-dir', slot.dir, '--port', String(slot.port), '--nats', through, '--node-name', slot.name],
          ...['--lease', '1s', '--workers', '1', '--snapshot-every', '50', '--tenant-rate', '10000'],
          ...['--tenant-burst', '10000'],
        ],
        { FENEC_TOKEN: TOKEN },
      );
      exits.watch(slot.name, slot.process);
      slot.paused = false;
    };
    await Promise.all(slots.map(start));
    const nodes = slots.map((slot) => `${slot.name}=http://127.0.0.1:${slot.port}`).join(',');
    const routers = await Promise.all(
      [0, 1].map(() =>
        sandbox.startProgram(FENEC_ROUTER, ['--port', '0', '--nodes', nodes, '--nats', nats, '--workers', '1'], {
          FENEC_TOKEN: TOKEN,
        }),
      ),
    );
    for (const [i, router] of routers.entries()) exits.watch(`router ${i + 1}`, router);
    const tenants = Array.from({ length: options.tenants }, (_, i) => `t${i}`);
    for (const [i, tenant] of tenants.entries()) {
      const quotas = { maxRows: 100_000 + i, rate: 10_000, burst: 10_000 };
      const put = await request(routers[0]!.url, {
        method: 'PUT',
        path: `/t/${tenant}`,
        headers: AUTH,
        body: JSON.stringify(quotas),
      });
      if (put.status !== 201) throw new Error(`PUT ${tenant}: ${put.status} ${put.text}`);
      await retry(() => post(routers[i % 2]!.url, tenant, 'create collection rows (key text unique)'));
    }
    const policed = tenants[0]!;
    // A node's own route (routers forward no policy): any node writes it to the directory, every node takes it.
    const policy = await request(`http://127.0.0.1:${slots[0]!.port}`, {
      method: 'PUT',
      path: `/t/${policed}/_policy`,
      headers: AUTH,
      body: JSON.stringify({ policy: 'rows read' }),
    });
    if (policy.status !== 200) throw new Error(`PUT policy: ${policy.status} ${policy.text}`);
    log(`${tenants.length} tenants on ${slots.length} nodes, ${routers.length} routers`);

    const history = new Map<string, { tenant: string; outcome: Outcome }>();
    const lastOk = new Map<string, number>();
    /** Each tenant's acknowledged keys, in the order their 200s came. */
    const acked = new Map<string, string[]>(tenants.map((tenant) => [tenant, []]));
    const violations: string[] = [];
    let stopAt = Date.now() + options.durationMs;
    const roundEnd = (): number => stopAt;
    const writer = async (w: number): Promise<void> => {
      for (let k = 0; Date.now() < stopAt; k++) {
        const tenant = tenants[(w + k) % tenants.length]!;
        const key = `${w}-${k}`;
        let outcome: Outcome;
        try {
          const answer = await post(routers[k % 2]!.url, tenant, 'insert into rows {key: $1}', [key]);
          const code = answer.json?.error?.code as string | undefined;
          outcome =
            answer.status === 200
              ? 'ok'
              : code === 'log_unavailable' ||
                  code === 'unavailable' ||
                  code === 'statement_timeout' ||
                  code === undefined
                ? 'unknown'
                : 'refused';
        } catch {
          outcome = 'unknown';
        }
        history.set(key, { tenant, outcome });
        if (outcome === 'ok') {
          lastOk.set(tenant, Date.now());
          acked.get(tenant)!.push(key);
        } else await sleep(100);
      }
    };
    let reads = 0;
    const reader = async (r: number): Promise<void> => {
      for (let k = 0; Date.now() < stopAt; k++) {
        const tenant = tenants[(r * 7 + k) % tenants.length]!;
        // The writes acknowledged before the read is sent: every one of them must be in its answer.
        const before = acked.get(tenant)!.length;
        // Every other read goes straight to a node, as a router whose view of the directory is behind sends it.
        const base = k % 2 === 0 ? routers[r % 2]!.url : `http://127.0.0.1:${slots[(k >> 1) % slots.length]!.port}`;
        const answer = await post(base, tenant, 'get rows select key limit 1000000').catch(() => undefined);
        if (answer?.status === 200) {
          reads += 1;
          const keys = new Set((answer.json.rows as { key: string }[]).map((row) => row.key));
          const missing = acked
            .get(tenant)!
            .slice(0, before)
            .filter((key) => !keys.has(key));
          if (missing.length > 0) {
            violations.push(
              `a read of ${tenant} from ${base} at ${new Date().toISOString()} lacks ${missing.length} acknowledged write(s): ${missing.slice(0, 5).join(', ')}`,
            );
          }
        }
        await sleep(answer?.status === 200 ? 50 : 200);
      }
    };
    const faults: string[] = [];
    const recoveries: number[] = [];
    const partitionRecoveries: number[] = [];
    const nemesis = async (): Promise<void> => {
      let round = 0;
      while (Date.now() + options.faultEveryMs < stopAt || faults.length < (options.minFaults ?? 0)) {
        await sleep(options.faultEveryMs);
        // Each fault in turn (kill -9, SIGSTOP, partition), each time on the next node after the last three.
        const slot = slots[(round + Math.floor(round / 3)) % slots.length]!;
        round += 1;
        // A node that died on its own (a violation already) is started again at its next kill, and spared the rest.
        const dead = slot.process!.child.exitCode !== null || slot.process!.child.signalCode !== null;
        if (dead && round % 3 !== 1) {
          log(`nemesis: ${slot.name} is not running; no fault this time`);
        } else if (round % 3 === 0) {
          // Every other partition resets the node's connections instead of black-holing them.
          const mode = round % 6 === 0 ? 'reset' : 'black-hole';
          faults.push(`partition ${slot.name} (${mode})`);
          log(`nemesis: partition ${slot.name} from NATS (${mode}) for 3 s`);
          const cutAt = Date.now();
          slot.proxy.cut(mode);
          void measureRecovery(cutAt, lastOk, tenants, roundEnd).then((ms) => {
            if (ms !== undefined) partitionRecoveries.push(ms);
          });
          await sleep(3000);
          slot.proxy.heal();
        } else if (round % 3 === 1) {
          faults.push(`kill -9 ${slot.name}`);
          log(`nemesis: kill -9 ${slot.name}`);
          const killedAt = Date.now();
          exits.expect(slot.process!.child);
          await sandbox.kill(slot.process!.child);
          slot.logs.push(slot.process!.stderr());
          void measureRecovery(killedAt, lastOk, tenants, roundEnd).then((ms) => {
            if (ms !== undefined) recoveries.push(ms);
          });
          await sleep(1500);
          await start(slot);
        } else {
          faults.push(`SIGSTOP ${slot.name}`);
          log(`nemesis: SIGSTOP ${slot.name} for 2 s`);
          // The 2 s begin once every thread of the node has stopped (test/helpers/pause.ts says why).
          slot.paused = true;
          await pause([slot.process!.pid]);
          await sleep(2000);
          process.kill(slot.process!.pid, 'SIGCONT');
          slot.paused = false;
        }
        if (faults.length <= (options.minFaults ?? 0)) stopAt = Math.max(stopAt, Date.now() + options.faultEveryMs);
      }
    };
    await Promise.all([
      ...Array.from({ length: options.writers }, (_, w) => writer(w)),
      ...[0, 1].map((r) => reader(r)),
      nemesis(),
    ]);

    // The nodes' logs, to find out why (a violation, or a check that could not be made: a node gone, say).
    const keepLogs = (): void => {
      const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-chaos-logs-'));
      for (const slot of slots)
        fs.writeFileSync(
          path.join(folder, `${slot.name}.log`),
          [...slot.logs, slot.process?.stderr() ?? ''].join('\n'),
        );
      log(`the nodes' logs: ${folder}`);
    };
    try {
      for (const exit of exits.unexpected()) violations.push(describe(exit));
      // Quiet: every tenant answers again, then the history is read back.
      const seen = new Map<string, number>();
      const readBack = new Set<string>();
      for (const tenant of tenants) {
        let answer: Reply;
        try {
          answer = await retry(() => post(routers[0]!.url, tenant, 'get rows select key limit 1000000'));
        } catch (err) {
          // Which node holds it up, and whether that node still answers anything: a node gone, stopped, or stuck.
          const nodes = await Promise.all(slots.map((slot) => probe(slot, tenant)));
          violations.push(`tenant ${tenant} answers no read through a router: ${String(err)}; ${nodes.join('; ')}`);
          continue;
        }
        readBack.add(tenant);
        for (const { key } of answer.json.rows as { key: string }[]) seen.set(key, (seen.get(key) ?? 0) + 1);
      }
      for (const [key, { tenant, outcome }] of history) {
        if (!readBack.has(tenant)) continue;
        const count = seen.get(key) ?? 0;
        if (outcome === 'ok' && count === 0) violations.push(`acknowledged write ${key} to ${tenant} is lost`);
        if (outcome === 'refused' && count > 0) violations.push(`refused write ${key} to ${tenant} is there`);
      }
      for (const [key, count] of seen) {
        if (count > 1) violations.push(`write ${key} is there ${count} times`);
        if (!history.has(key)) violations.push(`write ${key} was never made`);
      }
      const listed = await request(routers[0]!.url, { path: '/_tenants', headers: AUTH });
      // (It asks every node: one not running fails it, a violation of its own above.)
      if (listed.status !== 200) violations.push(`the router's /_tenants answered ${listed.status}: ${listed.text}`);
      else
        for (const [i, tenant] of tenants.entries()) {
          const entries = (listed.json?.tenants ?? []).filter((t: { name: string }) => t.name === tenant);
          if (entries.length === 0) violations.push(`tenant ${tenant} is not listed`);
          for (const entry of entries)
            if (entry.quotas.maxRows !== 100_000 + i) violations.push(`tenant ${tenant} lost its quotas`);
        }
      // Read on the last node still running (a node's own route).
      const running = slots.filter((slot) => processState(slot.process!.pid) !== 'gone').pop() ?? slots[2]!;
      const kept = await retry(() =>
        request(`http://127.0.0.1:${running.port}`, { path: `/t/${policed}/_policy`, headers: AUTH }),
      );
      if (kept.json?.policy !== 'rows read') violations.push(`tenant ${policed} lost its policy: ${kept.text}`);
    } catch (err) {
      keepLogs();
      throw err;
    }
    if (violations.length > 0) keepLogs();
    const counts = { ok: 0, unknown: 0, refused: 0 };
    for (const { outcome } of history.values()) counts[outcome] += 1;
    return {
      acknowledged: counts.ok,
      unknown: counts.unknown,
      refused: counts.refused,
      faults,
      violations,
      recoveries,
      partitionRecoveries,
      reads,
      exits: exits.summary(),
    };
  } finally {
    exits.end();
    for (const slot of slots) if (slot.paused && slot.process !== undefined) process.kill(slot.process.pid, 'SIGCONT');
    await sandbox.cleanUp();
    for (const slot of slots) await slot.proxy.stop();
    await cluster?.stop();
    for (const slot of slots) fs.rmSync(path.join(slot.dir), { recursive: true, force: true });
  }
}

/** A node's process state, and how it answers its health check and a read of `tenant` (each given 3 s). */
async function probe(slot: NodeSlot, tenant: string): Promise<string> {
  const base = `http://127.0.0.1:${slot.port}`;
  const asked = async (call: () => Promise<Reply>): Promise<string> => {
    const started = Date.now();
    try {
      const answer = await call();
      return `${answer.status} ${answer.json?.error?.code ?? ''} in ${Date.now() - started} ms`;
    } catch (err) {
      return `${String(err)} after ${Date.now() - started} ms`;
    }
  };
  const health = await asked(() => request(base, { path: '/_health', timeoutMs: 3000 }));
  const read = await asked(() => tenantQuery(base, TOKEN, tenant, 'get rows select key limit 1', [], 3000));
  const pid = slot.process?.pid;
  const state = pid === undefined ? 'none' : processState(pid);
  return `${slot.name} (pid ${pid}, state ${state}): /_health ${health}, a read of ${tenant} ${read}`;
}

/** The first 200 within 30 s of retries (the last answer, or the last error, past it). */
async function retry(call: () => Promise<Reply>): Promise<Reply> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    let answer: Reply | undefined;
    try {
      answer = await call();
      if (answer.status === 200) return answer;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline) throw new Error(`no 200 within 30 s: ${answer?.status} ${answer?.text}`);
    await sleep(200);
  }
}

/** How long after `killedAt` every tenant took a write again (undefined: not before the round ended). */
async function measureRecovery(
  killedAt: number,
  lastOk: ReadonlyMap<string, number>,
  tenants: readonly string[],
  roundEnd: () => number,
): Promise<number | undefined> {
  while (Date.now() < roundEnd()) {
    await sleep(100);
    if (tenants.every((tenant) => (lastOk.get(tenant) ?? 0) > killedAt)) {
      return Math.max(...tenants.map((tenant) => lastOk.get(tenant)!)) - killedAt;
    }
  }
  return undefined;
}
