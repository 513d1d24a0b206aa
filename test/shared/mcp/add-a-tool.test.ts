/**
 * Adding a tool is one new file plus its entry in the list: a tool defined here, as a file in
 * shared/mcp/tools/ would export it (its arguments a zod schema, typed from it), appended to the
 * list, is listed with its input schema, called, audited, counted, told of in the instructions and
 * named at startup by the real endpoint — with no other edit.
 */
import { expect } from 'chai';
import * as z from 'zod';
import { pino } from 'pino';
import { FenecDatabase } from '../../../node/database.js';
import { mcpEndpoint, mcpText } from '../../../node/mcp/serve-mcp.js';
import { Audit } from '../../../shared/audit.js';
import { param } from '../../../shared/fenecql/bind.js';
import { checkName } from '../../../shared/mcp/arguments.js';
import { defineTool } from '../../../shared/mcp/tool.js';
import { TOOLS } from '../../../shared/mcp/tools.js';
import { tempDir } from '../../helpers/temp.js';
import { expectFitsOutputSchema } from '../../helpers/tool-output.js';

/** A tool that writes: it sets `seen` to the time now on one row, by id. */
const stamp = defineTool({
  name: 'stamp',
  input: z.strictObject({
    collection: z.string().describe('The collection.'),
    id: z.int().describe("The row's id."),
  }),
  describe: () => ({
    title: 'Stamp a row',
    description: 'Sets seen to the time now on the row of that id. Answers {"count": 1}, or 0 when there was none.',
    outputSchema: { type: 'object', properties: { count: { type: 'integer' } } },
    annotations: {
      title: 'Stamp a row',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
  }),
  switch: 'write',
  instructions: 'stamp marks a row as seen.',
  audited: true,
  answersRows: false,
  run: (args, context) => {
    // The arguments are typed from the input schema: collection a string, id a number.
    const collection = checkName('stamp', 'collection', args.collection);
    const changes = {
      kind: 'Object',
      entries: [{ key: 'seen', value: { kind: 'Call', fn: 'now', args: [] } }],
    } as const;
    const where = { kind: 'Compare', op: '=', left: { kind: 'Field', name: 'id' }, right: param(1) } as const;
    return context.bounded(context.execute({ kind: 'Set', collection, changes, where }, [args.id]));
  },
});

const TOOLS_AND_STAMP = [...TOOLS, stamp];
const SERVER = { options: {}, scoped: false };

describe('adding a tool', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let lines: string[];
  let counted: [string, string][];

  const endpoint = (options: { write: boolean; readOnly: boolean }) =>
    mcpEndpoint(db, {
      ...options,
      memory: undefined,
      logger: pino({ level: 'silent' }),
      audit: Audit.toSink((line) => lines.push(line)),
      count: (tool, outcome) => counted.push([tool, outcome]),
      tools: TOOLS_AND_STAMP,
    });
  const send = (ep: ReturnType<typeof endpoint>, method: string, params: Record<string, unknown>) =>
    ep.handle(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), SERVER).answer as any;

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('t.fenec'), readOnly: false, program: 'test' });
    db.execute('create collection notes (title text, seen timestamp)');
    db.execute('insert into notes [{title: "a"}, {title: "b"}]');
    lines = [];
    counted = [];
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  it('lists it where its switch turns it on, after the tools before it in the list', () => {
    const tools = send(endpoint({ write: true, readOnly: false }), 'tools/list', {}).result.tools;
    expect(tools.map((t: { name: string }) => t.name)).to.deep.equal(['query', 'search', 'schema', 'write', 'stamp']);
    expect(tools[4]).to.deep.equal(stamp.define({ write: true, memory: undefined, readOnly: false }));
    expect(tools[4].inputSchema).to.deep.equal({
      type: 'object',
      properties: {
        collection: { type: 'string', description: 'The collection.' },
        id: { type: 'integer', description: "The row's id." },
      },
      required: ['collection', 'id'],
      additionalProperties: false,
    });
  });

  it('leaves it out without its switch, or on a read-only server (it writes), saying how it is offered', () => {
    for (const options of [
      { write: false, readOnly: false },
      { write: true, readOnly: true },
    ]) {
      const ep = endpoint(options);
      expect(send(ep, 'tools/list', {}).result.tools.map((t: { name: string }) => t.name)).not.to.include('stamp');
      const error = send(ep, 'tools/call', { name: 'stamp', arguments: { collection: 'notes', id: 1 } }).error;
      expect(error.code).to.equal(-32602);
      expect(error.message).to.contain(
        'stamp is offered by a server started with --mcp-write (and without --http-read-only)',
      );
    }
    expect(lines).to.deep.equal([]);
  });

  it('runs it on the database, audits the call (its audit flag) and counts it', () => {
    const result = send(endpoint({ write: true, readOnly: false }), 'tools/call', {
      name: 'stamp',
      arguments: { collection: 'notes', id: 2 },
    }).result;
    expect(result.isError).to.equal(false);
    expect(result.structuredContent).to.deep.equal({ count: 1 });
    expectFitsOutputSchema(stamp.define({ write: true, memory: undefined, readOnly: false }), result.structuredContent);
    const rows = (db.execute('get notes select id, seen order id') as { rows: { id: number; seen: unknown }[] }).rows;
    expect(rows[0]!.seen).to.equal(null);
    expect(rows[1]!.seen).to.be.a('string');
    expect(lines.map((line) => JSON.parse(line))).to.deep.equal([
      { ...JSON.parse(lines[0]!), event: 'mcp', tool: 'stamp', tenant: null, sub: null, ok: true, error: null },
    ]);
    expect(counted).to.deep.equal([['stamp', 'ok']]);
  });

  it('checks its arguments against its input schema, and counts a refusal as one', () => {
    const result = send(endpoint({ write: true, readOnly: false }), 'tools/call', {
      name: 'stamp',
      arguments: { collection: 'notes', row: 2 },
    }).result;
    expect(result.isError).to.equal(true);
    expect(result.structuredContent.error.code).to.equal('invalid_argument');
    expect(result.structuredContent.error.message).to.contain('stamp takes no argument "row"');
    expect(counted).to.deep.equal([['stamp', 'refused']]);
  });

  it('tells the model of it in the instructions, with the notes its arguments call for', () => {
    const initialize = { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'test', version: '1' } };
    const without = send(endpoint({ write: false, readOnly: false }), 'initialize', initialize).result
      .instructions as string;
    const withStamp = send(endpoint({ write: true, readOnly: false }), 'initialize', initialize).result
      .instructions as string;
    expect(without).not.to.contain('stamp');
    expect(withStamp).to.contain('write inserts, puts, sets or deletes rows. stamp marks a row as seen.');
  });

  it('is named in the startup line', () => {
    const config = { mcp: { write: true, memory: 'memories' }, httpReadOnly: false, readOnly: false };
    expect(mcpText(config, TOOLS_AND_STAMP)).to.equal(
      'POST /_mcp: query, search, schema, write, remember, recall, forget, stamp (memory: memories)',
    );
    expect(mcpText({ ...config, httpReadOnly: true }, TOOLS_AND_STAMP)).to.equal(
      'POST /_mcp: query, search, schema, recall (memory: memories)',
    );
  });
});
