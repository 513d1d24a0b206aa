/**
 * The hosted stack end to end, as real processes: a router in front of two tenant nodes, 20 tenants
 * spread over both, each reached with its own JWT over /query and over MCP (the official client),
 * quotas, and a node killed with SIGKILL and started again.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import { parseNodes, rendezvousNode } from '../../router/placement.js';
import { connect } from '../integration/mcp/clients.js';
import { FENEC_ROUTER, request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';

const TOKEN = 'e2e-server-token';
const SECRET = 'e2e-jwt-secret-of-at-least-32-bytes!!';
const ENV = { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET };
const TENANTS = [...Array(20).keys()].map((i) => `tenant-${String(i).padStart(2, '0')}`);
const jwtOf = (tenant: string): string =>
  mintToken({ secret: SECRET, tenant, sub: `agent-of-${tenant}`, ttlSeconds: 3600 });

const post = (base: string, tenant: string, statement: string, token: string): Promise<Reply> =>
  request(base, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ statement }),
  });
const put = (base: string, tenant: string, quotas: unknown = {}): Promise<Reply> =>
  request(base, {
    method: 'PUT',
    path: `/t/${tenant}`,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify(quotas),
  });

describe('hosted: a router and two tenant nodes', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  const dirs = { a: '', b: '' };
  const nodes: Record<'a' | 'b', ServerProcess | undefined> = { a: undefined, b: undefined };
  let router: ServerProcess;
  const home = new Map<string, 'a' | 'b'>();
  /** Rows each tenant's writes were acknowledged for. */
  const acknowledged = new Map<string, number>();
  const nodeArgs = (dir: string): string[] => [
    '--data-dir',
    dir,
    '--mcp-write',
    '--policy',
    path.join(dirs.a, '..', 'policy.txt'),
  ];

  before(async () => {
    const root = sandbox.dir();
    dirs.a = path.join(root, 'a');
    dirs.b = path.join(root, 'b');
    fs.writeFileSync(path.join(root, 'policy.txt'), 'notes read,write where owner = $jwt.sub\n');
    [nodes.a, nodes.b] = await Promise.all([
      sandbox.startServer(nodeArgs(dirs.a), ENV),
      sandbox.startServer(nodeArgs(dirs.b), ENV),
    ]);
    const list = `a=${nodes.a!.url},b=${nodes.b!.url}`;
    router = await sandbox.startProgram(FENEC_ROUTER, ['--port', '0', '--nodes', list, '--node-timeout', '2s'], ENV);
    for (const tenant of TENANTS) home.set(tenant, rendezvousNode(tenant, parseNodes(list)).name as 'a' | 'b');
  });
  after(() => sandbox.cleanUp());

  it('creates 20 tenants through the router, spread over both nodes', async () => {
    for (const tenant of TENANTS) {
      expect((await put(router.url, tenant)).status).to.equal(201);
      expect(
        (await post(router.url, tenant, 'create collection notes (title text @text, owner text @hash)', TOKEN)).status,
      ).to.equal(200);
    }
    const listed = await request(router.url, { path: '/_tenants', headers: { authorization: `Bearer ${TOKEN}` } });
    const byNode = listed.json.tenants.map((t: { name: string; node: string }) => [t.name, t.node]);
    expect(new Map(byNode)).to.deep.equal(home);
    const onA = [...home.values()].filter((n) => n === 'a').length;
    expect(onA).to.be.within(4, 16);
  });

  it("serves every tenant's /query and /_mcp through the router with its own JWT", async () => {
    for (const tenant of TENANTS) {
      const token = jwtOf(tenant);
      const written = await post(router.url, tenant, `insert into notes {title: "first of ${tenant}"}`, token);
      expect(written.status, JSON.stringify(written.json)).to.equal(200);
      const client = await connect('sdk 1.x', { transport: 'http', url: `${router.url}/t/${tenant}/_mcp`, token });
      try {
        const wrote = await client.callTool('write', { collection: 'notes', insert: { title: `second of ${tenant}` } });
        expect(wrote.isError, JSON.stringify(wrote)).to.not.equal(true);
        const read = await client.callTool('query', { statement: 'get notes select title, owner order id' });
        expect(read.structuredContent).to.deep.include({ count: 2 });
        expect(JSON.stringify(read.structuredContent)).to.include(`"owner":"agent-of-${tenant}"`);
      } finally {
        await client.close();
      }
      acknowledged.set(tenant, 2);
    }
  });

  it("refuses tenant A's token for tenant B at the router (403) and at the node when the router is bypassed", async () => {
    const [a, b] = [TENANTS[0]!, TENANTS.find((t) => home.get(t) !== home.get(TENANTS[0]!))!];
    const atRouter = await post(router.url, b, 'get notes', jwtOf(a));
    expect(atRouter.status).to.equal(403);
    expect(atRouter.json.error.code).to.equal('wrong_tenant');
    const atNode = await post(nodes[home.get(b)!]!.url, b, 'get notes', jwtOf(a));
    expect(atNode.status).to.equal(403);
    expect(atNode.json.error.code).to.equal('wrong_tenant');
    const mcp = await request(router.url, {
      method: 'POST',
      path: `/t/${b}/_mcp`,
      headers: { authorization: `Bearer ${jwtOf(a)}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(mcp.status).to.equal(403);
  });

  it("gives a tenant over its rate 429 with Retry-After while another tenant's calls all succeed", async () => {
    const [hot, calm] = [TENANTS[1]!, TENANTS[2]!];
    await put(router.url, hot, { rate: 2, burst: 4 });
    const [hotReplies, calmReplies] = await Promise.all([
      Promise.all([...Array(30).keys()].map(() => post(router.url, hot, 'get notes count', jwtOf(hot)))),
      Promise.all([...Array(30).keys()].map(() => post(router.url, calm, 'get notes count', jwtOf(calm)))),
    ]);
    const refused = hotReplies.filter((r) => r.status === 429);
    expect(refused.length).to.be.at.least(20);
    expect(Number(refused[0]!.headers['retry-after'])).to.be.at.least(1);
    expect(calmReplies.map((r) => r.status)).to.deep.equal(Array(30).fill(200));
    await put(router.url, hot, {});
  });

  it('gives a tenant at its byte quota 507 and loses nothing already written', async () => {
    const tiny = TENANTS[3]!;
    await put(router.url, tiny, { maxBytes: 128 * 1024 });
    const body = 'y'.repeat(3000);
    let last: Reply | undefined;
    for (let i = 0; i < 100; i++) {
      last = await post(router.url, tiny, `insert into notes {title: "${body} ${i}"}`, jwtOf(tiny));
      if (last.status !== 200) break;
      acknowledged.set(tiny, acknowledged.get(tiny)! + 1);
    }
    expect(last!.status).to.equal(507);
    expect(last!.json.error.code).to.equal('storage_full');
    const count = await post(router.url, tiny, 'get notes count', jwtOf(tiny));
    expect(count.json.count).to.equal(acknowledged.get(tiny));
  });

  it("answers 503 quickly for a killed node's tenants, leaves the other node's alone, and keeps every acknowledged row after a restart", async () => {
    const port = new URL(nodes.a!.url).port;
    await sandbox.kill(nodes.a!.child);
    for (const tenant of TENANTS) {
      const started = Date.now();
      const reply = await post(router.url, tenant, 'get notes count', jwtOf(tenant));
      if (home.get(tenant) === 'a') {
        expect(reply.status, tenant).to.equal(503);
        expect(reply.json.error.code).to.equal('unavailable');
        expect(Date.now() - started).to.be.below(1000);
      } else {
        expect(reply.status, tenant).to.equal(200);
        expect(reply.json.count).to.equal(acknowledged.get(tenant));
      }
    }
    nodes.a = await sandbox.startServer([...nodeArgs(dirs.a), '--port', port], ENV);
    for (const tenant of TENANTS) {
      const reply = await post(router.url, tenant, 'get notes count', jwtOf(tenant));
      expect(reply.status, tenant).to.equal(200);
      expect(reply.json.count, tenant).to.equal(acknowledged.get(tenant));
    }
  });
});
