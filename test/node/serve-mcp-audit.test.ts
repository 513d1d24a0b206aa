import { expect } from 'chai';
import { pino } from 'pino';
import { FenecDatabase } from '../../node/database.js';
import { mcpEndpoint } from '../../node/mcp/serve-mcp.js';
import { Audit } from '../../shared/audit.js';
import { tempDir } from '../helpers/temp.js';

const SERVER = { options: {}, scoped: false };

describe('the MCP endpoint audit (node/mcp/serve-mcp)', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('m.fenec'), readOnly: false, program: 'test' });
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  it('records the memory collection made, and its vector field added, as the kinds table names them, before each remember call', () => {
    const lines: string[] = [];
    const endpoint = mcpEndpoint(db, {
      write: false,
      memory: 'memories',
      readOnly: false,
      logger: pino({ level: 'silent' }),
      audit: Audit.toSink((line) => lines.push(line)),
    });
    const remember = (args: Record<string, unknown>) =>
      (
        endpoint.handle(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: { name: 'remember', arguments: args },
          }),
          SERVER,
        ).answer as any
      ).result;
    expect(remember({ text: 'the deploy runs on fridays' }).isError).to.equal(false);
    expect(remember({ text: 'tea at four', vector: [1, 0, 0] }).isError).to.equal(false);
    expect(remember({ text: 'coffee at nine', vector: [0, 1, 0] }).isError).to.equal(false);
    const entries = lines.map((line) => {
      const { time, ...entry } = JSON.parse(line) as Record<string, unknown>;
      return entry;
    });
    const call = { event: 'mcp', tool: 'remember', tenant: null, sub: null, ok: true, error: null };
    expect(entries).to.deep.equal([
      { event: 'schema', statement: 'create', collection: 'memories', who: 'server', sub: null },
      call,
      { event: 'schema', statement: 'alter add', collection: 'memories', who: 'server', sub: null },
      call,
      call,
    ]);
  });
});
