/**
 * The seed page's "Memory" section, run as written against a real fenec-server over HTTP: its create,
 * its three inserts, its four recalls with the answers the page shows, and its expiry (with 300 ms for
 * the page's ten seconds, so that the suite stays fast).
 */
import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import * as path from 'node:path';
import { query, Sandbox, type ServerProcess } from './processes.js';

const CREATE =
  'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))';
const INSERTS = [
  'insert into memories {text: "the deploy runs on fridays", tags: ["ops"], at: now(), expires: null, vector: [0.9, 0.1, 0]}   -- → 1',
  'insert into memories {text: "staging is in eu-west-1", tags: ["ops"], at: now(), expires: null, vector: [0, 0.2, 1]}   -- → 1',
  'insert into memories {text: "the user is debugging the login page", tags: ["session"], at: now(), expires: now() + 10000}   -- → 1',
];
const RECALLS: [string, string][] = [
  ['get memories select text, tags, at match text "when do we deploy" limit 5', 'the deploy runs on fridays'],
  [
    'get memories select text, tags, at match text "which region" near vector [0, 0.1, 1] fuse limit 5',
    'staging is in eu-west-1',
  ],
  ['get memories select text where tags has "session" limit 5', 'the user is debugging the login page'],
  ['get memories select text, tags, at order at desc, id desc limit 5', 'the user is debugging the login page'],
];
const COUNT = 'get memories where tags has "session" count';

describe("the seed's Memory section, over HTTP", () => {
  const sandbox = new Sandbox();
  let server: ServerProcess;
  const run = async (statement: string) => {
    const reply = await query(server.url, statement);
    expect(reply.status, `${statement}\n${reply.text}`).to.equal(200);
    return reply.json as Record<string, unknown>;
  };

  before(async () => {
    server = await sandbox.startServer([
      '--file',
      path.join(sandbox.dir(), 'notes.fenec'),
      '--sweep-interval',
      '100ms',
    ]);
  });
  after(() => sandbox.cleanUp());

  it('creates the collection as the page writes it', async () => {
    expect(await run(CREATE)).to.deep.equal({ created: true });
  });

  it('inserts the three memories, one row each', async () => {
    for (const statement of INSERTS) expect((await run(statement)).count).to.equal(1);
  });

  for (const [statement, first] of RECALLS) {
    it(`recalls ${JSON.stringify(first)} for ${statement}`, async () => {
      const answer = (await run(statement)) as { rows: { text: string }[] };
      expect(answer.rows[0]?.text).to.equal(first);
    });
  }

  it('puts the session memory out of every read once its time passes, and the sweeper out of the file', async () => {
    await run(
      'put memories {id: 3, text: "the user is debugging the login page", tags: ["session"], at: now(), expires: now() + 300}',
    );
    expect(await run(COUNT)).to.deep.equal({ count: 1 });
    await sleep(400);
    expect(await run(COUNT)).to.deep.equal({ count: 0 });
    expect((await run('get memories match text "debugging login"')).rows).to.deep.equal([]);
    expect(((await run('get memories select text near vector [0, 0.1, 1] limit 5')).rows as unknown[]).length).to.equal(
      2,
    );
    expect((await run('compact memories')).count).to.equal(0);
  });
});
