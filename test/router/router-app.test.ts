import { expect } from 'chai';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mintToken } from '../../shared/auth/token.js';
import { parseNodes, rendezvousNode } from '../../router/placement.js';
import { createRouterApp, type RouterApp } from '../../router/router-app.js';
import { routerOptions } from '../../router/router-config.js';
import { registerMemoryTracer, type FinishedSpan } from '../helpers/memory-tracer.js';
import { request } from '../integration/processes.js';

const SECRET = 'a-router-test-secret-of-32-bytes-or-more';
const TOKEN = 'the-server-token';
const jwtOf = (tenant: string): string => mintToken({ secret: SECRET, tenant, sub: 'agent', ttlSeconds: 600 });

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A stand-in node: records what reaches it and answers with it. `hang` never answers. */
async function fakeNode(hang = false): Promise<{ server: http.Server; url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const entry = {
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(entry);
      if (hang) return;
      if (req.url === '/_tenants')
        return res.end(
          JSON.stringify({
            tenants: [{ name: `on-${server.address() === null ? '' : (server.address() as AddressInfo).port}` }],
          }),
        );
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ url: entry.url, body: entry.body }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function listen(app: RouterApp): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(app.handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const post = (
  base: string,
  path: string,
  token: string | undefined,
  body = '{"statement":"count docs"}',
  headers: Record<string, string> = {},
) =>
  request(base, {
    method: 'POST',
    path,
    body,
    headers: {
      'content-type': 'application/json',
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...headers,
    },
  });

describe('the router application', () => {
  let spans: FinishedSpan[];
  let a: Awaited<ReturnType<typeof fakeNode>>;
  let b: Awaited<ReturnType<typeof fakeNode>>;
  let hung: Awaited<ReturnType<typeof fakeNode>>;
  let dead: string;
  let app: RouterApp;
  let router: { server: http.Server; url: string };
  let onA: string;
  let onB: string;

  before(async () => {
    spans = registerMemoryTracer();
    [a, b, hung] = await Promise.all([fakeNode(), fakeNode(), fakeNode(true)]);
    const closed = await fakeNode();
    dead = closed.url;
    await new Promise<void>((resolve) => closed.server.close(() => resolve()));
    const nodes = parseNodes(`a=${a.url},b=${b.url}`);
    onA = [...Array(100).keys()].map((i) => `t${i}`).find((t) => rendezvousNode(t, nodes).name === 'a')!;
    onB = [...Array(100).keys()].map((i) => `t${i}`).find((t) => rendezvousNode(t, nodes).name === 'b')!;
    app = createRouterApp(
      routerOptions({
        nodes: parseNodes(`a=${a.url},b=${b.url},hung=${hung.url},dead=${dead}`),
        pins: new Map([
          ['slow', 'hung'],
          ['gone', 'dead'],
          [onA, 'a'],
          [onB, 'b'],
        ]),
        httpToken: TOKEN,
        jwtSecret: SECRET,
        nodeTimeoutMs: 300,
      }),
    );
    router = await listen(app);
  });

  after(async () => {
    app.close();
    for (const server of [router.server, a.server, b.server, hung.server]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("forwards a tenant's query to its node with its own JWT, body and query string intact", async () => {
    const token = jwtOf(onB);
    const reply = await post(router.url, `/t/${onB}/query?x=1`, token);
    expect(reply.status).to.equal(200);
    expect(reply.json).to.deep.equal({ url: `/t/${onB}/query?x=1`, body: '{"statement":"count docs"}' });
    expect(b.seen.at(-1)!.headers.authorization, 'the node checks the token again').to.equal(`Bearer ${token}`);
  });

  it('passes X-Forwarded-For, -Host and -Proto on', async () => {
    await post(router.url, `/t/${onA}/query`, TOKEN, '{}', { 'x-forwarded-for': '203.0.113.9' });
    const headers = a.seen.at(-1)!.headers;
    expect(headers['x-forwarded-for']).to.equal('203.0.113.9,127.0.0.1');
    expect(headers['x-forwarded-host']).to.equal(new URL(router.url).host);
    expect(headers['x-forwarded-proto']).to.equal('http');
  });

  it('streams a chunked request body to the node', async () => {
    const body = JSON.stringify({ statement: 'x'.repeat(200_000) });
    const reply = await request(router.url, {
      method: 'POST',
      path: `/t/${onA}/_mcp`,
      chunked: true,
      body,
      headers: { authorization: `Bearer ${TOKEN}`, 'transfer-encoding': 'chunked' },
    });
    expect(reply.status).to.equal(200);
    expect(reply.json.body).to.equal(body);
  });

  it("sends a traceparent whose parent is the router's own span", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await post(router.url, `/t/${onA}/query`, TOKEN, '{}', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(a.seen.at(-1)!.headers.traceparent))!;
    expect(sent[1]).to.equal(traceId);
    const span = spans.find((s) => s.spanId === sent[2]);
    expect(span, 'the router span named by traceparent').to.not.equal(undefined);
    expect(span!.parentSpanId).to.equal('00f067aa0ba902b7');
    expect(span!.attributes['fenec.node']).to.equal('a');
  });

  it('refuses a JWT of another tenant with 403 before anything is forwarded', async () => {
    const before = a.seen.length + b.seen.length;
    const reply = await post(router.url, `/t/${onA}/query`, jwtOf(onB));
    expect(reply.status).to.equal(403);
    expect(reply.json.error.code).to.equal('wrong_tenant');
    expect(a.seen.length + b.seen.length).to.equal(before);
  });

  it('refuses no token and a bad one with 401, and a bad tenant name with 400, forwarding nothing', async () => {
    const before = a.seen.length + b.seen.length;
    expect((await post(router.url, `/t/${onA}/query`, undefined)).status).to.equal(401);
    expect((await post(router.url, `/t/${onA}/query`, 'wrong')).status).to.equal(401);
    expect((await post(router.url, '/t/%2e%2e/query', TOKEN)).status).to.be.oneOf([400, 404]);
    expect((await post(router.url, '/t/a%2Fb/query', TOKEN)).json.error.code).to.equal('invalid_tenant');
    expect((await post(router.url, '/t/Acme/query', TOKEN)).status).to.equal(400);
    expect((await post(router.url, `/t/${onA}/query/extra`, TOKEN)).status).to.equal(404);
    expect((await post(router.url, `/t/${onA}/_tenants`, TOKEN)).status).to.equal(404);
    expect(a.seen.length + b.seen.length).to.equal(before);
  });

  it('takes only the server token to create or delete a tenant', async () => {
    expect(
      (
        await request(router.url, {
          method: 'PUT',
          path: `/t/${onA}`,
          body: '{}',
          headers: { authorization: `Bearer ${jwtOf(onA)}` },
        })
      ).status,
    ).to.equal(401);
    const reply = await request(router.url, {
      method: 'PUT',
      path: `/t/${onA}`,
      body: '{"rate":5}',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(reply.status).to.equal(200);
    expect(a.seen.at(-1)).to.include({ method: 'PUT', url: `/t/${onA}`, body: '{"rate":5}' });
  });

  it('refuses a move whose body is not JSON, past 4 KiB, or names no node, moving nothing', async () => {
    const before = a.seen.length + b.seen.length;
    const move = (body: string) => post(router.url, `/t/${onA}/_move`, TOKEN, body);
    const refusals: [string, number, string, string][] = [
      ['{"to": ', 400, 'bad_json', 'the body is not JSON'],
      [
        JSON.stringify({ to: 'b', pad: 'x'.repeat(5000) }),
        413,
        'payload_too_large',
        'the body is larger than 4096 bytes',
      ],
      ['', 400, 'bad_request', 'takes {"to": NODE}, NODE one of a, b, hung, dead'],
      ['{"to": "nowhere"}', 400, 'bad_request', 'takes {"to": NODE}'],
    ];
    for (const [body, status, code, says] of refusals) {
      const reply = await move(body);
      expect([reply.status, reply.json.error.code], body.slice(0, 20)).to.deep.equal([status, code]);
      expect(reply.json.error.message).to.include(says);
    }
    expect(a.seen.length + b.seen.length).to.equal(before);
  });

  it('lists the tenants of every node, each named with its node', async () => {
    const router2 = await listen(
      createRouterApp(routerOptions({ nodes: parseNodes(`a=${a.url},b=${b.url}`), httpToken: TOKEN })),
    );
    const reply = await request(router2.url, { path: '/_tenants', headers: { authorization: `Bearer ${TOKEN}` } });
    router2.server.closeAllConnections();
    router2.server.close();
    expect(reply.status).to.equal(200);
    expect(reply.json.tenants.map((t: { node: string }) => t.node)).to.deep.equal(['a', 'b']);
  });

  it('answers 503 JSON at once for a node that is down', async () => {
    const start = Date.now();
    const reply = await post(router.url, '/t/gone/query', TOKEN);
    expect(reply.status).to.equal(503);
    expect(reply.json.error.code).to.equal('unavailable');
    expect(reply.json.error.message).to.match(/node dead .*ECONNREFUSED/);
    expect(Date.now() - start).to.be.below(1000);
  });

  it('answers 503 JSON within --node-timeout for a node that does not answer', async () => {
    const start = Date.now();
    const reply = await post(router.url, '/t/slow/query', TOKEN);
    expect(reply.status).to.equal(503);
    expect(reply.json.error.code).to.equal('unavailable');
    expect(Date.now() - start).to.be.within(250, 2000);
  });

  it('answers /_health without a token and /_metrics with the server token, counting by node and status', async () => {
    expect((await request(router.url, { path: '/_health' })).json.ok).to.equal(true);
    expect(
      (await request(router.url, { path: '/_metrics', headers: { authorization: `Bearer ${jwtOf(onA)}` } })).status,
    ).to.equal(401);
    const metrics = await request(router.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(metrics.status).to.equal(200);
    expect(metrics.text).to.match(/fenec_router_requests_total\{node="a",status="200"\} \d+/);
    expect(metrics.text).to.match(/fenec_router_requests_total\{node="dead",status="503"\} 1/);
    expect(metrics.text).to.match(/fenec_router_requests_total\{node="none",status="403"\} \d+/);
    expect(metrics.text).to.match(/fenec_router_proxy_duration_seconds_count\{node="b"\} \d+/);
    expect(metrics.text).to.not.include(onA);
  });

  it('answers an unknown path with not_found listing every route of its table, _backup and _move among them', async () => {
    const reply = await request(router.url, { path: '/nothing', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(reply.status).to.equal(404);
    expect(reply.json.error.code).to.equal('not_found');
    expect(reply.json.error.message).to.equal(
      'no route GET "/nothing"; the router answers /t/<tenant>/query, /t/<tenant>/_mcp, /t/<tenant>/_revocations, ' +
        'PUT|DELETE /t/<tenant>, GET|PUT /t/<tenant>/_backup, POST /t/<tenant>/_move, GET /_tenants, ' +
        'GET|HEAD /_health, GET /_metrics, GET|HEAD /_console/*',
    );
    const revocations = await request(router.url, { method: 'POST', path: '/_revocations' });
    expect(revocations.json.error.hint).to.include('/t/<tenant>/_revocations');
  });

  it("answers an unknown route under a tenant's name with not_found listing the tenant's routes, 400 for a bad name", async () => {
    const reply = await post(router.url, `/t/${onA}/nothing`, TOKEN);
    expect([reply.status, reply.json.error.code]).to.deep.equal([404, 'not_found']);
    expect(reply.json.error.message).to.include(`/t/${onA}/_backup`).and.include(`/t/${onA}/_move`);
    const bad = await post(router.url, '/t/Acme/nothing', TOKEN);
    expect([bad.status, bad.json.error.code]).to.deep.equal([400, 'invalid_tenant']);
  });

  it('answers a route of its own asked with another method with 405 and Allow', async () => {
    const reply = await request(router.url, {
      method: 'PUT',
      path: '/_tenants',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect([reply.status, reply.json.error.code]).to.deep.equal([405, 'method_not_allowed']);
    expect(reply.headers.allow).to.equal('GET, OPTIONS');
    const move = await request(router.url, { path: `/t/${onA}/_move`, headers: { authorization: `Bearer ${TOKEN}` } });
    expect([move.status, move.headers.allow]).to.deep.equal([405, 'POST, OPTIONS']);
  });
});

describe('a router started with JWTs alone (no --http-token)', () => {
  let node: Awaited<ReturnType<typeof fakeNode>>;
  let app: RouterApp;
  let router: { server: http.Server; url: string };

  before(async () => {
    node = await fakeNode();
    app = createRouterApp(routerOptions({ nodes: parseNodes(`a=${node.url}`), jwtSecret: SECRET }));
    router = await listen(app);
  });

  after(async () => {
    app.close();
    for (const server of [router.server, node.server]) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses /_metrics to anyone, saying to start it with --http-token, as a node does', async () => {
    const tries: Record<string, string>[] = [
      {},
      { authorization: `Bearer ${jwtOf('acme')}` },
      { authorization: 'Bearer guess' },
    ];
    for (const headers of tries) {
      const reply = await request(router.url, { path: '/_metrics', headers });
      expect(reply.status, JSON.stringify(headers)).to.equal(401);
      expect(reply.json.error.code).to.equal('unauthorized');
      expect(reply.json.error.message).to.include("/_metrics takes the server's token only");
      expect(reply.json.error.hint).to.include('--http-token');
      expect(reply.text).to.not.include('fenec_router_requests_total');
    }
  });

  it("still forwards a tenant's JWT, and answers /_health", async () => {
    expect((await post(router.url, '/t/acme/query', jwtOf('acme'))).status).to.equal(200);
    expect((await request(router.url, { path: '/_health' })).status).to.equal(200);
  });
});
