/**
 * fast-check against a real server's `POST /query`: statements by the grammar and raw mutations of them,
 * conditions alone, bodies of every shape (not JSON, not an object, a statement that is not a string, raw
 * bytes), under the server token and under a scoped JWT. Every answer: within 1 s, never a 5xx, always
 * JSON; after each round /_health answers and the server's RSS stays under twice the idle server's plus its
 * answer cap.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { mintToken } from '../../shared/auth/token.js';
import { parseByteSize } from '../../shared/cli/options.js';
import { query, Sandbox, type ServerProcess } from '../integration/processes.js';
import { condition, FUZZ_SCHEMA, queryBody } from './arbitraries.js';
import {
  describeTally,
  expectServing,
  judged,
  newTally,
  PropertyBroken,
  report,
  RssWatch,
  scaled,
  SEED,
  shown,
} from './harness.js';

const ROUNDS = scaled(2, 5);
// Issue 29's fuzz round: 5 000 bodies under make reliability (and as many conditions).
const RUNS = scaled(60, 1000);
const MAX_ANSWER = '32mb';
const TOKEN = 'fuzz-query-token';
const SECRET = 'fuzz-query-secret-of-at-least-32-bytes';

describe('reliability: fuzzing /query', function () {
  this.timeout(scaled(60_000, 300_000));
  const sandbox = new Sandbox();
  let server: ServerProcess;
  let jwt: string;
  /** The server's RSS, idle before the first body, held to 2 × idle + its answer cap over both tests. */
  let watch: RssWatch;

  before(async () => {
    const dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), 'docs read,write where owner = $jwt.sub\ns1 read\n');
    server = await sandbox.startServer([
      '--file',
      path.join(dir, 'fuzz.fenec'),
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
      '--policy',
      path.join(dir, 'policy.txt'),
      '--max-answer',
      MAX_ANSWER,
    ]);
    jwt = mintToken({ secret: SECRET, tenant: 'fuzz', sub: 'ada', ttlSeconds: 3600, claims: { team: 'ops' } });
    const created = await query(server.url, FUZZ_SCHEMA, [], TOKEN);
    if (created.status !== 200) throw new Error(created.text);
    watch = new RssWatch('/query fuzzing', server.pid, parseByteSize(MAX_ANSWER, '--max-answer'));
  });
  after(() => sandbox.cleanUp());

  /** Nothing stored is garbage: a vector component that overflowed float32 would read back as null. */
  async function expectNoGarbage(): Promise<void> {
    const rows = (await query(server.url, 'get docs select id, v, w limit 1000000', [], TOKEN)).json.rows as Array<{
      id: number;
      v?: unknown[];
      w?: unknown[];
    }>;
    for (const row of rows) {
      for (const vector of [row.v, row.w]) {
        if (vector?.some((x) => typeof x !== 'number' || !Number.isFinite(x)))
          throw new PropertyBroken(
            `row ${row.id} holds a vector with a component that is not a number: ${JSON.stringify(vector)}`,
          );
      }
    }
  }

  /** Rows for the reads to find, given back whenever the fuzzed deletes took them. */
  async function refill(): Promise<void> {
    const count = await query(server.url, 'get docs count', [], TOKEN);
    if (count.json?.count >= 20) return;
    const rows = [...Array(30).keys()].map((i) => ({
      title: `fox ${i}`,
      body: 'the quick brown fox',
      year: 2000 + i,
      score: i / 3,
      done: i % 2 === 0,
      tags: ['a', `t${i}`],
      meta: { i },
      at: 1_700_000_000_000 + i,
      owner: i % 3 === 0 ? 'ada' : 'bob',
      v: [i, 1, 2, 3],
      w: [1, i],
    }));
    const reply = await query(server.url, `insert into docs ${JSON.stringify(rows)}`, [], TOKEN);
    if (reply.status !== 200) throw new Error(reply.text);
  }

  it(`holds over ${ROUNDS} rounds of ${RUNS} bodies: statements, mutations, any JSON, raw bytes`, async () => {
    const tally = newTally();
    for (let round = 0; round < ROUNDS; round += 1) {
      await refill();
      await fc.assert(
        fc.asyncProperty(queryBody, fc.boolean(), async ({ body, contentType }, scoped) => {
          const headers: Record<string, string> = { authorization: `Bearer ${scoped ? jwt : TOKEN}` };
          if (contentType !== '') headers['content-type'] = contentType;
          await judged(
            tally,
            `POST /query ${shown(body)} as ${scoped ? 'a scoped JWT' : 'the server token'}`,
            server.url,
            { method: 'POST', path: '/query', headers, body },
          );
        }),
        { seed: SEED + round, numRuns: RUNS, endOnFailure: true },
      );
      await expectServing(server.url);
      await expectNoGarbage();
      watch.sample();
    }
    report('/query bodies', `${ROUNDS} rounds × ${RUNS}: ${describeTally(tally)}, ${watch.summary()}`);
  });

  it(`holds over ${ROUNDS} rounds of ${RUNS} conditions, as where, under a scoped JWT and the server token`, async () => {
    const tally = newTally();
    const shapes = [
      'get docs where COND limit 5',
      'get docs where COND count',
      'get docs match * "fox" where COND limit 3',
      'get docs near v [1, 1, 2, 3] where COND limit 3',
      'set docs {score: 1} where (COND) and id < 0',
      'del docs where (COND) and id < 0',
    ];
    for (let round = 0; round < ROUNDS; round += 1) {
      await refill();
      await fc.assert(
        fc.asyncProperty(
          condition,
          fc.constantFrom(...shapes),
          fc.boolean(),
          fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
          async (cond, shape, scoped, params) => {
            const statement = shape.replace('COND', cond);
            await judged(tally, `${shown(statement)} params ${shown(params)}`, server.url, {
              method: 'POST',
              path: '/query',
              body: JSON.stringify({ statement, params }),
              headers: { authorization: `Bearer ${scoped ? jwt : TOKEN}`, 'content-type': 'application/json' },
            });
          },
        ),
        { seed: SEED + 1000 + round, numRuns: RUNS, endOnFailure: true },
      );
      await expectServing(server.url);
      watch.sample();
    }
    report('conditions', `${ROUNDS} rounds × ${RUNS}: ${describeTally(tally)}, ${watch.summary()}`);
  });
});
