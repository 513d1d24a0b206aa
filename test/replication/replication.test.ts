import { expect } from 'chai';
import { request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';
import { NatsCluster } from './nats-cluster.js';

const TOKEN = 'replication-test-token-0123456789abcdef';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

function tq(base: string, tenant: string, statement: string, params: unknown[] = []): Promise<Reply> {
  return request(base, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: auth,
    body: JSON.stringify({ statement, params }),
  });
}

/** Polls `check` until it holds (or the deadline passes, and its last failure is thrown). */
async function eventually<T>(check: () => Promise<T>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

describe('replication on NATS JetStream (--nats)', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let cluster: NatsCluster;

  before(async () => {
    cluster = await NatsCluster.start(3);
  });
  after(async () => {
    await sandbox.cleanUp();
    await cluster?.stop();
  });

  function node(name: string, dir: string): Promise<ServerProcess> {
    return sandbox.startServer(
      ['--data-dir', dir, '--nats', cluster.urls, '--node-name', name, '--lease', '1s', '--workers', '1'],
      { FENEC_TOKEN: TOKEN },
    );
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
    await sandbox.kill(a.child);
    const killed = Date.now();

    const b = await node('b', sandbox.dir());
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
    console.log(`      (failover: ${failoverMs} ms from kill -9 to an answer on the other node, with its start)`);
  });
});
