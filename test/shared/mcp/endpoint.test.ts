import { expect } from 'chai';
import { McpEndpoint, type ToolCallEvent } from '../../../shared/mcp/endpoint.js';
import { SUPPORTED } from '../../../shared/mcp/revisions.js';
import { ToolRunner, type StatementRunner } from '../../../shared/mcp/tool-runner.js';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' },
};

/** A database that answers every statement with one row: the protocol is under test here, not the tools. */
const db: StatementRunner<object> = { executeStatement: () => ({ rows: [{ id: 1 }], count: 1 }) };

function endpoint(
  options = { write: false, memory: undefined as string | undefined, readOnly: false },
  events: ToolCallEvent[] = [],
) {
  return new McpEndpoint(new ToolRunner(db, options), {
    serverInfo: { name: 'fenecdb', version: '0.1.0' },
    onToolCall: (e) => events.push(e),
  });
}

const caller = { options: {}, scoped: false };
const headersOf = (headers: Record<string, string>) => (name: string) => headers[name];

/** A 2026-07-28 request with the headers the v2 client sends. */
function modern(method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const base: Record<string, string> = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
  if (typeof params.name === 'string') base['mcp-name'] = params.name;
  return {
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: META } }),
    header: headersOf({ ...base, ...headers }),
  };
}

function send(method: string, params: Record<string, unknown> = {}, id: unknown = 1) {
  return endpoint().handle(JSON.stringify({ jsonrpc: '2.0', id, method, params }), caller);
}

describe('McpEndpoint', () => {
  describe('handshake revisions (initialize)', () => {
    for (const revision of ['2025-11-25', '2025-06-18', '2025-03-26']) {
      it(`agrees on ${revision} when asked for it, with tools, server info and instructions`, () => {
        const reply = send('initialize', {
          protocolVersion: revision,
          capabilities: {},
          clientInfo: { name: 'c', version: '1' },
        });
        expect(reply.status).to.equal(200);
        const result = (reply.answer as any).result;
        expect(result.protocolVersion).to.equal(revision);
        expect(result.capabilities).to.deep.equal({ tools: {} });
        expect(result.serverInfo).to.deep.equal({ name: 'fenecdb', version: '0.1.0' });
        expect(result.instructions)
          .to.match(/schema/)
          .and.match(/100 rows/);
      });
    }

    it('answers the latest handshake revision to an initialize asking for one it does not serve', () => {
      for (const asked of ['2024-11-05', '2026-07-28']) {
        expect(
          (send('initialize', { protocolVersion: asked, capabilities: {} }).answer as any).result.protocolVersion,
        ).to.equal('2025-11-25');
      }
    });

    it('accepts notifications with 202 and no answer', () => {
      const reply = endpoint().handle('{"jsonrpc":"2.0","method":"notifications/initialized"}', caller);
      expect(reply).to.deep.equal({ status: 202, answer: undefined, json: undefined });
    });

    it('answers ping, tools/list and tools/call without a session or an initialize first', () => {
      expect((send('ping').answer as any).result).to.deep.equal({});
      expect((send('tools/list').answer as any).result.tools.map((t: { name: string }) => t.name)).to.deep.equal([
        'query',
        'search',
        'schema',
      ]);
      const reply = send('tools/call', { name: 'schema', arguments: {} });
      // schema answers no rows anyone wrote: its text is the JSON alone, unmarked.
      const call = (reply.answer as any).result;
      expect(JSON.parse(reply.json!)).to.deep.equal(reply.answer);
      expect(call.isError).to.equal(false);
      expect(call.structuredContent).to.deep.equal({ rows: [{ id: 1 }], count: 1 });
      expect(JSON.parse(call.content[0].text)).to.deep.equal(call.structuredContent);
    });

    it('answers an unknown method with -32601 in a 200', () => {
      const reply = send('resources/list');
      expect(reply.status).to.equal(200);
      expect((reply.answer as any).error.code).to.equal(-32601);
    });

    it('repeats at most 100 characters of an unknown method or tool name, never the megabyte sent', () => {
      const long = 'x'.repeat(1_000_000);
      const method = (send(long).answer as any).error;
      expect(method.code).to.equal(-32601);
      expect(method.message).to.have.length.below(300);
      expect(method.message).to.contain(`${'x'.repeat(100)}…;`);
      const tool = (send('tools/call', { name: long, arguments: {} }).answer as any).error;
      expect(tool.code).to.equal(-32602);
      expect(tool.message).to.have.length.below(300);
    });

    it('refuses an MCP-Protocol-Version header naming a revision it does not serve (400, -32022)', () => {
      const reply = endpoint().handle(
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        caller,
        headersOf({ 'mcp-protocol-version': '2024-11-05' }),
      );
      expect(reply.status).to.equal(400);
      expect((reply.answer as any).error.code).to.equal(-32022);
      expect((reply.answer as any).error.data.supported).to.deep.equal(SUPPORTED);
    });
  });

  describe('2026-07-28 (stateless)', () => {
    it('answers server/discover with the revisions, tools capability, instructions and cache fields', () => {
      const { body, header } = modern('server/discover');
      const reply = endpoint().handle(body, caller, header);
      expect(reply.status).to.equal(200);
      const result = (reply.answer as any).result;
      expect(result).to.include({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
      expect(result.supportedVersions).to.deep.equal(['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
      expect(result.capabilities).to.deep.equal({ tools: {} });
      expect(result.instructions).to.be.a('string');
      expect(result._meta['io.modelcontextprotocol/serverInfo']).to.deep.equal({ name: 'fenecdb', version: '0.1.0' });
      expect(result).not.to.have.property('serverInfo');
    });

    it('lists tools with resultType, ttlMs and cacheScope; every tool with a description and a closed input schema', () => {
      const { body, header } = modern('tools/list');
      const result = (
        endpoint({ write: true, memory: 'memories', readOnly: false }).handle(body, caller, header).answer as any
      ).result;
      expect(result).to.include({ resultType: 'complete', ttlMs: 0, cacheScope: 'private' });
      expect(result.tools.map((t: { name: string }) => t.name)).to.deep.equal([
        'query',
        'search',
        'schema',
        'write',
        'remember',
        'recall',
        'forget',
      ]);
      for (const tool of result.tools) {
        expect(tool.description).to.be.a('string').and.not.equal('');
        expect(tool.inputSchema).to.include({ type: 'object', additionalProperties: false });
        expect(tool.outputSchema.type).to.equal('object');
      }
    });

    it('calls a tool with the headers matching the body, and answers with resultType and server info', () => {
      const { body, header } = modern('tools/call', { name: 'query', arguments: { statement: 'get docs' } });
      const reply = endpoint().handle(body, caller, header);
      expect(reply.status).to.equal(200);
      expect((reply.answer as any).result).to.include({ resultType: 'complete', isError: false });
      expect(JSON.parse(reply.json!), 'the answer as written').to.deep.equal(reply.answer);
    });

    it('takes Mcp-Name with blanks around it, and base64-encoded', () => {
      for (const name of ['  query ', `=?base64?${Buffer.from('query').toString('base64')}?=`]) {
        const { body, header } = modern(
          'tools/call',
          { name: 'query', arguments: { statement: 'get docs' } },
          { 'mcp-name': name },
        );
        expect(endpoint().handle(body, caller, header).status).to.equal(200);
      }
    });

    const mismatches: [string, Record<string, string>][] = [
      ['MCP-Protocol-Version says another revision than _meta', { 'mcp-protocol-version': '2025-11-25' }],
      ['Mcp-Method is missing', { 'mcp-method': undefined as unknown as string }],
      ['Mcp-Method differs in case', { 'mcp-method': 'TOOLS/CALL' }],
      ['Mcp-Method names another method', { 'mcp-method': 'tools/list' }],
      ['Mcp-Name is missing', { 'mcp-name': undefined as unknown as string }],
      ['Mcp-Name names another tool', { 'mcp-name': 'search' }],
      ['Mcp-Name holds raw non-ASCII', { 'mcp-name': 'qüery' }],
    ];
    for (const [what, headers] of mismatches) {
      it(`refuses a request whose ${what} (400, -32020)`, () => {
        const { body, header } = modern('tools/call', { name: 'query', arguments: { statement: 'get docs' } }, headers);
        const reply = endpoint().handle(body, caller, header);
        expect(reply.status).to.equal(400);
        expect((reply.answer as any).error.code).to.equal(-32020);
        expect((reply.answer as any).id).to.equal(7);
      });
    }

    it('refuses a request whose MCP-Protocol-Version header is missing (400, -32020)', () => {
      const { body } = modern('tools/list');
      const reply = endpoint().handle(body, caller, headersOf({ 'mcp-method': 'tools/list' }));
      expect([reply.status, (reply.answer as any).error.code]).to.deep.equal([400, -32020]);
    });

    it('refuses a revision it does not serve, listing those it does (400, -32022)', () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } },
      });
      const reply = endpoint().handle(
        body,
        caller,
        headersOf({ 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' }),
      );
      expect(reply.status).to.equal(400);
      expect((reply.answer as any).error).to.deep.include({
        code: -32022,
        data: { supported: SUPPORTED, requested: '2099-01-01' },
      });
    });

    it('refuses a 2026-07-28 header over a body without _meta (400, -32602)', () => {
      const reply = endpoint().handle(
        '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
        caller,
        headersOf({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }),
      );
      expect([reply.status, (reply.answer as any).error.code]).to.deep.equal([400, -32602]);
    });

    it('refuses an envelope without client capabilities (400, -32602)', () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
      });
      const reply = endpoint().handle(body, caller);
      expect([reply.status, (reply.answer as any).error.code]).to.deep.equal([400, -32602]);
    });

    for (const method of ['initialize', 'ping', 'resources/list', 'logging/setLevel', 'no/such']) {
      it(`answers ${method} under 2026-07-28 with 404 and a JSON-RPC body (-32601)`, () => {
        const { body, header } = modern(method);
        const reply = endpoint().handle(body, caller, header);
        expect(reply.status).to.equal(404);
        expect(reply.answer).to.deep.include({ jsonrpc: '2.0', id: 7 });
        expect((reply.answer as any).error.code).to.equal(-32601);
      });
    }

    it('serves a 2026-07-28 request over stdio, where there are no headers', () => {
      const { body } = modern('tools/list');
      expect((endpoint().handle(body, caller).answer as any).result.resultType).to.equal('complete');
    });

    it('accepts a 2026-07-28 notification with 202', () => {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 1, _meta: META },
      });
      expect(endpoint().handle(body, caller).status).to.equal(202);
    });
  });

  describe('messages that are not one', () => {
    it('refuses a batch (400, -32600)', () => {
      const reply = endpoint().handle('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', caller);
      expect([reply.status, (reply.answer as any).error.code, (reply.answer as any).id]).to.deep.equal([
        400,
        -32600,
        null,
      ]);
    });

    it('refuses text that is not JSON (400, -32700)', () => {
      const reply = endpoint().handle('{"jsonrpc":', caller);
      expect([reply.status, (reply.answer as any).error.code, (reply.answer as any).id]).to.deep.equal([
        400,
        -32700,
        null,
      ]);
    });

    it('refuses a response, a missing method and a bad id (400, -32600), naming the id when there is one', () => {
      for (const text of [
        '{"jsonrpc":"2.0","id":3,"result":{}}',
        '{"jsonrpc":"2.0","id":3}',
        '{"jsonrpc":"1.0","id":3,"method":"ping"}',
        '{"jsonrpc":"2.0","id":{},"method":"ping"}',
      ]) {
        const reply = endpoint().handle(text, caller);
        expect([reply.status, (reply.answer as any).error.code], text).to.deep.equal([400, -32600]);
      }
      expect((endpoint().handle('{"jsonrpc":"2.0","id":3}', caller).answer as any).id).to.equal(3);
    });
  });

  describe('tools/call', () => {
    it('answers an unknown tool with a JSON-RPC error (-32602) naming the tools offered', () => {
      const events: ToolCallEvent[] = [];
      const reply = endpoint(undefined, events).handle(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'drop_everything', arguments: {} },
        }),
        caller,
      );
      expect(reply.status).to.equal(200);
      expect((reply.answer as any).error.code).to.equal(-32602);
      expect((reply.answer as any).error.message).to.contain('query, search, schema');
      expect(events.map((e) => [e.tool, e.outcome])).to.deep.equal([['unknown', 'failed']]);
    });

    it('answers write on a server without --mcp-write as an unknown tool, saying how it is offered', () => {
      const error = (send('tools/call', { name: 'write', arguments: { collection: 'docs', insert: {} } }).answer as any)
        .error;
      expect(error.code).to.equal(-32602);
      expect(error.message).to.contain('--mcp-write');
    });

    it('offers no tool that writes on a read-only server, whatever else it was asked', () => {
      const body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}';
      const tools = (endpoint({ write: true, memory: 'memories', readOnly: true }).handle(body, caller).answer as any)
        .result.tools;
      expect(tools.map((t: { name: string }) => t.name)).to.deep.equal(['query', 'search', 'schema', 'recall']);
    });

    it('counts each call by tool and outcome', () => {
      const events: ToolCallEvent[] = [];
      const ep = endpoint(undefined, events);
      ep.handle(
        JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'schema', arguments: {} } }),
        caller,
      );
      ep.handle(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 2,
          method: 'tools/call',
          params: { name: 'schema', arguments: { nope: 1 } },
        }),
        caller,
      );
      expect(events.map((e) => [e.tool, e.outcome, e.error?.code])).to.deep.equal([
        ['schema', 'ok', undefined],
        ['schema', 'refused', 'invalid_argument'],
      ]);
    });

    it('refuses tools/call without a name (-32602)', () => {
      expect((send('tools/call', { arguments: {} }).answer as any).error.code).to.equal(-32602);
    });
  });
});

describe('McpEndpoint tracing', () => {
  it('makes an OpenTelemetry span per tool call, named for the tool, with its outcome', async () => {
    const { registerMemoryTracer } = await import('../../helpers/memory-tracer.js');
    const spans = registerMemoryTracer();
    const ep = endpoint();
    ep.handle(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'search', arguments: { collection: 'docs', text: 'fox' } },
      }),
      caller,
    );
    ep.handle(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'search', arguments: { nope: 1 } },
      }),
      caller,
    );
    const ours = spans.filter((s) => s.name === 'mcp.tool search').slice(-2);
    expect(ours.map((s) => s.attributes)).to.deep.equal([
      { 'mcp.tool': 'search', 'mcp.outcome': 'ok' },
      { 'mcp.tool': 'search', 'mcp.outcome': 'refused' },
    ]);
  });
});
