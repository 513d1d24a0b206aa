import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { expect } from 'chai';
import {
  FENEC,
  FENEC_ROUTER,
  request,
  Sandbox,
  tenantQuery,
  type Reply,
  type ServerProcess,
} from '../integration/processes.js';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Objm, type ObjectInfo } from '@nats-io/obj';
import { NatsCluster } from './nats-cluster.js';
import { eventually } from '../helpers/eventually.js';
import { pause } from '../helpers/pause.js';
import { FenecError } from '../../shared/errors.js';
import { TenantLog, type LoggedChange } from '../../node/replication/log.js';
import { rendezvous } from '../../shared/rendezvous.js';

const TOKEN = 'replication-test-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

const tq = (base: string, tenant: string, statement: string, params: unknown[] = []): Promise<Reply> =>
  tenantQuery(base, TOKEN, tenant, statement, params);

describe('replication on NATS JetStream (--nats)', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let cluster: NatsCluster;

  before(async () => {
    cluster = await NatsCluster.start(3);
  });
  // Each test's nodes are ended with it: their leases lapse, and the next test's nodes take no tenant of theirs.
  afterEach(() => sandbox.cleanUp());
  after(async () => {
    await sandbox.cleanUp();
    await cluster?.stop();
  });

  function node(name: string, dir: string, extra: string[] = []): Promise<ServerProcess> {
    return sandbox.startServer(
      // A generous ack timeout: on a loaded machine 2 s is passed, and the answer is then log_unavailable.
      [
        ...['--data-dir', dir, '--nats', cluster.urls, '--node-name', name, '--lease', '1s', '--workers', '1'],
        ...['--nats-ack-timeout', '10s', ...extra],
      ],
      { FENEC_TOKEN: TOKEN },
    );
  }

  /** Two nodes, each of its own folder, and a router with --nats in front of them. */
  async function twoNodesAndRouter(
    nameA: string,
    nameB: string,
  ): Promise<{ a: ServerProcess; b: ServerProcess; router: ServerProcess }> {
    const a = await node(nameA, sandbox.dir());
    const b = await node(nameB, sandbox.dir());
    const router = await sandbox.startProgram(
      FENEC_ROUTER,
      ['--port', '0', '--nodes', `${nameA}=${a.url},${nameB}=${b.url}`, '--nats', cluster.urls, '--workers', '1'],
      { FENEC_TOKEN: TOKEN },
    );
    return { a, b, router };
  }

  async function createTenant(base: string, tenant: string): Promise<void> {
    const created = await request(base, { method: 'PUT', path: `/t/${tenant}`, headers: auth, body: '{}' });
    expect(created.status, created.text).to.equal(201);
    const made = await tq(base, tenant, 'create collection notes (n int, body text @text)');
    expect(made.status, made.text).to.equal(200);
  }

  async function ns(base: string, tenant: string): Promise<number[]> {
    const answer = await tq(base, tenant, 'get notes select n order n');
    expect(answer.status, answer.text).to.equal(200);
    return answer.json.rows.map((row: { n: number }) => row.n);
  }

  it('a tenant outlives its node: every acknowledged write, its quotas and policy, on another node after kill -9', async () => {
    const a = await node('a', sandbox.dir());
    const created = await request(a.url, {
      method: 'PUT',
      path: '/t/acme',
      headers: auth,
      body: JSON.stringify({ maxRows: 500, rate: 1000, burst: 1000 }),
    });
    expect(created.status, created.text).to.equal(201);
    const policy = await request(a.url, {
      method: 'PUT',
      path: '/t/acme/_policy',
      headers: auth,
      body: JSON.stringify({ policy: 'notes read' }),
    });
    expect(policy.status, policy.text).to.equal(200);
    expect((await tq(a.url, 'acme', 'create collection notes (n int, body text @text)')).status).to.equal(200);
    const acked: number[] = [];
    for (let n = 0; n < 30; n++) {
      const answer = await tq(a.url, 'acme', 'insert into notes {n: $1, body: $2}', [n, `note ${n}`]);
      expect(answer.status, answer.text).to.equal(200);
      acked.push(n);
    }
    // The other node is up before the kill: what is measured is the failover, not a start.
    const b = await node('b', sandbox.dir());
    await sandbox.kill(a.child);
    const killed = Date.now();
    const rows = await eventually(async () => {
      const answer = await tq(b.url, 'acme', 'get notes select n order n');
      expect(answer.status, answer.text).to.equal(200);
      return answer.json.rows.map((row: { n: number }) => row.n);
    });
    const failoverMs = Date.now() - killed;
    expect(rows).to.deep.equal(acked);
    const tenants = await request(b.url, { path: '/_tenants', headers: auth });
    expect(tenants.json.tenants[0]).to.deep.include({ name: 'acme' });
    expect(tenants.json.tenants[0].quotas).to.deep.include({ maxRows: 500 });
    const held = await request(b.url, { path: '/t/acme/_policy', headers: auth });
    expect(held.json).to.deep.equal({ policy: 'notes read' });
    // And it takes writes there.
    expect((await tq(b.url, 'acme', 'insert into notes {n: 30}')).status).to.equal(200);
    console.log(`      (failover: ${failoverMs} ms from kill -9 to an answer on the other node, lease 1 s)`);
    expect(failoverMs).to.be.below(10_000);
  });

  it("keeps a warm standby's copy (--standby) at the log's head, and fails over to it without the snapshot", async () => {
    const dirs = { wa: sandbox.dir(), wb: sandbox.dir(), wc: sandbox.dir() };
    const a = await node('wa', dirs.wa, ['--standby', '--snapshot-every', '5']);
    const b = await node('wb', dirs.wb, ['--standby']);
    const c = await node('wc', dirs.wc, ['--standby']);
    await createTenant(a.url, 'warm');
    for (let n = 0; n < 20; n++)
      expect((await tq(a.url, 'warm', 'insert into notes {n: $1}', [n])).status).to.equal(200);
    // The node failover would pick among the others keeps the copy; the third keeps none.
    const next = rendezvous('warm', ['wb', 'wc'], (name) => name) as 'wb' | 'wc';
    const other = next === 'wb' ? 'wc' : 'wb';
    const standby = next === 'wb' ? b : c;
    const nc = await connect({ servers: cluster.urls.split(',') });
    try {
      const log = await TenantLog.open(nc, 3, 10_000);
      const head = await log.last('warm');
      await eventually(async () => {
        expect(fs.readFileSync(path.join(dirs[next], 'warm.seq'), 'utf8').trim()).to.equal(String(head));
      });
    } finally {
      await nc.close();
    }
    expect(fs.existsSync(path.join(dirs[other], 'warm.fenec'))).to.equal(false);
    // Not served there: it is still a's.
    const refused = await tq(standby.url, 'warm', 'get notes count');
    expect(refused.json.error?.code, refused.text).to.equal('tenant_moving');
    await sandbox.kill(a.child);
    const rows = await eventually(() => ns(standby.url, 'warm'));
    expect(rows).to.deep.equal([...Array(20).keys()]);
    // Its copy was the log's head: nothing fetched, nothing rebuilt.
    expect(standby.stderr()).not.to.match(/"rebuilt":true/);
    expect((await tq(standby.url, 'warm', 'insert into notes {n: 20}')).status).to.equal(200);
  });

  it('fences a paused node: after another took its tenant, its write is refused and never in the log', async () => {
    const a = await node('pa', sandbox.dir());
    await createTenant(a.url, 'fenced');
    expect((await tq(a.url, 'fenced', 'insert into notes {n: 1}')).status).to.equal(200);
    const b = await node('pb', sandbox.dir());
    await pause([a.pid]);
    try {
      // b takes the tenant once a's lease lapses, and writes to it.
      await eventually(async () => {
        const answer = await tq(b.url, 'fenced', 'insert into notes {n: 2}');
        expect(answer.status, answer.text).to.equal(200);
      });
      // A write sent to a while it is stopped is read when it goes on: refused, whichever a learns first (its own
      // lease lapsed, the tenant taken, or the fence).
      const stale = tq(a.url, 'fenced', 'insert into notes {n: 3}');
      await new Promise((resolve) => setTimeout(resolve, 200));
      process.kill(a.pid, 'SIGCONT');
      const refused = await stale;
      expect(refused.status, refused.text).to.be.oneOf([503, 429]);
      expect(refused.json.error.code).to.be.oneOf(['unavailable', 'tenant_fenced', 'tenant_moving']);
      expect(refused.headers['retry-after']).to.equal('1');
    } finally {
      process.kill(a.pid, 'SIGCONT');
    }
    expect(await ns(b.url, 'fenced')).to.deep.equal([1, 2]);
  });

  it("answers near with every acknowledged row at once on the node that restored a killed one's tenant (the vector index caught up meanwhile)", async () => {
    // A longer lease: on a loaded machine a 1 s lease can lapse during the loads (then answered unavailable).
    const a = await node('va', sandbox.dir(), ['--snapshot-every', '4', '--lease', '3s']);
    const created = await request(a.url, { method: 'PUT', path: '/t/vectors', headers: auth, body: '{}' });
    expect(created.status, created.text).to.equal(201);
    expect((await tq(a.url, 'vectors', 'create collection docs (k int, vec vector<8> @hnsw(cosine))')).status).to.equal(
      200,
    );
    // Rows in batches (a snapshot after the fourth change), then one at a time: the last ones only in the log. More
    // rows than an index adds on the spot (2 048 of 8 floats): opened on b, most wait for a background add.
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    const vectorOf = (): number[] => Array.from({ length: 8 }, random);
    const vectors: number[][] = [];
    for (let batch = 0; batch < 4; batch++) {
      const rows = Array.from({ length: 1000 }, (_, i) => ({ k: batch * 1000 + i, vec: vectorOf() }));
      for (const row of rows) vectors.push(row.vec);
      const answer = await tq(a.url, 'vectors', 'insert into docs $1', [rows]);
      expect(answer.status, answer.text).to.equal(200);
    }
    for (let k = 4000; k < 4020; k++) {
      const vec = vectorOf();
      vectors.push(vec);
      expect((await tq(a.url, 'vectors', 'insert into docs {k: $1, vec: $2}', [k, vec])).status).to.equal(200);
    }
    const b = await node('vb', sandbox.dir());
    await sandbox.kill(a.child);
    const killed = Date.now();
    // The first answer on b: every row (each has a vector), the one asked for first.
    const near = await eventually(async () => {
      const answer = await tq(b.url, 'vectors', 'get docs select k near vec $1 limit 5000', [vectors[4019]]);
      expect(answer.status, answer.text).to.equal(200);
      return answer.json.rows as { k: number; _score: number }[];
    });
    console.log(`      (near answered on the other node ${Date.now() - killed} ms after kill -9)`);
    expect(near.map((row) => row.k).sort((x, y) => x - y)).to.deep.equal([...Array(4020).keys()]);
    expect(near[0]!.k).to.equal(4019);
    expect(near[0]!._score).to.be.closeTo(1, 1e-4);
    // A row acknowledged on b is found at once too.
    expect(
      (await tq(b.url, 'vectors', 'insert into docs {k: 4020, vec: $1}', [vectors[5]!.map((x) => -x)])).status,
    ).to.equal(200);
    const opposite = await tq(b.url, 'vectors', 'get docs select k near vec $1 limit 1', [vectors[5]!.map((x) => -x)]);
    expect(opposite.json.rows[0].k, opposite.text).to.equal(4020);
  });

  it('restores a tenant from its latest snapshot and the log after it (the log trimmed behind the older one)', async () => {
    const d = await node('sd', sandbox.dir(), ['--snapshot-every', '5']);
    await createTenant(d.url, 'snapped');
    for (let n = 0; n < 23; n++)
      expect((await tq(d.url, 'snapped', 'insert into notes {n: $1}', [n])).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await sandbox.kill(d.child);
    const e = await node('se', sandbox.dir());
    const rows = await eventually(() => ns(e.url, 'snapped')).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${e.stderr()}`);
    });
    expect(rows).to.deep.equal([...Array(23).keys()]);
    expect(e.stderr()).to.match(/"rebuilt":true/);
    expect(e.stderr()).to.match(/"applied":[0-4],/);
  });

  it('answers a restore whose snapshot is replaced while it is read (its chunks purged) with log_unavailable, not never', async () => {
    const d = await node('pa', sandbox.dir(), ['--snapshot-every', '3']);
    await createTenant(d.url, 'purged');
    const nc = await connect({ servers: cluster.urls.split(',') });
    try {
      const store = await new Objm(nc).open('fenec-snapshots');
      // A snapshot due while another is stored is not taken: rows go in until both slots hold one.
      let rows = 0;
      const snapshots = async (): Promise<ObjectInfo[]> => {
        const infos = await Promise.all(['a', 'b'].map((slot) => store.info(`purged.${slot}`)));
        const stored = infos.filter((info): info is ObjectInfo => info !== null && !info.deleted);
        return stored.sort((x, y) => Number(x.metadata!.seq) - Number(y.metadata!.seq));
      };
      await eventually(async () => {
        expect((await tq(d.url, 'purged', 'insert into notes {n: $1}', [rows])).status).to.equal(200);
        rows += 1;
        expect(await snapshots()).to.have.length(2);
      });
      // The last insert may have begun another: the latest is read once the store has been still a while.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const latest = (await snapshots()).pop()!;
      await sandbox.kill(d.child);
      // What a reader of the object sees when another node stores over it: its entry names chunks no longer there.
      const bytes = await store.getBlob(latest.name);
      const jsm = await jetstreamManager(nc);
      await jsm.streams.purge('OBJ_fenec-snapshots', { filter: `$O.fenec-snapshots.C.${latest.nuid}` });
      const e = await node('pb', sandbox.dir(), ['--nats-ack-timeout', '2s']);
      // Once d's lease has lapsed, e takes the tenant and restores it from that snapshot.
      const answer = await eventually(async () => {
        const asked = await request(e.url, {
          method: 'POST',
          path: '/t/purged/query',
          headers: auth,
          body: JSON.stringify({ statement: 'get notes select n order n' }),
          timeoutMs: 10_000,
        });
        expect(asked.json?.error?.code, asked.text).to.not.equal('tenant_moving');
        return asked;
      });
      expect(answer.json?.error?.code, answer.text).to.equal('log_unavailable');
      // The other node's store done (the object whole again, under new chunks): the next request is served.
      await store.putBlob({ name: latest.name, metadata: latest.metadata }, bytes);
      expect(await eventually(() => ns(e.url, 'purged'))).to.deep.equal([...Array(rows).keys()]);
    } finally {
      await nc.close();
    }
  });

  it("refuses a read of a tenant's log that was trimmed under it (log_unavailable), and reads what follows on", async () => {
    // The stream's sequences are every tenant's: only the messages themselves can tell a reader what is missing.
    const nc = await connect({ servers: cluster.urls.split(',') });
    try {
      // The cluster may still be electing its JetStream leader when this test runs first.
      const log = await eventually(() => TenantLog.open(nc, 3, 10_000), 60_000);
      const seqs: number[] = [];
      for (let n = 0; n < 5; n++)
        seqs.push(await log.append('trimmed-under', Buffer.from(`change ${n}`), seqs.at(-1) ?? 0));
      // What a snapshot stored while a copy reads behind it does: the log trimmed past where the copy is.
      await log.trim('trimmed-under', seqs[3]!);
      const read: string[] = [];
      const each = async (change: LoggedChange): Promise<void> => {
        read.push(Buffer.from(change.bytes).toString());
      };
      const refused = await log.read('trimmed-under', seqs[0]!, seqs[4]!, each).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).to.be.instanceOf(FenecError);
      expect((refused as FenecError).code).to.equal('log_unavailable');
      expect((refused as FenecError).message).to.match(/trimmed while it was read/);
      expect(read, 'no change applied past the gap').to.deep.equal([]);
      // From the last message trimmed, as from a newer snapshot, nothing is missing.
      await log.read('trimmed-under', seqs[2]!, seqs[4]!, each);
      expect(read).to.deep.equal(['change 3', 'change 4']);
    } finally {
      await nc.close();
    }
  });

  it('appends a 1 000-row batch as one message of the log, not one a row', async () => {
    const d = await node('bulk', sandbox.dir());
    await createTenant(d.url, 'bulk');
    const nc = await connect({ servers: cluster.urls.split(',') });
    try {
      const jsm = await jetstreamManager(nc);
      const messages = async (): Promise<number> => {
        const info = await jsm.streams.info('FENEC_LOG', { subjects_filter: 'fenec.log.bulk' });
        return info.state.subjects?.['fenec.log.bulk'] ?? 0;
      };
      const before = await messages();
      const rows = Array.from({ length: 1000 }, (_, n) => ({ n, body: `a row of a bulk import, number ${n}` }));
      const batch = await tq(d.url, 'bulk', 'insert into notes $1', [rows]);
      expect(batch.status, batch.text).to.equal(200);
      expect((await messages()) - before).to.equal(1);
    } finally {
      await nc.close();
    }
  });

  /** A POST of `statement` asking for the interim answer (fenec-interim: committed): the statuses as they came. */
  function interim(base: string, tenant: string, statement: string): Promise<number[]> {
    return new Promise((resolve, reject) => {
      const statuses: number[] = [];
      const sent = http.request(
        `${base}/t/${tenant}/query`,
        { method: 'POST', headers: { ...auth, 'fenec-interim': 'committed' } },
        (res) => {
          statuses.push(res.statusCode!);
          res.resume();
          res.on('end', () => resolve(statuses));
        },
      );
      sent.on('information', (info) => statuses.push(info.statusCode));
      sent.on('error', reject);
      sent.end(JSON.stringify({ statement }));
    });
  }

  it('answers a committed write 102 before the log acks it, through the router too, and fenec import sends its next batch on it', async () => {
    const { a, router } = await twoNodesAndRouter('ia', 'ib');
    await createTenant(a.url, 'loaded');
    expect(await interim(a.url, 'loaded', 'insert into notes {n: -1}')).to.deep.equal([102, 200]);
    expect(await interim(router.url, 'loaded', 'insert into notes {n: -2}')).to.deep.equal([102, 200]);
    // Not for a refused write, nor for a read: nothing is waiting for the log.
    expect(await interim(router.url, 'loaded', "insert into notes {n: 'x'}")).to.deep.equal([400]);
    expect(await interim(router.url, 'loaded', 'get notes count')).to.deep.equal([200]);
    const plain = await sandbox.startServer(['--data-dir', sandbox.dir()], { FENEC_TOKEN: TOKEN });
    await createTenant(plain.url, 'plain');
    expect(await interim(plain.url, 'plain', 'insert into notes {n: 0}')).to.deep.equal([200]);

    const file = path.join(sandbox.dir(), 'rows.ndjson');
    const count = 3000;
    fs.writeFileSync(
      file,
      Array.from({ length: count }, (_, n) => `${JSON.stringify({ n, body: `row ${n} of the import` })}\n`).join(''),
    );
    // About 40 rows a batch: 75 batches, each sent on the 102 of the one before.
    const run = await sandbox.run(
      FENEC,
      ['import', '--url', `${router.url}/t/loaded`, 'notes', file, '--batch-bytes', '1500', '--no-wait'],
      {
        FENEC_TOKEN: TOKEN,
      },
    );
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout.trim())).to.include({ collection: 'notes', rows: count });
    // In the file's order (ids follow the lines), every row acknowledged in the log: read on the other node after
    // kill -9.
    await sandbox.kill(a.child);
    const rows = await eventually(async () => {
      const answer = await tq(router.url, 'loaded', 'get notes select n where n >= 0 order id limit 5000');
      expect(answer.status, answer.text).to.equal(200);
      return answer.json.rows.map((row: { n: number }) => row.n);
    });
    expect(rows).to.deep.equal([...Array(count).keys()]);
  });

  it('gives a tenant as of a point in time (snapshot and log), and a restore of it outlives its node', async () => {
    // Changes 1–7 (the file, the collection, 5 rows) before the time, 8–12 after: the snapshot after change 6 is
    // stored before it (the wait), the one after change 12 after it, so both are kept and the time is served.
    const f = await node('pf', sandbox.dir(), ['--snapshot-every', '6']);
    await createTenant(f.url, 'pitr');
    for (let n = 0; n < 5; n++)
      expect((await tq(f.url, 'pitr', 'insert into notes {n: $1}', [n])).status).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const at = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (let n = 5; n < 10; n++)
      expect((await tq(f.url, 'pitr', 'insert into notes {n: $1}', [n])).status).to.equal(200);
    const copy = await new Promise<Buffer>((resolve, reject) => {
      http.get(`${f.url}/t/pitr/_backup?at=${encodeURIComponent(at)}`, { headers: auth }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(Buffer.concat(chunks).toString())),
        );
      });
    });
    const restored = await request(f.url, { method: 'PUT', path: '/t/pitr-copy/_backup', headers: auth, body: copy });
    expect(restored.status, restored.text).to.equal(201);
    expect(await ns(f.url, 'pitr-copy')).to.deep.equal([0, 1, 2, 3, 4]);
    await sandbox.kill(f.child);
    const g = await node('pg', sandbox.dir());
    expect(await eventually(() => ns(g.url, 'pitr-copy'))).to.deep.equal([0, 1, 2, 3, 4]);
    expect(await eventually(() => ns(g.url, 'pitr'))).to.deep.equal([...Array(10).keys()]);
  });

  it('routes by the directory (--nats on the router) and moves a tenant by compare-and-set, no copy through it', async () => {
    const { a, b, router } = await twoNodesAndRouter('ra', 'rb');
    await createTenant(a.url, 'moved');
    for (let n = 0; n < 3; n++)
      expect((await tq(router.url, 'moved', 'insert into notes {n: $1}', [n])).status).to.equal(200);
    const move = await request(router.url, {
      method: 'POST',
      path: '/t/moved/_move',
      headers: auth,
      body: '{"to": "rb"}',
    });
    expect(move.status, move.text).to.equal(200);
    expect(move.json).to.deep.include({ moved: 'moved', from: 'ra', to: 'rb' });
    // The router follows the directory at once; the old node sends the tenant on.
    await eventually(async () => {
      const answer = await tq(router.url, 'moved', 'insert into notes {n: 3}');
      expect(answer.status, answer.text).to.equal(200);
    });
    const stale = await tq(a.url, 'moved', 'insert into notes {n: 99}');
    expect(stale.status, stale.text).to.equal(429);
    expect(stale.json.error.code).to.equal('tenant_moving');
    expect(await ns(b.url, 'moved')).to.deep.equal([0, 1, 2, 3]);
  });

  it('pauses the cluster for the tests that say it is paused: nothing sent after the pause is acked, on a loaded machine too', async () => {
    // One busy process a core. SIGSTOP takes hold only once the kernel has run one thread of each server, and on
    // cores this busy the servers acked one publish in ten to one in four sent right after their kill (2 to 5 of
    // these 30 rounds, without the wait in pause): the log_unavailable test below once got a 200 so, the write in
    // the log. Each loop ends on its own within a bound, should this process be killed before it ends them.
    const busy = Array.from({ length: os.availableParallelism() }, () =>
      spawn(process.execPath, ['-e', 'const end = Date.now() + 60_000; while (Date.now() < end) {}'], {
        stdio: 'ignore',
      }),
    );
    const nc = await connect({ servers: cluster.urls.split(',') });
    try {
      // A cluster just started may have no JetStream leader yet.
      const jsm = await eventually(async () => {
        const manager = await jetstreamManager(nc);
        await manager.streams.add({ name: 'PAUSED', subjects: ['paused'], num_replicas: 3 });
        return manager;
      });
      const js = jetstream(nc);
      const acked: number[] = [];
      for (let round = 0; round < 30; round++) {
        // The cluster answers again (its leader may be elected anew after a pause).
        await eventually(() => js.publish('paused', 'before', { timeout: 2000 }));
        try {
          await cluster.pause();
          await js.publish('paused', String(round), { timeout: 200 }).then(
            () => acked.push(round),
            () => undefined,
          );
        } finally {
          cluster.resume();
        }
      }
      expect(acked, 'the rounds whose publish the paused cluster acked').to.deep.equal([]);
      await eventually(() => jsm.streams.delete('PAUSED'));
    } finally {
      for (const child of busy) child.kill('SIGKILL');
      await nc.close();
    }
  });

  it('answers log_unavailable (503, Retry-After) when the log does not ack, and catches up once it does', async () => {
    const c = await node('lc', sandbox.dir(), ['--nats-ack-timeout', '500ms', '--lease', '30s']);
    await createTenant(c.url, 'stalled');
    expect((await tq(c.url, 'stalled', 'insert into notes {n: 1}')).status).to.equal(200);
    let unknown: Reply;
    try {
      await cluster.pause();
      unknown = await tq(c.url, 'stalled', 'insert into notes {n: 2}');
    } finally {
      cluster.resume();
    }
    expect(unknown.status, `${unknown.text}\n${c.stderr()}`).to.equal(503);
    expect(unknown.json.error.code).to.equal('log_unavailable');
    expect(unknown.headers['retry-after']).to.equal('1');
    // The tenant is rebuilt from the log: the unacknowledged write is there or not, never half.
    const after = await eventually(async () => {
      const answer = await tq(c.url, 'stalled', 'insert into notes {n: 3}');
      expect(answer.status, answer.text).to.equal(200);
      return ns(c.url, 'stalled');
    });
    expect(after.filter((n) => n !== 2)).to.deep.equal([1, 3]);
  });

  it('moves a tenant away and back: the node it returns to serves the log, not a file its worker kept open', async () => {
    const a = await node('ba', sandbox.dir());
    const b = await node('bb', sandbox.dir());
    const router = await sandbox.startProgram(
      FENEC_ROUTER,
      ['--port', '0', '--nodes', `ba=${a.url},bb=${b.url}`, '--nats', cluster.urls, '--workers', '1'],
      { FENEC_TOKEN: TOKEN },
    );
    const move = async (to: string): Promise<void> => {
      const moved = await request(router.url, {
        method: 'POST',
        path: '/t/back/_move',
        headers: auth,
        body: JSON.stringify({ to }),
      });
      expect(moved.status, moved.text).to.equal(200);
    };
    const insert = (n: number): Promise<void> =>
      eventually(async () => {
        const answer = await tq(router.url, 'back', 'insert into notes {n: $1}', [n]);
        expect(answer.status, answer.text).to.equal(200);
      });
    await createTenant(a.url, 'back');
    // New quotas close its file on a; the next request opens it again, caught up from the log first.
    const quotas = await request(a.url, { method: 'PUT', path: '/t/back', headers: auth, body: '{"maxRows": 1000}' });
    expect(quotas.status, quotas.text).to.equal(200);
    await insert(1);
    await move('bb');
    await insert(2);
    // Back on a, which rebuilds its copy from the log before it serves: every write is in it, the one made on b too.
    await move('ba');
    await insert(3);
    expect(await ns(a.url, 'back')).to.deep.equal([1, 2, 3]);
    // And what a acknowledged is in the log: b, given the tenant again, has it.
    await move('bb');
    await insert(4);
    expect(await ns(b.url, 'back')).to.deep.equal([1, 2, 3, 4]);
  });

  it('catches up a file closed before its tenant left from the log it had, not from a log trimmed past it', async () => {
    // Snapshots every 3 changes: the log is trimmed behind them while the tenant is away.
    const a = await node('ta', sandbox.dir(), ['--snapshot-every', '3', '--max-open-tenants', '1']);
    const b = await node('tb', sandbox.dir(), ['--snapshot-every', '3']);
    const router = await sandbox.startProgram(
      FENEC_ROUTER,
      ['--port', '0', '--nodes', `ta=${a.url},tb=${b.url}`, '--nats', cluster.urls, '--workers', '1'],
      { FENEC_TOKEN: TOKEN },
    );
    const move = async (to: string): Promise<void> => {
      const moved = await request(router.url, {
        method: 'POST',
        path: '/t/trimmed/_move',
        headers: auth,
        body: JSON.stringify({ to }),
      });
      expect(moved.status, moved.text).to.equal(200);
    };
    // A row of its own page or more: a later change rewrites no page an earlier one wrote, but the tree's.
    const insert = (n: number): Promise<void> =>
      eventually(async () => {
        const body = `${n} `.repeat(2000);
        const answer = await tq(router.url, 'trimmed', 'insert into notes {n: $1, body: $2}', [n, body]);
        expect(answer.status, answer.text).to.equal(200);
      });
    await createTenant(a.url, 'trimmed');
    await insert(1);
    // Another tenant opened on a closes this one's file there, cleanly: its sequence is kept beside it, and stays
    // when the tenant leaves.
    await createTenant(a.url, 'neighbour');
    await move('tb');
    const away = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
    for (const n of away) await insert(n);
    // Back on a: its file is older than the log's first change kept; it is rebuilt from the snapshot.
    await move('ta');
    await insert(13);
    expect(await ns(a.url, 'trimmed')).to.deep.equal([1, ...away, 13]);
  });
});
