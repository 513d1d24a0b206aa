import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import { request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'tenant-node-test-token';
const SECRET = 'tenant-node-test-secret-of-32-bytes!!';
const jwtOf = (tenant: string, sub = 'agent'): string => mintToken({ secret: SECRET, tenant, sub, ttlSeconds: 600 });

const admin = (node: ServerProcess, method: string, tenant: string, quotas?: unknown): Promise<Reply> =>
  request(node.url, {
    method,
    path: `/t/${tenant}`,
    headers: { authorization: `Bearer ${TOKEN}` },
    ...(quotas === undefined ? {} : { body: JSON.stringify(quotas) }),
  });
const tq = (node: ServerProcess, tenant: string, statement: string, token = TOKEN): Promise<Reply> =>
  request(node.url, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ statement }),
  });

describe('fenec-server --data-dir (a tenant node)', () => {
  const sandbox = new Sandbox();
  let dir: string;
  let node: ServerProcess;

  before(async () => {
    dir = path.join(sandbox.dir(), 'data');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'acme.policy'), 'notes read,write where owner = $jwt.sub\n');
    node = await sandbox.startServer(
      ['--data-dir', dir, '--max-open-tenants', '2', '--tenant-rate', '1000', '--tenant-burst', '1000', '--mcp'],
      { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET },
    );
  });
  after(() => sandbox.cleanUp());

  it('creates a tenant with PUT (201), sets its quotas again (200), and lists it', async () => {
    const created = await admin(node, 'PUT', 'acme', { rate: 500 });
    expect(created.status).to.equal(201);
    expect(created.json.quotas.rate).to.equal(500);
    expect((await admin(node, 'PUT', 'acme', {})).status).to.equal(200);
    const list = await request(node.url, { path: '/_tenants', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(list.json.tenants.map((t: { name: string }) => t.name)).to.deep.equal(['acme']);
    expect(fs.existsSync(path.join(dir, 'acme.tenant.json'))).to.equal(true);
  });

  it('refuses provisioning and the list to a JWT, and a bad quota', async () => {
    expect(
      (
        await request(node.url, {
          method: 'PUT',
          path: '/t/evil',
          headers: { authorization: `Bearer ${jwtOf('evil')}` },
        })
      ).status,
    ).to.equal(401);
    expect(
      (await request(node.url, { path: '/_tenants', headers: { authorization: `Bearer ${jwtOf('acme')}` } })).status,
    ).to.equal(401);
    const bad = await admin(node, 'PUT', 'acme', { ratee: 1 });
    expect(bad.status).to.equal(400);
    expect(bad.json.error.message).to.include('ratee');
  });

  it('refuses a quotas or policy body that is not JSON, or past 64 KiB, with what to send, changing nothing', async () => {
    const put = (route: string, body: string) =>
      request(node.url, {
        method: 'PUT',
        path: `/t/acme${route}`,
        headers: { authorization: `Bearer ${TOKEN}` },
        body,
      });
    const quotas = async () =>
      (await request(node.url, { path: '/_tenants', headers: { authorization: `Bearer ${TOKEN}` } })).json.tenants;
    const before = await quotas();
    const policyBefore = (
      await request(node.url, { path: '/t/acme/_policy', headers: { authorization: `Bearer ${TOKEN}` } })
    ).json;
    const refusals: [string, string, number, string, string][] = [
      ['', '{"rate": ', 400, 'bad_json', 'send its quotas'],
      [
        '',
        JSON.stringify({ rate: 1, pad: 'x'.repeat(70_000) }),
        413,
        'payload_too_large',
        "a tenant's quotas fit in 65536 bytes",
      ],
      ['/_policy', 'policy: x', 400, 'bad_json', '/_policy is not JSON'],
      [
        '/_policy',
        JSON.stringify({ policy: 'x'.repeat(70_000) }),
        413,
        'payload_too_large',
        "a tenant's policy fits in 65536 bytes",
      ],
      ['/_policy', '{"policy": 1}', 400, 'bad_request', 'takes {"policy": TEXT}'],
    ];
    for (const [route, body, status, code, says] of refusals) {
      const reply = await put(route, body);
      expect([reply.status, reply.json.error.code], `${route} ${body.slice(0, 20)}`).to.deep.equal([status, code]);
      expect(reply.json.error.message).to.include(says);
    }
    for (const route of ['', '/_policy', '/query']) {
      const zipped = await request(node.url, {
        method: route === '/query' ? 'POST' : 'PUT',
        path: `/t/acme${route}`,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-encoding': 'gzip' },
        body: '{"rate": 5}',
      });
      expect([zipped.status, zipped.json.error.code], route).to.deep.equal([415, 'unsupported_encoding']);
    }
    expect(await quotas()).to.deep.equal(before);
    expect(
      (await request(node.url, { path: '/t/acme/_policy', headers: { authorization: `Bearer ${TOKEN}` } })).json,
    ).to.deep.equal(policyBefore);
  });

  it("lists every route of a tenant in a 404 under its name, and a node's every route at its root", async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const under = await request(node.url, { method: 'POST', path: '/t/acme/nothing', headers: auth });
    expect([under.status, under.json.error.code]).to.deep.equal([404, 'not_found']);
    expect(under.json.error.message).to.equal(
      'no route POST "/t/acme/nothing"; a tenant\'s routes are POST /t/acme/query, POST /t/acme/_mcp, ' +
        'GET|POST /t/acme/_revocations, PUT /t/acme, DELETE /t/acme, GET /t/acme/_backup, PUT /t/acme/_backup, ' +
        'GET /t/acme/_policy, PUT /t/acme/_policy, POST /t/acme/_pause, POST /t/acme/_resume, POST /t/acme/_moved',
    );
    const root = await request(node.url, { method: 'POST', path: '/query', headers: auth });
    expect([root.status, root.json.error.code]).to.deep.equal([404, 'not_found']);
    expect(root.json.error.message).to.include('GET /_tenants, GET /_moved, GET|HEAD /_health');
    expect(root.json.error.hint).to.equal(
      "a tenant node serves a tenant's /query at /t/<tenant>/query: name the tenant (--tenant NAME in fenec's commands)",
    );
    const wrong = await request(node.url, { method: 'POST', path: '/t/acme', headers: auth });
    expect([wrong.status, wrong.headers.allow]).to.deep.equal([405, 'PUT, DELETE, OPTIONS']);
  });

  it('answers 404 for an unknown tenant and 400 for a name that is not one', async () => {
    expect((await tq(node, 'nobody', 'get notes count')).json.error.code).to.equal('unknown_tenant');
    for (const name of ['Acme', '-x', 'a.b', 'a%2Fb', '_x', 'a'.repeat(64)]) {
      const reply = await tq(node, name, 'get notes count');
      expect(reply.status, name).to.equal(400);
      expect(reply.json.error.code).to.equal('invalid_tenant');
    }
    expect(
      (
        await request(node.url, {
          method: 'POST',
          path: '/query',
          headers: { authorization: `Bearer ${TOKEN}` },
          body: '{}',
        })
      ).status,
    ).to.equal(404);
  });

  it("lets a JWT reach only its own tenant, held to the tenant's own .policy", async () => {
    await admin(node, 'PUT', 'globex');
    expect((await tq(node, 'acme', 'create collection notes (title text, owner text)')).status).to.equal(200);
    expect((await tq(node, 'globex', 'create collection notes (title text, owner text)')).status).to.equal(200);
    expect((await tq(node, 'acme', 'insert into notes {title: "mine"}', jwtOf('acme', 'ann'))).status).to.equal(200);
    const rows = await tq(node, 'acme', 'get notes', jwtOf('acme', 'ann'));
    expect(rows.status).to.equal(200);
    expect(JSON.stringify(rows.json)).to.include('"owner":"ann"');
    const wrong = await tq(node, 'acme', 'get notes', jwtOf('globex'));
    expect(wrong.status).to.equal(403);
    expect(wrong.json.error.code).to.equal('wrong_tenant');
    // globex has no .policy and the node no --policy: its JWT reaches no collection.
    expect((await tq(node, 'globex', 'get notes', jwtOf('globex'))).status).to.be.oneOf([403, 404]);
  });

  it('keeps at most --max-open-tenants files open, reopening a closed one with its data', async () => {
    await admin(node, 'PUT', 'initech');
    expect((await tq(node, 'initech', 'create collection notes (title text)')).status).to.equal(200);
    for (const tenant of ['initech', 'globex', 'acme', 'initech'])
      expect((await tq(node, tenant, 'get notes count')).status).to.equal(200);
    const metrics = await request(node.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(metrics.text).to.match(/^fenec_tenants_open 2$/m);
    expect(metrics.text).to.match(/^fenec_tenants 3$/m);
    expect(JSON.stringify((await tq(node, 'acme', 'get notes')).json)).to.include('mine');
  });

  it("closes a tenant's file for new quotas only when its worker takes them at open (bytes, rows, collections)", async () => {
    const open = async (): Promise<number> => {
      const metrics = await request(node.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      return Number(/^fenec_tenants_open (\d+)$/m.exec(metrics.text)![1]);
    };
    await admin(node, 'PUT', 'quotaed');
    expect((await tq(node, 'quotaed', 'create collection notes (title text)')).status).to.equal(200);
    const opened = await open();
    // A rate, a time limit, an answer cap: the file stays open (a close would show within milliseconds).
    expect(
      (
        await admin(node, 'PUT', 'quotaed', {
          rate: 999,
          burst: 999,
          statementTimeoutMs: 4000,
          maxAnswerBytes: 1 << 20,
        })
      ).status,
    ).to.equal(200);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await open()).to.equal(opened);
    // A row quota: closed, and applied when the next request opens it.
    expect((await admin(node, 'PUT', 'quotaed', { rate: 999, burst: 999, maxRows: 2 })).status).to.equal(200);
    for (let i = 0; i < 40 && (await open()) === opened; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await open()).to.equal(opened - 1);
    expect(
      (await tq(node, 'quotaed', 'insert into notes [{title: "a"}, {title: "b"}, {title: "c"}]')).json.error.code,
    ).to.equal('quota_exceeded');
  });

  it("refuses a tenant past its rate with 429 and Retry-After, while another tenant's requests all pass", async () => {
    await admin(node, 'PUT', 'slowpoke', { rate: 1, burst: 3 });
    const replies = await Promise.all([...Array(8).keys()].map(() => tq(node, 'slowpoke', 'get notes count')));
    const refused = replies.filter((r) => r.status === 429);
    expect(refused.length).to.be.at.least(4);
    expect(refused[0]!.headers['retry-after']).to.match(/^\d+$/);
    expect(refused[0]!.json.error.code).to.equal('quota_exceeded');
    const others = await Promise.all([...Array(20).keys()].map(() => tq(node, 'globex', 'get notes count')));
    expect(others.every((r) => r.status === 200)).to.equal(true);
    const metrics = await request(node.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(metrics.text).to.match(/fenec_tenant_quota_refusals_total\{quota="rate"\} [1-9]/);
  });

  it('refuses writes past the byte quota with 507, losing nothing written before', async () => {
    await admin(node, 'PUT', 'tiny', { maxBytes: 96 * 1024 });
    expect((await tq(node, 'tiny', 'create collection docs (body text)')).status).to.equal(200);
    const body = 'x'.repeat(4000);
    let written = 0;
    let last: Reply | undefined;
    for (let i = 0; i < 60; i++) {
      last = await tq(node, 'tiny', `insert into docs {body: "${body}${i}"}`);
      if (last.status !== 200) break;
      written += 1;
    }
    expect(last!.status).to.equal(507);
    expect(last!.json.error.code).to.equal('storage_full');
    expect(written).to.be.above(3);
    const count = await tq(node, 'tiny', 'get docs count');
    expect(count.status).to.equal(200);
    expect(JSON.stringify(count.json)).to.include(String(written));
  });

  it('refuses a collection past maxCollections and rows past maxRows with 429, counting what deletes freed', async () => {
    await admin(node, 'PUT', 'small', { maxCollections: 2, maxRows: 5 });
    expect((await tq(node, 'small', 'create collection a (n int)')).status).to.equal(200);
    expect((await tq(node, 'small', 'create collection b (n int)')).status).to.equal(200);
    const third = await tq(node, 'small', 'create collection c (n int)');
    expect(third.status).to.equal(429);
    expect(third.json.error.code).to.equal('quota_exceeded');
    expect((await tq(node, 'small', 'create collection if not exists b (n int)')).status).to.equal(200);
    expect((await tq(node, 'small', 'insert into a [{n: 1}, {n: 2}, {n: 3}]')).status).to.equal(200);
    expect((await tq(node, 'small', 'insert into b {n: 4}')).status).to.equal(200);
    const over = await tq(node, 'small', 'insert into b [{n: 5}, {n: 6}]');
    expect(over.status).to.equal(429);
    expect(over.json.error.message).to.include('4 rows');
    expect((await tq(node, 'small', 'del a where n = 1')).status).to.equal(200);
    expect((await tq(node, 'small', 'insert into b [{n: 5}, {n: 6}]')).status).to.equal(200);
    expect((await tq(node, 'small', 'get b count')).json.count).to.equal(3);
  });

  it('deletes a tenant and its files with DELETE', async () => {
    expect((await admin(node, 'DELETE', 'initech')).status).to.equal(200);
    expect((await tq(node, 'initech', 'get notes count')).status).to.equal(404);
    expect(fs.readdirSync(dir).filter((f) => f.startsWith('initech'))).to.deep.equal([]);
    expect((await admin(node, 'DELETE', 'initech')).status).to.equal(404);
  });
});
