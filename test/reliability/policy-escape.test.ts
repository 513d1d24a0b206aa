/**
 * The policy-escape table: a scoped JWT (alice, `owner = $jwt.sub`) tries to read and write rows not its
 * own through every statement kind over `/query`, and through every MCP tool and each of its arguments:
 * filters with `or true`, parameters, `$jwt` tricks, comments and quotes, a put replacing another's row,
 * a set changing the owner, tokens whose `sub` is itself an injection, collections the policy does not
 * name. After every attempt: no other owner's row, team's row or unnamed collection's row is in the
 * answer (each holds a marker), none of them changed, nothing answered 5xx, and counts count alice's only.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { mintToken } from '../../shared/auth/token.js';
import { query, request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';
import { FULL, report, sampled } from './harness.js';

const TOKEN = 'policy-escape-server-token';
const SECRET = 'policy-escape-secret-of-32-bytes-or-more';
const POLICY = [
  'notes     read,write  where owner = $jwt.sub',
  'memories  read,write  where owner = $jwt.sub',
  'docs      read        where team = $jwt.team',
].join('\n');
/** In every row alice must not see. */
const MARKER = 'hidden7q';
const ALICE_NOTES = [1, 2];
const BOB_NOTE = 3;
const BOB_MEMORY = 2;
const BOB_VECTOR = [0, 0, 1];

interface Attempt {
  readonly name: string;
  /** It may write: alice's rows are put back after it, and the others' compared. */
  readonly writes?: boolean;
  /** Sends it, answers the reply (HTTP status and the JSON a model or client reads). */
  readonly send: (s: Ctx) => Promise<Reply>;
  /** Beyond the table's properties, what this attempt must answer. */
  readonly expect?: (reply: Reply, body: any) => void;
}
interface Ctx {
  readonly server: ServerProcess;
  readonly alice: string;
}

const asAlice =
  (statement: string, params: unknown[] = []) =>
  (s: Ctx): Promise<Reply> =>
    query(s.server.url, statement, params, s.alice);
const tool =
  (name: string, args: Record<string, unknown>, token?: (s: Ctx) => string) =>
  (s: Ctx): Promise<Reply> =>
    request(s.server.url, {
      method: 'POST',
      path: '/_mcp',
      headers: {
        authorization: `Bearer ${token === undefined ? s.alice : token(s)}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    });
/** What a tool's caller reads: its structured content or its error. */
const toolBody = (reply: Reply): any => reply.json?.result?.structuredContent ?? reply.json?.error ?? reply.json;
const countIs =
  (n: number) =>
  (_reply: Reply, body: any): void => {
    expect(body.count, JSON.stringify(body)).to.equal(n);
  };
const refused =
  (...codes: string[]) =>
  (reply: Reply, body: any): void => {
    const code = body?.error?.code ?? body?.data?.code;
    expect(codes, `${reply.status} ${reply.text.slice(0, 300)}`).to.include(code);
  };
const aliceRowsOnly = (_reply: Reply, body: any): void => {
  for (const row of body.rows ?? []) expect(row.owner ?? 'alice', JSON.stringify(row)).to.equal('alice');
};

/** Reads that try to see past the policy, each run as /query and through MCP's query tool. */
const READS: readonly (readonly [string, unknown[]])[] = [
  ['get notes', []],
  ['get notes where true', []],
  ['get notes where owner = "bob"', []],
  ['get notes where owner = "bob" or true', []],
  ['get notes where true or owner = "bob"', []],
  ['get notes where (true) or (true)', []],
  ['get notes where owner != $jwt.sub', []],
  ['get notes where not (owner = $jwt.sub)', []],
  ['get notes where owner = $jwt.sub or owner = "bob"', []],
  ['get notes where owner = $jwt.sub or $jwt.sub = $jwt.sub', []],
  ['get notes where owner = $1', ['bob']],
  ['get notes where owner = $1', ['x" or true --']],
  ['get notes where owner in ["alice", "bob"]', []],
  ['get notes where owner in $1', [['alice', 'bob']]],
  ['get notes where owner like "%"', []],
  ['get notes where owner is null or owner is not null', []],
  ['get notes where coalesce(owner, "bob") = "bob"', []],
  ['get notes where lower(owner) = "bob"', []],
  ['get notes where len(owner) = 3', []],
  [`get notes where id = ${BOB_NOTE}`, []],
  ['get notes where id = $1', [BOB_NOTE]],
  ['get notes where id > 0 limit 100', []],
  ['get notes where owner = "alice" or true -- and owner = $jwt.sub', []],
  ['get notes select * order owner desc limit 1', []],
  ['get notes order id desc limit 1 offset 0', []],
  ['get notes offset 2', []],
  [`get notes match * "${MARKER}"`, []],
  [`get notes match title "${MARKER}" where true`, []],
  [`get notes select * near v ${JSON.stringify(BOB_VECTOR)} limit 10`, []],
  [`get notes match * "${MARKER}" near v ${JSON.stringify(BOB_VECTOR)} fuse limit 10`, []],
  ['get notes where $jwt.sub = "alice"', []],
  ['get notes where owner = $jwt.nope', []],
  ['get notes where owner = $JWT.sub', []],
  ['get notes where owner = $jwt.sub.x', []],
  ['get secrets', []],
  ['get secrets where true', []],
  ['get docs', []],
  ['get docs where team = "finance"', []],
  ['get docs where team = $jwt.sub or true', []],
  ['get memories where true', []],
  [`get memories match text "${MARKER}"`, []],
  ['schema', []],
  ['schema secrets', []],
  ['get notes; get notes where true', []],
];

/** Counts: alice has two notes; any other figure counts another's rows. */
const COUNTS: readonly string[] = [
  'get notes count',
  'get notes where true count',
  'get notes where owner = "bob" or true count',
  `get notes match * "${MARKER} alice" count`,
];

/** Writes that try to reach past the policy over /query. */
const WRITES: readonly Attempt[] = [
  {
    name: 'insert a row owned by bob',
    send: asAlice('insert into notes {title: "x", owner: "bob"}'),
    expect: refused('forbidden'),
  },
  {
    name: 'insert a row owned by bob through a param',
    send: asAlice('insert into notes {title: "x", owner: $1}', ['bob']),
    expect: refused('forbidden'),
  },
  {
    name: 'insert a row owned by bob through coalesce',
    send: asAlice('insert into notes {title: "x", owner: coalesce(null, "bob")}'),
    expect: refused('forbidden'),
  },
  {
    name: "insert two rows, the second bob's (all or nothing)",
    send: asAlice('insert into notes [{title: "mine"}, {title: "x", owner: "bob"}]'),
    expect: refused('forbidden'),
  },
  {
    name: "put replacing bob's row, owner alice",
    send: asAlice(`put notes {id: ${BOB_NOTE}, title: "pwned", owner: "alice"}`),
  },
  {
    name: "put replacing bob's row, owner bob",
    send: asAlice(`put notes {id: ${BOB_NOTE}, title: "pwned", owner: "bob"}`),
    expect: refused('forbidden'),
  },
  {
    name: "put replacing bob's row, owner left to the pin",
    send: asAlice(`put notes {id: ${BOB_NOTE}, title: "pwned"}`),
  },
  {
    name: 'put a new row owned by bob',
    send: asAlice('put notes {id: 999, title: "x", owner: "bob"}'),
    expect: refused('forbidden'),
  },
  {
    name: "set her row's owner to bob",
    send: asAlice(`set notes {owner: "bob"} where id = ${ALICE_NOTES[0]}`),
    expect: refused('forbidden'),
  },
  {
    name: "set her row's owner to bob through lower()",
    send: asAlice(`set notes {owner: lower("BOB")} where id = ${ALICE_NOTES[0]}`),
    expect: refused('forbidden'),
  },
  {
    name: "set bob's row's owner to alice",
    send: asAlice(`set notes {owner: "alice"} where id = ${BOB_NOTE}`),
    expect: countIs(0),
  },
  {
    name: "set bob's row's owner to $jwt.sub",
    send: asAlice('set notes {owner: $jwt.sub} where owner = "bob"'),
    expect: countIs(0),
  },
  { name: 'set every row', send: asAlice('set notes {title: "pwned"} where true'), expect: countIs(2) },
  {
    name: "set bob's rows by owner",
    send: asAlice('set notes {title: "pwned"} where owner = "bob"'),
    expect: countIs(0),
  },
  {
    name: 'set with or true',
    send: asAlice('set notes {title: "pwned"} where owner = "bob" or true'),
    expect: countIs(2),
  },
  { name: "del bob's rows by owner", send: asAlice('del notes where owner = "bob"'), expect: countIs(0) },
  { name: "del bob's row by id", send: asAlice(`del notes where id = ${BOB_NOTE}`), expect: countIs(0) },
  { name: 'del by ids or true', send: asAlice(`del notes where id in [${BOB_NOTE}] or true`), expect: countIs(2) },
  { name: 'del every row', send: asAlice('del notes where true'), expect: countIs(2) },
  {
    name: 'del with a param that is an injection',
    send: asAlice('del notes where owner = $1', ['bob" or true --']),
    expect: countIs(0),
  },
  {
    name: 'insert a memory owned by bob',
    send: asAlice('insert into memories {text: "x", owner: "bob"}'),
    expect: refused('forbidden'),
  },
  { name: 'del every memory', send: asAlice('del memories where true'), expect: countIs(1) },
  {
    name: "set bob's memory",
    send: asAlice(`set memories {text: "pwned"} where id = ${BOB_MEMORY}`),
    expect: countIs(0),
  },
  {
    name: 'insert into an unnamed collection',
    send: asAlice('insert into secrets {title: "x"}'),
    expect: refused('unknown_collection'),
  },
  {
    name: 'del from an unnamed collection',
    send: asAlice('del secrets where true'),
    expect: refused('unknown_collection'),
  },
  {
    name: 'set on a read-only collection',
    send: asAlice('set docs {team: "ops"} where true'),
    expect: refused('forbidden'),
  },
  {
    name: 'insert into a read-only collection',
    send: asAlice('insert into docs {title: "x", team: "ops"}'),
    expect: refused('forbidden'),
  },
  { name: 'create a collection', send: asAlice('create collection mine (a int)'), expect: refused('forbidden') },
  { name: 'drop notes', send: asAlice('drop collection notes'), expect: refused('forbidden') },
  {
    name: 'drop an unnamed collection',
    send: asAlice('drop collection secrets'),
    expect: refused('forbidden', 'unknown_collection'),
  },
  { name: 'alter notes', send: asAlice('alter collection notes add y int'), expect: refused('forbidden') },
  {
    name: 'alter notes dropping owner',
    send: asAlice('alter collection notes drop owner'),
    expect: refused('forbidden'),
  },
  { name: 'compact', send: asAlice('compact'), expect: refused('forbidden') },
  { name: 'compact notes', send: asAlice('compact notes'), expect: refused('forbidden') },
];

/** Tokens whose claims are themselves the attack (signed with the right key: an issuer's mistake). */
const SUBS: readonly (readonly [string, unknown])[] = [
  ['a sub that is an injection', '" or true --'],
  ['a sub that closes a quote', 'bob" or "1" = "1'],
  ['a sub of %', '%'],
  ['a sub of *', '*'],
  ['an empty sub', ''],
  ['a sub of BOB', 'BOB'],
  ['a null sub', null],
  ['a sub that is a list', ['alice', 'bob']],
  ['a sub that is an object', { $ne: 'x' }],
  ['a sub that is a number', 0],
  ['no sub', undefined],
];

describe('reliability: the policy-escape table', function () {
  this.timeout(180_000);
  const sandbox = new Sandbox();
  let ctx: Ctx;

  const admin = async (statement: string): Promise<any> => {
    const reply = await query(ctx.server.url, statement, [], TOKEN);
    expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
    return reply.json;
  };
  /** Everything alice must not see or change, as the server's token reads it. */
  const others = async (): Promise<string> =>
    JSON.stringify([
      await admin('get notes select * where owner != "alice" or owner is null order id limit 1000'),
      await admin('get memories select * where owner != "alice" or owner is null order id limit 1000'),
      await admin('get docs select * order id limit 1000'),
      await admin('get secrets select * order id limit 1000'),
      (await admin('schema')).collections.map((c: { name: string }) => c.name),
    ]);
  /** Alice's own rows as they were, whatever the last attempt did to them. */
  const resetAlice = async (): Promise<void> => {
    await admin('del notes where owner = "alice"');
    await admin(`put notes {id: ${ALICE_NOTES[0]}, title: "alice one", owner: "alice", v: [1, 0, 0]}`);
    await admin(`put notes {id: ${ALICE_NOTES[1]}, title: "alice two", owner: "alice", v: [0, 1, 0]}`);
    await admin('del memories where owner = "alice"');
    await admin('put memories {id: 1, text: "alice remembers", owner: "alice", at: now()}');
  };

  before(async () => {
    const dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), `${POLICY}\n`);
    const server = await sandbox.startServer([
      '--file',
      path.join(dir, 'escape.fenec'),
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
      '--policy',
      path.join(dir, 'policy.txt'),
      '--mcp-write',
      '--mcp-memory',
      'memories',
    ]);
    ctx = {
      server,
      alice: mintToken({ secret: SECRET, tenant: 'acme', sub: 'alice', ttlSeconds: 3600, claims: { team: 'ops' } }),
    };
    await admin('create collection notes (title text @text, owner text @hash, v vector<3> @hnsw(cosine))');
    await admin(
      'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))',
    );
    await admin('create collection docs (title text @text, team text @hash)');
    await admin('create collection secrets (title text @text)');
    await resetAlice();
    await admin(`put notes {id: ${BOB_NOTE}, title: "bob ${MARKER}", owner: "bob", v: ${JSON.stringify(BOB_VECTOR)}}`);
    await admin(`put notes {id: 4, title: "nobody ${MARKER}", v: [0, 1, 1]}`);
    await admin(
      `put memories {id: ${BOB_MEMORY}, text: "bob ${MARKER}", tags: ["bob"], owner: "bob", at: now(), vector: ${JSON.stringify(BOB_VECTOR)}}`,
    );
    await admin(`insert into docs [{title: "ops doc", team: "ops"}, {title: "finance ${MARKER}", team: "finance"}]`);
    await admin(`insert into secrets {title: "secret ${MARKER}"}`);
  });
  after(() => sandbox.cleanUp());

  const attempts: Attempt[] = [];
  for (const [statement, params] of READS) {
    attempts.push({
      name: `/query ${statement} ${JSON.stringify(params)}`,
      send: asAlice(statement, params),
      expect: aliceRowsOnly,
    });
    attempts.push({
      name: `tool query ${statement} ${JSON.stringify(params)}`,
      send: tool('query', { statement, params }),
      expect: aliceRowsOnly,
    });
  }
  for (const statement of COUNTS) {
    attempts.push({
      name: `/query ${statement}`,
      send: asAlice(statement),
      expect: (reply, body) => reply.status === 200 && expect(body.count).to.be.at.most(2),
    });
    attempts.push({
      name: `tool query ${statement}`,
      send: tool('query', { statement }),
      expect: (reply, body) => reply.status === 200 && body.count !== undefined && expect(body.count).to.be.at.most(2),
    });
  }
  attempts.push(...WRITES.map((w) => ({ ...w, writes: true })));
  // Writes through the query tool: it runs reads only.
  for (const statement of [
    'insert into notes {title: "x", owner: "bob"}',
    'del notes where true',
    `put notes {id: ${BOB_NOTE}, title: "pwned"}`,
    'drop collection notes',
  ]) {
    attempts.push({
      name: `tool query ${statement}`,
      send: tool('query', { statement }),
      expect: refused('forbidden'),
      writes: true,
    });
  }
  // search: every argument.
  const search = (args: Record<string, unknown>, check?: Attempt['expect']): Attempt => ({
    name: `tool search ${JSON.stringify(args)}`,
    send: tool('search', args),
    expect: check ?? aliceRowsOnly,
  });
  attempts.push(
    search({ collection: 'notes', text: MARKER }),
    search({ collection: 'notes', text: `${MARKER} alice`, limit: 100 }),
    search({ collection: 'notes', vector: BOB_VECTOR, limit: 100 }),
    search({ collection: 'notes', text: MARKER, vector: BOB_VECTOR }),
    search({ collection: 'notes', text: 'alice', filter: 'true' }),
    search({ collection: 'notes', text: 'alice', filter: 'owner = "bob"' }),
    search({ collection: 'notes', text: 'alice', filter: 'owner = "bob" or true' }),
    search({ collection: 'notes', text: 'alice', filter: 'true) or (true' }),
    search({ collection: 'notes', text: 'alice', filter: 'true or owner != $jwt.sub' }),
    search({ collection: 'notes', text: 'alice', filter: 'owner = $1', params: ['bob'] }),
    search({ collection: 'notes', text: 'alice', filter: 'owner = $1', params: ['x" or true --'] }),
    search({ collection: 'notes', text: 'alice', filter: 'true -- ' }),
    search({ collection: 'notes', text: 'alice', filter: 'true limit 100' }),
    search({ collection: 'notes', text: 'alice', filter: 'true; get notes' }),
    search({ collection: 'notes', vector: BOB_VECTOR, fields: ['owner', 'title', 'v'] }),
    search({ collection: 'notes', text: 'alice', fields: ['*'] }),
    search({ collection: 'notes where true', text: MARKER }),
    search({ collection: 'notes) or (true', text: MARKER }),
    search({ collection: 'secrets', text: MARKER }),
    search({ collection: 'docs', text: MARKER }),
    search({ collection: 'docs', text: 'doc', filter: 'team = "finance" or true' }),
    search({ collection: 'memories', text: MARKER }),
    search({ collection: 'memories', vector: BOB_VECTOR }),
  );
  // schema: never names what the policy does not.
  attempts.push(
    {
      name: 'tool schema {}',
      send: tool('schema', {}),
      expect: (_r, body) => expect(JSON.stringify(body)).not.to.include('secrets'),
    },
    {
      name: 'tool schema secrets',
      send: tool('schema', { collection: 'secrets' }),
      expect: refused('unknown_collection'),
    },
    {
      name: '/query schema',
      send: asAlice('schema'),
      expect: (_r, body) => expect(JSON.stringify(body)).not.to.include('secrets'),
    },
  );
  // write: each operation and argument.
  const write = (args: Record<string, unknown>, check?: Attempt['expect']): Attempt => ({
    name: `tool write ${JSON.stringify(args)}`,
    send: tool('write', args),
    writes: true,
    ...(check === undefined ? {} : { expect: check }),
  });
  attempts.push(
    write({ collection: 'notes', insert: { title: 'x', owner: 'bob' } }, refused('forbidden')),
    write({ collection: 'notes', insert: [{ title: 'mine' }, { title: 'x', owner: 'bob' }] }, refused('forbidden')),
    write({ collection: 'notes', insert: { title: 'x', owner: '$jwt.sub' } }, refused('forbidden')),
    write({ collection: 'notes', put: { id: BOB_NOTE, title: 'pwned' } }),
    write({ collection: 'notes', put: { id: BOB_NOTE, title: 'pwned', owner: 'alice' } }),
    write({ collection: 'notes', put: { id: BOB_NOTE, title: 'pwned', owner: 'bob' } }, refused('forbidden')),
    write(
      { collection: 'notes', set: { owner: 'bob' }, filter: 'id = $1', params: [ALICE_NOTES[0]] },
      refused('forbidden'),
    ),
    write({ collection: 'notes', set: { owner: 'alice' }, filter: 'id = $1', params: [BOB_NOTE] }, countIs(0)),
    write({ collection: 'notes', set: { title: 'pwned' }, filter: 'true' }, countIs(2)),
    write({ collection: 'notes', set: { title: 'pwned' }, filter: 'owner = "bob" or true' }, countIs(2)),
    write({ collection: 'notes', set: { title: 'pwned' }, filter: 'true) or (true' }, refused('syntax_error')),
    write({ collection: 'notes', set: { title: 'owner' }, filter: 'owner = $1', params: ['bob'] }, countIs(0)),
    write({ collection: 'notes', del: true, filter: 'owner = "bob"' }, countIs(0)),
    write({ collection: 'notes', del: true, filter: `id = ${BOB_NOTE}` }, countIs(0)),
    write({ collection: 'notes', del: true, filter: 'true' }, countIs(2)),
    write({ collection: 'notes', del: true, filter: 'true -- and owner = $jwt.sub' }, countIs(2)),
    write({ collection: 'secrets', insert: { title: 'x' } }, refused('unknown_collection')),
    write({ collection: 'secrets', del: true, filter: 'true' }, refused('unknown_collection')),
    write({ collection: 'docs', set: { team: 'ops' }, filter: 'true' }, refused('forbidden')),
    write({ collection: 'memories', del: true, filter: 'true' }, countIs(1)),
    write({ collection: 'memories', set: { owner: 'alice' }, filter: 'id = $1', params: [BOB_MEMORY] }, countIs(0)),
    write({ collection: 'notes where true', del: true, filter: 'true' }, refused('invalid_name', 'invalid_argument')),
  );
  // The memory tools: their arguments leave no room for an owner, an id list or a filter.
  attempts.push(
    {
      name: 'tool remember with an owner',
      send: tool('remember', { text: 'x', owner: 'bob' }),
      expect: refused('invalid_argument'),
      writes: true,
    },
    { name: 'tool remember', send: tool('remember', { text: `alice ${MARKER} too`, tags: ['bob'] }), writes: true },
    { name: "tool recall by a word of bob's", send: tool('recall', { text: MARKER }), expect: aliceRowsOnly },
    { name: "tool recall by bob's tag", send: tool('recall', { tags: ['bob'] }), expect: aliceRowsOnly },
    {
      name: "tool recall by bob's vector",
      send: tool('recall', { vector: BOB_VECTOR, limit: 100 }),
      expect: aliceRowsOnly,
    },
    { name: 'tool recall with nothing', send: tool('recall', { limit: 100 }), expect: aliceRowsOnly },
    { name: "tool forget bob's memory", send: tool('forget', { id: BOB_MEMORY }), expect: countIs(0), writes: true },
    {
      name: 'tool forget "2 or true"',
      send: tool('forget', { id: '2 or true' }),
      expect: refused('invalid_argument'),
      writes: true,
    },
    { name: 'tool forget -1', send: tool('forget', { id: -1 }), writes: true },
  );
  // Tokens whose claims are the attack, on reads and writes alike.
  for (const [what, sub] of SUBS) {
    const token = (): string =>
      jwt.sign({ tenant: 'acme', team: 'ops', ...(sub === undefined ? {} : { sub }) }, SECRET, { expiresIn: 600 });
    const as =
      (statement: string) =>
      (s: Ctx): Promise<Reply> =>
        query(s.server.url, statement, [], token());
    attempts.push(
      { name: `${what}: get notes`, send: as('get notes where true'), expect: aliceRowsOnly },
      {
        name: `${what}: get notes count`,
        send: as('get notes count'),
        expect: (reply, body) => reply.status === 200 && expect(body.count).to.equal(0),
      },
      { name: `${what}: set notes where true`, send: as('set notes {title: "pwned"} where true'), writes: true },
      { name: `${what}: del notes where true`, send: as('del notes where true'), writes: true },
      { name: `${what}: tool recall`, send: tool('recall', { text: MARKER }, token), expect: aliceRowsOnly },
      {
        name: `${what}: tool write del`,
        send: tool('write', { collection: 'notes', del: true, filter: 'true' }, token),
        writes: true,
      },
    );
  }

  it('has at least 136 attempts', () => {
    expect(attempts.length).to.be.at.least(136);
  });

  it("lets no attempt read, count or change a row not alice's, over /query and every tool", async () => {
    const failures: string[] = [];
    const baseline = await others();
    let compared = 0;
    const run = sampled(attempts, 3);
    for (const attempt of run) {
      let reply: Reply;
      try {
        reply = await attempt.send(ctx);
      } catch (err) {
        failures.push(`${attempt.name}: ${(err as Error).message}`);
        continue;
      }
      const body = attempt.name.includes('tool ') ? toolBody(reply) : reply.json;
      if (reply.status >= 500 || reply.json?.error?.code === -32603)
        failures.push(`${attempt.name}: ${reply.status} ${reply.text.slice(0, 300)}`);
      if (reply.text.includes(MARKER) && !attempt.name.startsWith('tool remember'))
        failures.push(`${attempt.name}: leaked ${reply.text.slice(0, 300)}`);
      try {
        attempt.expect?.(reply, body);
      } catch (err) {
        failures.push(`${attempt.name}: ${(err as Error).message}`);
      }
      // After a write, and after every read of a full run: what alice must not change, compared whole.
      if (attempt.writes === true || FULL) {
        compared += 1;
        if ((await others()) !== baseline) failures.push(`${attempt.name}: changed another's rows`);
        await resetAlice();
      }
    }
    compared += 1;
    if ((await others()) !== baseline) failures.push("the others' rows changed over the run");
    report(
      'policy escapes',
      `${run.length} of ${attempts.length} attempts (${READS.length * 2 + COUNTS.length * 2} reads and counts over /query and the query tool, ${WRITES.length} writes over /query, ` +
        `the search, schema, write, remember, recall and forget tools, ${SUBS.length} hostile sub claims), the others' rows compared ${compared} times: ${failures.length} escapes`,
    );
    expect(failures.length, failures.join('\n')).to.equal(0);
  });
});
