/**
 * The MCP endpoint's protocol rules over HTTP, with raw requests: each asserts the HTTP status and
 * the JSON-RPC code, as a client that is not one of the official two would meet them.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { request, Sandbox, type Reply, type ServerProcess } from '../processes.js';

const TOKEN = 'protocol-test-token';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
};

function post(
  server: ServerProcess,
  body: unknown,
  headers: Record<string, string> = {},
  token: string | null = TOKEN,
): Promise<Reply> {
  const all: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    ...headers,
  };
  if (token !== null) all.authorization = `Bearer ${token}`;
  return request(server.url, {
    method: 'POST',
    path: '/_mcp',
    headers: all,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A 2026-07-28 request with the headers that must match its body. */
function modern(
  server: ServerProcess,
  method: string,
  params: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Promise<Reply> {
  const base: Record<string, string> = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
  if (typeof params.name === 'string') base['mcp-name'] = params.name;
  return post(
    server,
    { jsonrpc: '2.0', id: 'r1', method, params: { ...params, _meta: META } },
    { ...base, ...headers },
  );
}

function expectRpcError(reply: Reply, status: number, code: number): void {
  expect(reply.status, reply.text).to.equal(status);
  expect(reply.headers['content-type']).to.equal('application/json');
  expect(reply.json.jsonrpc).to.equal('2.0');
  expect(reply.json.error.code, reply.text).to.equal(code);
}

describe('POST /_mcp, raw', () => {
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let readOnly: ServerProcess;
  let noMcp: ServerProcess;
  let open: ServerProcess;

  before(async () => {
    const dir = sandbox.dir();
    [server, readOnly, noMcp, open] = await Promise.all([
      sandbox.startServer(['--file', path.join(dir, 'a.fenec'), '--http-token', TOKEN, '--mcp']),
      sandbox.startServer([
        '--file',
        path.join(dir, 'b.fenec'),
        '--http-token',
        TOKEN,
        '--mcp-write',
        '--mcp-memory',
        'memories',
        '--http-read-only',
      ]),
      sandbox.startServer(['--file', path.join(dir, 'c.fenec'), '--http-token', TOKEN]),
      sandbox.startServer(['--file', path.join(dir, 'd.fenec'), '--mcp', '--http-cors', 'https://app.example.com']),
    ]);
  });
  after(() => sandbox.cleanUp());

  describe('2026-07-28', () => {
    it('answers server/discover (200) with the revisions served and no session', async () => {
      const reply = await modern(server, 'server/discover');
      expect(reply.status).to.equal(200);
      expect(reply.json.result.supportedVersions).to.deep.equal([
        '2026-07-28',
        '2025-11-25',
        '2025-06-18',
        '2025-03-26',
      ]);
      expect(reply.json.result.instructions).to.be.a('string');
      expect(reply.headers).not.to.have.property('mcp-session-id');
    });

    it('calls a tool with matching headers (200)', async () => {
      const reply = await modern(server, 'tools/call', { name: 'schema', arguments: {} });
      expect(reply.status).to.equal(200);
      expect(reply.json.result).to.deep.include({ resultType: 'complete', isError: false });
    });

    for (const [what, headers] of [
      ['MCP-Protocol-Version differs from _meta', { 'mcp-protocol-version': '2025-06-18' }],
      ['Mcp-Method differs from the method', { 'mcp-method': 'tools/list' }],
      ['Mcp-Name differs from the tool', { 'mcp-name': 'query' }],
    ] as const) {
      it(`refuses a request whose ${what} (400, -32020)`, async () => {
        expectRpcError(await modern(server, 'tools/call', { name: 'schema', arguments: {} }, headers), 400, -32020);
      });
    }

    it('refuses a request missing Mcp-Method or Mcp-Name (400, -32020)', async () => {
      const body = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'schema', arguments: {}, _meta: META },
      };
      expectRpcError(
        await post(server, body, { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'schema' }),
        400,
        -32020,
      );
      expectRpcError(
        await post(server, body, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' }),
        400,
        -32020,
      );
    });

    it('refuses a revision it does not serve, naming those it does (400, -32022)', async () => {
      const body = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      };
      const reply = await post(server, body, { 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' });
      expectRpcError(reply, 400, -32022);
      expect(reply.json.error.data).to.deep.equal({
        supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
        requested: '2099-01-01',
      });
    });

    it('answers an unknown method with 404 and a JSON-RPC body (-32601)', async () => {
      const reply = await modern(server, 'resources/list');
      expectRpcError(reply, 404, -32601);
      expect(reply.json.id).to.equal('r1');
    });

    it('ignores a session id a client sends: there are no sessions', async () => {
      expect((await modern(server, 'tools/list', {}, { 'mcp-session-id': 'made-up' })).status).to.equal(200);
    });
  });

  describe('the handshake revisions', () => {
    it('answers initialize (200) with the revision asked for, and mints no session', async () => {
      const reply = await post(server, {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
      });
      expect(reply.status).to.equal(200);
      expect(reply.json.result.protocolVersion).to.equal('2025-03-26');
      expect(reply.headers).not.to.have.property('mcp-session-id');
    });

    it('accepts a notification with 202 and no body', async () => {
      const reply = await post(
        server,
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { 'mcp-protocol-version': '2025-11-25' },
      );
      expect(reply.status).to.equal(202);
      expect(reply.text).to.equal('');
    });

    it('refuses an MCP-Protocol-Version it does not serve (400, -32022)', async () => {
      expectRpcError(
        await post(server, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2024-11-05' }),
        400,
        -32022,
      );
    });
  });

  describe('messages that are not one', () => {
    it('refuses a batch (400, -32600)', async () => {
      expectRpcError(
        await post(server, [
          { jsonrpc: '2.0', id: 1, method: 'tools/list' },
          { jsonrpc: '2.0', id: 2, method: 'ping' },
        ]),
        400,
        -32600,
      );
    });

    it('refuses a message that is not UTF-8 (400, -32700), naming the byte', async () => {
      const text =
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "query", "arguments": {"statement": "get notes where title = \\"caf';
      const body = Buffer.concat([Buffer.from(text), Buffer.from([0xe9]), Buffer.from('\\""}}}')]);
      const reply = await request(server.url, {
        method: 'POST',
        path: '/_mcp',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${TOKEN}`,
        },
        body,
      });
      expectRpcError(reply, 400, -32700);
      expect(reply.json.error.message).to.contain(`not UTF-8 (byte ${text.length} (0xe9) begins no character)`);
    });

    it('refuses a body that is not JSON (400, -32700)', async () => {
      expectRpcError(await post(server, '{"jsonrpc": "2.0", "id": 1, '), 400, -32700);
    });

    it('answers an unknown tool with a JSON-RPC error (200, -32602)', async () => {
      expectRpcError(
        await post(server, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nope', arguments: {} } }),
        200,
        -32602,
      );
    });
  });

  describe('the route', () => {
    for (const method of ['GET', 'DELETE']) {
      it(`answers ${method} with 405: no stream, no session to end`, async () => {
        const reply = await request(server.url, {
          method,
          path: '/_mcp',
          headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' },
        });
        expect(reply.status).to.equal(405);
        expect(reply.headers.allow).to.contain('POST');
      });
    }

    it('is not there without --mcp (404)', async () => {
      const reply = await post(noMcp, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(reply.status).to.equal(404);
      expect(reply.json.error.code).to.equal('not_found');
    });
  });

  describe('who may ask', () => {
    it('takes the token /query takes: none or a wrong one is 401', async () => {
      expect((await post(server, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {}, null)).status).to.equal(401);
      expect((await post(server, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, {}, 'wrong')).status).to.equal(401);
    });

    it('refuses a foreign Origin (403) before it looks at the token', async () => {
      const reply = await post(
        server,
        { jsonrpc: '2.0', id: 1, method: 'tools/list' },
        { origin: 'http://evil.example.com' },
        null,
      );
      expect(reply.status).to.equal(403);
      expect(reply.json.error.code).to.equal('forbidden_origin');
    });

    it('answers a server without a token only for a Host naming this machine', async () => {
      const port = new URL(open.url).port;
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
      const evil = await request(open.url, {
        method: 'POST',
        path: '/_mcp',
        headers: { host: `evil.example.com:${port}`, 'content-type': 'application/json' },
        body,
      });
      expect(evil.status).to.equal(403);
      const local = await request(open.url, {
        method: 'POST',
        path: '/_mcp',
        headers: { host: `localhost:${port}`, 'content-type': 'application/json' },
        body,
      });
      expect(local.status).to.equal(200);
    });
  });

  describe('a browser page of --http-cors', () => {
    it('is told in a preflight that it may send the MCP headers', async () => {
      const reply = await request(open.url, {
        method: 'OPTIONS',
        path: '/_mcp',
        headers: {
          origin: 'https://app.example.com',
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'mcp-method',
        },
      });
      expect(reply.status).to.equal(204);
      expect(reply.headers['access-control-allow-origin']).to.equal('https://app.example.com');
      expect(reply.headers['access-control-allow-headers'])
        .to.contain('mcp-protocol-version')
        .and.contain('mcp-method')
        .and.contain('mcp-name');
    });
  });

  describe('--http-read-only', () => {
    it('offers no tool that writes, whatever --mcp-write and --mcp-memory ask', async () => {
      const reply = await post(readOnly, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
      expect(reply.json.result.tools.map((t: { name: string }) => t.name)).to.deep.equal([
        'query',
        'search',
        'schema',
        'recall',
      ]);
      expectRpcError(
        await post(readOnly, {
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'remember', arguments: { text: 'x' } },
        }),
        200,
        -32602,
      );
    });
  });

  describe('/_metrics', () => {
    it('counts tool calls by tool and outcome, no collection a label', async () => {
      await post(server, {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'query', arguments: { statement: 'get nowhere' } },
      });
      await post(server, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'schema', arguments: {} } });
      const metrics = await request(server.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(metrics.text).to.match(/fenec_mcp_tool_calls_total\{tool="query",outcome="refused"\} \d+/);
      expect(metrics.text).to.match(/fenec_mcp_tool_calls_total\{tool="schema",outcome="ok"\} \d+/);
      expect(metrics.text).to.match(/fenec_mcp_tool_calls_total\{tool="unknown",outcome="failed"\} \d+/);
      expect(metrics.text).not.to.contain('nowhere');
      expect(metrics.text).to.match(/fenec_http_requests_total\{route="\/_mcp",status="200"\}/);
    });
  });
});
