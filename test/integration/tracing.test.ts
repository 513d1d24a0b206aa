/**
 * Traces across processes: a fenec-router (two workers) and a tenant node, each exporting spans
 * over OTLP/HTTP to a receiver this test runs on 127.0.0.1. Every request through the router is one
 * trace: the router's span at its root, the node's span its child, an MCP tool call's span under
 * the node's; spans name the tenant, the route, the status and the tool, and no export carries a
 * token, a statement, its parameters or a row.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import { connect } from './mcp/clients.js';
import { FENEC_ROUTER, FENEC_SERVER, request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'tracing-server-token-4d1f';
const SECRET = 'tracing-jwt-secret-of-at-least-32-bytes';
const TENANT = 'traced';
/** Text that must reach no span: in a statement, in its parameters, in the rows written and read. */
const STATEMENT_MARK = 'statement-mark-7c2e';
const PARAM_MARK = 'param-mark-91ab';
const ROW_MARK = 'row-mark-5f30';
/** How long spans may take to reach the receiver (the batch is sent every 5 s). */
const EXPORT_WAIT_MS = 20_000;

interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number>>;
  /** The exporting process's service.name. */
  readonly service: string;
  /** When the receiver got it (ms since the epoch). */
  readonly received: number;
}

/** A plain node:http OTLP/HTTP receiver: POST /v1/traces in JSON, kept as the raw text and as spans. */
class Receiver {
  readonly payloads: string[] = [];
  readonly spans: OtlpSpan[] = [];
  readonly #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (
        req.method !== 'POST' ||
        req.url !== '/v1/traces' ||
        !String(req.headers['content-type']).startsWith('application/json')
      ) {
        res.writeHead(404).end();
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      this.payloads.push(text);
      this.#take(JSON.parse(text));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  async start(): Promise<string> {
    this.#server.listen(0, '127.0.0.1');
    await once(this.#server, 'listening');
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  close(): void {
    this.#server.closeAllConnections();
    this.#server.close();
  }

  /** Waits (bounded) until `done` holds of the spans received. */
  async until(done: (spans: readonly OtlpSpan[]) => boolean, what: string): Promise<void> {
    const deadline = Date.now() + EXPORT_WAIT_MS;
    while (!done(this.spans)) {
      if (Date.now() > deadline)
        throw new Error(
          `no ${what} within ${EXPORT_WAIT_MS} ms; spans received: ${this.spans.map((s) => `${s.service} ${s.name}`).join(', ')}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  #take(body: { resourceSpans?: any[] }): void {
    const received = Date.now();
    for (const resourceSpans of body.resourceSpans ?? []) {
      const service = attributesOf(resourceSpans.resource?.attributes)['service.name'] as string;
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            service,
            received,
          });
        }
      }
    }
  }
}

/** OTLP JSON's `[{key, value: {stringValue|intValue}}]` as a plain record. */
function attributesOf(
  list: readonly { key: string; value: Record<string, unknown> }[] | undefined,
): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  for (const { key, value } of list ?? []) {
    const v = value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue;
    out[key] = typeof v === 'string' && 'intValue' in value ? Number(v) : (v as string | number);
  }
  return out;
}

/** One trace: its spans, by process. */
function traceOf(
  spans: readonly OtlpSpan[],
  traceId: string,
): { router: OtlpSpan[]; node: OtlpSpan[]; tools: OtlpSpan[] } {
  const ours = spans.filter((s) => s.traceId === traceId);
  return {
    router: ours.filter((s) => s.service === 'fenec-router'),
    node: ours.filter((s) => s.service === 'fenec-server' && !s.name.startsWith('mcp.tool')),
    tools: ours.filter((s) => s.service === 'fenec-server' && s.name.startsWith('mcp.tool')),
  };
}

describe('tracing: a router and a node export one trace per request', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  const receiver = new Receiver();
  let node: ServerProcess;
  let router: ServerProcess;
  let jwt: string;
  /** Every request sent through the router, in order. */
  const sent: { what: string; reply: Reply | undefined }[] = [];

  const viaRouter = async (
    what: string,
    method: string,
    route: string,
    token: string,
    body?: unknown,
  ): Promise<Reply> => {
    const reply = await request(router.url, {
      method,
      path: route,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    sent.push({ what, reply });
    return reply;
  };

  before(async () => {
    const collector = await receiver.start();
    const dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), 'notes read,write where owner = $jwt.sub\n');
    const env = { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET };
    // The node is given the flag, the router the standard variable: both ways in are the same.
    node = await sandbox.startServer(
      [
        '--data-dir',
        path.join(dir, 'node'),
        '--mcp-write',
        '--policy',
        path.join(dir, 'policy.txt'),
        '--otel-endpoint',
        collector,
      ],
      env,
    );
    router = await sandbox.startProgram(FENEC_ROUTER, ['--port', '0', '--nodes', `a=${node.url}`, '--workers', '2'], {
      ...env,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
    });
    expect(node.stderr()).to.include(`"traces":"${collector}/v1/traces"`);
    expect(router.stderr()).to.include(`"traces":"${collector}/v1/traces"`);
    jwt = mintToken({ secret: SECRET, tenant: TENANT, sub: 'agent-7', ttlSeconds: 3600 });
  });
  after(async () => {
    receiver.close();
    await sandbox.cleanUp();
  });

  it('holds the router span, the node span as its child and the tool span under it, in one trace per request', async () => {
    expect((await viaRouter('create tenant', 'PUT', `/t/${TENANT}`, TOKEN, {})).status).to.equal(201);
    expect(
      (
        await viaRouter('create collection', 'POST', `/t/${TENANT}/query`, TOKEN, {
          statement: 'create collection notes (title text @text, owner text @hash)',
        })
      ).status,
    ).to.equal(200);
    const written = await viaRouter('insert', 'POST', `/t/${TENANT}/query`, jwt, {
      statement: `insert into notes {title: $1} -- ${STATEMENT_MARK}`,
      params: [`${ROW_MARK} ${PARAM_MARK}`],
    });
    expect(written.status, written.text).to.equal(200);

    const before = new Set(receiver.spans.map((s) => s.traceId));
    const client = await connect('sdk 1.x', { transport: 'http', url: `${router.url}/t/${TENANT}/_mcp`, token: jwt });
    try {
      const read = await client.callTool('query', {
        statement: `get notes select title where title != "${STATEMENT_MARK}" and title != $1`,
        params: [PARAM_MARK],
      });
      expect(JSON.stringify(read.structuredContent)).to.include(ROW_MARK);
    } finally {
      await client.close();
    }

    // Every request through the router is a trace: the router's span its root, the node's its one child.
    // Waited for by count alone (each process exports on its own timer); how they link is checked after.
    await receiver.until((spans) => {
      const count = (service: string, mcp: boolean): number =>
        spans.filter(
          (s) =>
            s.service === service &&
            'http.route' in s.attributes &&
            (s.attributes['http.route'] === '/t/{tenant}/_mcp') === mcp,
        ).length;
      return (
        spans.some((s) => s.name === 'mcp.tool query') &&
        count('fenec-router', false) === sent.length &&
        count('fenec-server', false) === sent.length &&
        count('fenec-router', true) >= 3 &&
        count('fenec-router', true) === count('fenec-server', true)
      );
    }, 'span of each request from the router and from the node');
    const traces = routerTraces(receiver.spans);
    const mcpTraces = traces.filter(
      (id) => !before.has(id) && traceOf(receiver.spans, id).router[0]!.attributes['http.route'] === '/t/{tenant}/_mcp',
    );
    expect(traces.length - mcpTraces.length, 'the PUT and two /query traces').to.equal(sent.length);
    expect(mcpTraces.length, "the MCP client's requests (initialize, initialized, tools/call, …)").to.be.at.least(3);
    for (const id of traces) {
      const { router: routerSpans, node: nodeSpans } = traceOf(receiver.spans, id);
      expect(routerSpans, `trace ${id}: one router span`).to.have.length(1);
      expect(routerSpans[0]!.parentSpanId, 'the router span is the root').to.equal(undefined);
      expect(nodeSpans, `trace ${id}: one node span`).to.have.length(1);
      expect(nodeSpans[0]!.parentSpanId, "the node span is the router span's child").to.equal(routerSpans[0]!.spanId);
      expect(nodeSpans[0]!.name).to.equal(routerSpans[0]!.name);
    }

    // The tool call's trace: router → node → tool.
    const toolSpans = receiver.spans.filter((s) => s.name === 'mcp.tool query');
    expect(toolSpans).to.have.length(1);
    const tool = toolSpans[0]!;
    const {
      router: [routerSpan],
      node: [nodeSpan],
      tools,
    } = traceOf(receiver.spans, tool.traceId);
    expect(routerSpan, "the tool span's trace holds a router span").to.not.equal(undefined);
    expect(nodeSpan, "the tool span's trace holds a node span").to.not.equal(undefined);
    expect(tools).to.deep.equal([tool]);
    expect(tool.parentSpanId, "the tool span is the node span's child").to.equal(nodeSpan!.spanId);
    expect(nodeSpan!.parentSpanId).to.equal(routerSpan!.spanId);
  });

  it('names the tenant, route, status and tool, and exports no token, statement, parameter or row', () => {
    const tool = receiver.spans.find((s) => s.name === 'mcp.tool query')!;
    const {
      router: [routerSpan],
      node: [nodeSpan],
    } = traceOf(receiver.spans, tool.traceId);
    expect(routerSpan!.name).to.equal('POST /t/{tenant}/_mcp');
    expect(routerSpan!.attributes).to.deep.equal({
      'http.request.method': 'POST',
      'http.route': '/t/{tenant}/_mcp',
      'fenec.tenant': TENANT,
      'fenec.node': 'a',
      'http.response.status_code': 200,
    });
    expect(nodeSpan!.attributes).to.deep.equal({
      'http.request.method': 'POST',
      'http.route': '/t/{tenant}/_mcp',
      'fenec.tenant': TENANT,
      'http.response.status_code': 200,
    });
    expect(tool.attributes).to.deep.equal({ 'mcp.tool': 'query', 'mcp.outcome': 'ok' });

    const insert = receiver.spans.filter(
      (s) => s.service === 'fenec-server' && s.attributes['http.route'] === '/t/{tenant}/query',
    );
    expect(insert.map((s) => s.attributes['http.response.status_code'])).to.deep.equal([200, 200]);
    const created = receiver.spans.filter(
      (s) => s.attributes['http.route'] === '/t/{tenant}' && s.name === 'PUT /t/{tenant}',
    );
    expect(created.map((s) => [s.service, s.attributes['http.response.status_code']]).sort()).to.deep.equal([
      ['fenec-router', 201],
      ['fenec-server', 201],
    ]);

    const exported = receiver.payloads.join('\n');
    for (const secret of [TOKEN, jwt, jwt.split('.')[1]!, SECRET, STATEMENT_MARK, PARAM_MARK, ROW_MARK, 'agent-7']) {
      expect(exported, `an export carries ${secret.slice(0, 20)}`).to.not.include(secret);
    }
  });

  it("traces a tool call refused for the tenant's rate (answered by the node, no worker) under the node span", async () => {
    expect((await viaRouter('pause', 'PUT', `/t/${TENANT}`, TOKEN, { rate: 0 })).status).to.equal(200);
    const call = {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'search', arguments: { collection: 'notes', text: PARAM_MARK } },
    };
    const refused = await request(router.url, {
      method: 'POST',
      path: `/t/${TENANT}/_mcp`,
      headers: {
        authorization: `Bearer ${jwt}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(call),
    });
    // Over MCP a refusal is the tool's isError result, which a model reads as any other.
    expect(refused.status, refused.text).to.equal(200);
    expect(refused.json.result.structuredContent.error.code).to.equal('quota_exceeded');
    expect((await viaRouter('resume', 'PUT', `/t/${TENANT}`, TOKEN, {})).status).to.equal(200);
    await receiver.until((spans) => spans.some((s) => s.name === 'mcp.tool search'), 'span of the refused tool call');
    const tool = receiver.spans.find((s) => s.name === 'mcp.tool search')!;
    expect(tool.attributes).to.deep.equal({ 'mcp.tool': 'search', 'mcp.outcome': 'refused' });
    await receiver.until(
      (spans) => traceOf(spans, tool.traceId).router.length === 1,
      'router span of the refused call',
    );
    const {
      router: [routerSpan],
      node: [nodeSpan],
    } = traceOf(receiver.spans, tool.traceId);
    expect(tool.parentSpanId, "the tool span is the node span's child").to.equal(nodeSpan!.spanId);
    expect(nodeSpan!.parentSpanId).to.equal(routerSpan!.spanId);
    expect([
      routerSpan!.attributes['http.response.status_code'],
      nodeSpan!.attributes['http.response.status_code'],
    ]).to.deep.equal([200, 200]);
    expect(receiver.payloads.join('\n')).to.not.include(PARAM_MARK);
  });

  it('exports the spans still batched when the router and the node are stopped with SIGTERM', async () => {
    const last = await viaRouter('last', 'POST', `/t/${TENANT}/query`, jwt, { statement: 'get notes count' });
    expect(last.status).to.equal(200);
    const stopped = Date.now();
    const exits = [router, node].map((p) => once(p.child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>);
    process.kill(router.pid, 'SIGTERM');
    process.kill(node.pid, 'SIGTERM');
    const bound = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('not stopped within 15 s')), 15_000).unref(),
    );
    const codes = (await Promise.race([Promise.all(exits), bound])).map(([code]) => code);
    expect(codes, 'the exit statuses of the router and the node').to.deep.equal([0, 0]);
    // Sent on the way out, not by the batch's timer (5 s after the span ended): received after the signal.
    const lastSpans = receiver.spans.filter(
      (s) =>
        s.attributes['http.route'] === '/t/{tenant}/query' &&
        s.received >= stopped &&
        !receiver.spans.some((t) => t.traceId === s.traceId && t.received < stopped),
    );
    expect(lastSpans.map((s) => s.service).sort()).to.deep.equal(['fenec-router', 'fenec-server']);
    expect(new Set(lastSpans.map((s) => s.traceId)).size).to.equal(1);
  });
});

describe('tracing: a one-file server', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  const receiver = new Receiver();
  after(async () => {
    receiver.close();
    await sandbox.cleanUp();
  });

  it("joins the caller's trace: its request span the child of the traceparent sent, the tool span the request's", async () => {
    const collector = await receiver.start();
    const server = await sandbox.startServer([
      '--file',
      path.join(sandbox.dir(), 'one.fenec'),
      '--mcp',
      '--http-token',
      TOKEN,
      '--otel-endpoint',
      collector,
    ]);
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'schema', arguments: {} } };
    const reply = await request(server.url, {
      method: 'POST',
      path: '/_mcp',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        traceparent: `00-${traceId}-b7ad6b7169203331-01`,
      },
      body: JSON.stringify(call),
    });
    expect(reply.status, reply.text).to.equal(200);
    expect((await request(server.url, { path: '/_health' })).status).to.equal(200);
    const exited = once(server.child, 'exit');
    process.kill(server.pid, 'SIGTERM');
    await exited;
    const spans = receiver.spans.filter((s) => s.traceId === traceId);
    const requestSpan = spans.find((s) => s.name === 'POST /_mcp');
    expect(requestSpan, 'the request span').to.not.equal(undefined);
    expect(requestSpan!.parentSpanId).to.equal('b7ad6b7169203331');
    expect(requestSpan!.attributes).to.deep.equal({
      'http.request.method': 'POST',
      'http.route': '/_mcp',
      'http.response.status_code': 200,
    });
    expect(spans.filter((s) => s.name === 'mcp.tool schema').map((s) => s.parentSpanId)).to.deep.equal([
      requestSpan!.spanId,
    ]);
    expect(
      receiver.spans.filter((s) => s.attributes['http.route'] === '/_health'),
      '/_health is not traced',
    ).to.deep.equal([]);
    expect(receiver.payloads.join('\n')).to.not.include(TOKEN);
  });
});

describe('tracing: a collector that does not answer', function () {
  this.timeout(90_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it('holds no request, costs one warning in the log, and does not hold the stop', async () => {
    // A port nothing listens on: taken, then let go.
    const probe = http.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    // Batches sent 200 ms after their first span, each export given up after 1 s (its retries with it): the
    // failures this test waits for come in a second or two, not the defaults' 5 s delay and 5 s of retries.
    const server = await sandbox.startServer(
      [
        '--file',
        path.join(sandbox.dir(), 'f.fenec'),
        '--http-token',
        TOKEN,
        '--otel-endpoint',
        `http://127.0.0.1:${port}`,
      ],
      { OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_BSP_EXPORT_TIMEOUT: '1000' },
    );
    const post = (statement: string): Promise<Reply> =>
      request(server.url, {
        method: 'POST',
        path: '/query',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ statement }),
        timeoutMs: 10_000,
      });
    expect((await post('create collection notes (n int)')).status).to.equal(200);
    const deadline = Date.now() + 30_000;
    const warning = '"msg":"tracing: spans may not reach the collector"';
    // Requests go on being answered while the batches fail.
    for (let i = 0; !server.stderr().includes(warning); i++) {
      expect(Date.now(), `no warning in the log within 30 s:\n${server.stderr()}`).to.be.below(deadline);
      expect((await post(`insert into notes {n: ${i}}`)).status).to.equal(200);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(server.stderr().split(warning).length - 1, 'one warning a minute at most').to.equal(1);
    const stopped = Date.now();
    const exited = once(server.child, 'exit') as Promise<[number | null]>;
    process.kill(server.pid, 'SIGTERM');
    const [code] = await exited;
    expect(code).to.equal(0);
    expect(Date.now() - stopped, 'the stop waits 5 s at most for the spans').to.be.below(12_000);
  });
});

describe('tracing: a collector URL that is not one stops the start', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it('exits 2 naming the flag or the variable, on fenec-server and fenec-router', async () => {
    const file = path.join(sandbox.dir(), 'f.fenec');
    const server = await sandbox.run(FENEC_SERVER, [
      '--file',
      file,
      '--port',
      '0',
      '--otel-endpoint',
      'grpc://collector:4317',
    ]);
    expect(server.code).to.equal(2);
    expect(server.stderr).to.match(/^fenec-server: --otel-endpoint takes a collector's http:\/\/ or https:\/\/ URL/);
    const router = await sandbox.run(FENEC_ROUTER, ['--nodes', 'a=http://127.0.0.1:1', '--port', '0'], {
      FENEC_TOKEN: TOKEN,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
    });
    expect(router.code).to.equal(2);
    expect(router.stderr).to.match(/^fenec-router: OTEL_EXPORTER_OTLP_ENDPOINT takes/);
    expect(fs.existsSync(file), 'nothing was opened').to.equal(false);
  });
});

/** The traces whose root is a router span. */
function routerTraces(spans: readonly OtlpSpan[]): string[] {
  return [...new Set(spans.filter((s) => s.service === 'fenec-router').map((s) => s.traceId))];
}
