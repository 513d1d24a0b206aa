/**
 * SQL written where FenecQL was meant: each habit is refused as before (same code, same message,
 * nothing changed) and its hint names the FenecQL meant — over /query and in an MCP tool's result.
 * A "did you mean" names only a collection the token may see.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import { mintToken } from '../../shared/auth/token.js';
import { connect, type McpTestClient, type ToolResult } from './mcp/clients.js';
import { query, Sandbox, type ServerProcess } from './processes.js';

const TOKEN = 'habits-server-token';
const SECRET = 'a-secret-of-at-least-32-bytes-for-hs256!';

/** [what a model writes, the error code, what the hint must say]. */
const HABITS: ReadonlyArray<readonly [string, string, string]> = [
  ['select * from notes', 'syntax_error', 'get notes'],
  [
    'SELECT title, year FROM notes WHERE year > 2020 ORDER BY year DESC',
    'syntax_error',
    'get notes select title, year WHERE year > 2020 order year DESC',
  ],
  ['get notes where title == "x"', 'syntax_error', 'one "="'],
  ['get notes where year <> 2024', 'syntax_error', '!='],
  ['get notes limit 10, 20', 'syntax_error', 'limit 20 offset 10'],
  ['get notes ORDER BY year DESC', 'syntax_error', 'order without "by"'],
  ["get notes where title = 'x'", 'invalid_character', 'double quotes'],
  ['get notes where year = 1 && title = "x"', 'invalid_character', 'and'],
  ['get notes where year = 1 || title = "x"', 'invalid_character', 'or'],
  ['get notes where year in (2024, 2025)', 'syntax_error', 'in [2024, 2025]'],
  ['get notes count(*)', 'syntax_error', 'get notes where year = 2024 count'],
  ['update notes set title = "x" where id = 1', 'syntax_error', 'set notes {title: "x"} where id = 7'],
  ['delete from notes where id = 1', 'syntax_error', 'del notes where id = 7'],
  ['insert into notes (title) values ("x")', 'syntax_error', 'insert into notes {title: "x"'],
];

/** The hint is in the structured error and in the text the model reads (where it is JSON, quotes escaped). */
function expectHint(result: ToolResult, says: string): void {
  expect((result.structuredContent as { error: { hint: string } }).error.hint).to.include(says);
  expect(result.content.map((c) => c.text).join('\n')).to.include(JSON.stringify(says).slice(1, -1));
}

describe('hints for SQL habits', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let agent: string;

  before(async () => {
    const dir = sandbox.dir();
    const policy = path.join(dir, 'policy.txt');
    fs.writeFileSync(policy, 'notes read\n');
    server = await sandbox.startServer([
      '--file',
      path.join(dir, 'habits.fenec'),
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
      '--policy',
      policy,
      '--mcp',
    ]);
    for (const statement of [
      'create collection notes (title text, year int)',
      'create collection secrets (text text)',
      'insert into notes {title: "kept", year: 2024}',
    ]) {
      expect((await query(server.url, statement, [], TOKEN)).status).to.equal(200);
    }
    agent = mintToken({ secret: SECRET, sub: 'agent', ttlSeconds: 600 });
  });

  after(() => sandbox.cleanUp());

  it('names the FenecQL meant for each habit over /query, refusing it as before and changing nothing', async () => {
    for (const [statement, code, says] of HABITS) {
      const reply = await query(server.url, statement, [], TOKEN);
      expect(reply.status, statement).to.equal(400);
      expect(reply.json.error.code, statement).to.equal(code);
      expect(reply.json.error.hint, statement).to.be.a('string').and.include(says);
    }
    const rows = await query(server.url, 'get notes', [], TOKEN);
    expect(rows.json).to.deep.equal({ rows: [{ id: 1, title: 'kept', year: 2024 }], count: 1 });
  });

  it('takes what FenecQL shares with SQL as it is: keywords in capitals, IS NOT NULL, !=, LIMIT … OFFSET', async () => {
    for (const statement of [
      'GET notes WHERE title IS NOT NULL AND year != 2020 ORDER year DESC LIMIT 10 OFFSET 0',
      'get notes where title is not null order year desc',
    ]) {
      const reply = await query(server.url, statement, [], TOKEN);
      expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
      expect(reply.json.count).to.equal(1);
    }
  });

  it('says "did you mean" with the nearest collection the token may see, and never one its policy hides', async () => {
    const server_ = await query(server.url, 'get note', [], TOKEN);
    expect(server_.json.error).to.include({ code: 'unknown_collection' });
    expect(server_.json.error.hint).to.match(/^did you mean notes\?/);
    const secret = await query(server.url, 'get secret', [], TOKEN);
    expect(secret.json.error.hint).to.match(/^did you mean secrets\?/);

    const scoped = await query(server.url, 'get note', [], agent);
    expect(scoped.json.error.code).to.equal('unknown_collection');
    expect(scoped.json.error.hint).to.match(/^did you mean notes\?/);
    for (const statement of ['get secret', 'get secrets', 'schema secret']) {
      const hidden = await query(server.url, statement, [], agent);
      expect(hidden.json.error.code, statement).to.equal('unknown_collection');
      expect(hidden.text, statement).not.to.include('secrets?');
    }
  });

  it("gives the same hints in an MCP tool's result, for the model to correct its call", async () => {
    let client: McpTestClient | undefined;
    try {
      client = await connect('client 2.x', { transport: 'http', url: `${server.url}/_mcp`, token: agent });
      for (const [statement, , says] of HABITS.slice(0, 6)) {
        const result = await client.callTool('query', { statement });
        expect(result.isError, statement).to.equal(true);
        expectHint(result, says);
      }
      expectHint(await client.callTool('query', { statement: 'get note' }), 'did you mean notes?');
      const filter = await client.callTool('search', { collection: 'notes', text: 'kept', filter: 'year == 2024' });
      expect(filter.isError).to.equal(true);
      expectHint(filter, 'one "="');
    } finally {
      await client?.close();
    }
  });
});
