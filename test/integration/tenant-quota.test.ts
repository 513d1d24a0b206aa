/**
 * A tenant at its byte quota, on a real tenant node process: writes that free space pass, the file
 * shrinks after compact, and only writes that grow the file are refused.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'tenant-quota-test-token';
const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau'.split(' ');

const tq = (node: ServerProcess, tenant: string, statement: string, params: unknown[] = []): Promise<Reply> =>
  request(node.url, { method: 'POST', path: `/t/${tenant}/query`, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ statement, params }) });

/** A row's text: 60 words, varied so that the text index has many terms. */
const bodyOf = (i: number): string => Array.from({ length: 60 }, (_, j) => `${WORDS[(i * 7 + j) % WORDS.length]}${i % 50}`).join(' ');
/** A row as a FenecQL object literal. */
const rowOf = (i: number): string => `{k: "key${i}", body: ${JSON.stringify(bodyOf(i))}, n: ${i}, v: [${(i % 7) + 1}, 2, 3, ${i % 5}]}`;

/** Inserts rows until the quota refuses one, in batches, then one by one: the file is full to the page. */
async function fill(node: ServerProcess, tenant: string): Promise<number> {
  let rows = 0;
  for (const batch of [25, 1]) {
    for (;;) {
      const reply = await tq(node, tenant, `insert into docs [${Array.from({ length: batch }, (_, j) => rowOf(rows + j)).join(', ')}]`);
      if (reply.status !== 200) {
        expect(reply.status, reply.text).to.equal(507);
        expect(reply.json.error.code).to.equal('storage_full');
        break;
      }
      rows += batch;
    }
  }
  return rows;
}

describe('a tenant at its byte quota (--tenant-max-bytes)', () => {
  const sandbox = new Sandbox();
  let dir: string;
  let node: ServerProcess;

  before(async () => {
    dir = path.join(sandbox.dir(), 'data');
    node = await sandbox.startServer(['--data-dir', dir, '--tenant-max-bytes', '1mb', '--tenant-rate', '10000', '--tenant-burst', '10000'], { FENEC_TOKEN: TOKEN });
  });
  after(() => sandbox.cleanUp());

  it('frees space at the quota: del, a set that does not grow, compact; the file shrinks; only growing writes get 507', async function () {
    this.timeout(120_000);
    const admin = await request(node.url, { method: 'PUT', path: '/t/full', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(admin.status).to.equal(201);
    expect((await tq(node, 'full', 'create collection docs (k text unique, body text @text, n int @sorted, v vector<4> @hnsw(cosine))')).status).to.equal(200);
    const rows = await fill(node, 'full');
    expect(rows).to.be.above(100);

    // A write that grows the file is refused, whatever its kind.
    expect((await tq(node, 'full', `insert into docs ${rowOf(rows)}`)).status).to.equal(507);
    expect((await tq(node, 'full', 'insert into docs {k: "big", body: $1, n: 0}', ['x'.repeat(100_000)])).status).to.equal(507);
    expect((await tq(node, 'full', 'set docs {body: $1} where k = $2', ['x'.repeat(200_000), 'key3'])).json.error.code).to.equal('storage_full');

    // Writes that free space, or rewrite it without growing, pass.
    const one = await tq(node, 'full', 'del docs where k = $1', ['key1']);
    expect(one.status, one.text).to.equal(200);
    expect(one.json.count).to.equal(1);
    const same = await tq(node, 'full', 'set docs {body: $1, n: $2} where k = $3', [bodyOf(2).split('').reverse().join(''), -2, 'key2']);
    expect(same.status, same.text).to.equal(200);
    expect(same.json.count).to.equal(1);
    const shorter = await tq(node, 'full', 'set docs {body: "alpha beta"} where n >= $1 and n < $2', [10, 20]);
    expect(shorter.status, shorter.text).to.equal(200);
    expect(shorter.json.count).to.equal(10);
    const ten = await tq(node, 'full', 'del docs where n >= $1 and n < $2', [20, 30]);
    expect(ten.status, ten.text).to.equal(200);
    expect(ten.json.count).to.equal(10);

    // compact (one collection, then the file): it shrinks, on the disk too.
    const file = path.join(dir, 'full.fenec');
    const some = await tq(node, 'full', 'compact docs');
    expect(some.status, some.text).to.equal(200);
    expect(some.json.bytes_after).to.be.below(some.json.bytes_before);
    const all = await tq(node, 'full', 'compact');
    expect(all.status, all.text).to.equal(200);
    expect(all.json.bytes_after).to.be.at.most(some.json.bytes_after);
    expect(fs.statSync(file).size).to.equal(all.json.bytes_after);
    expect(fs.statSync(`${file}-wal`).size).to.equal(0);

    // Room again: a row that fits is taken; a write that grows past the quota is still refused.
    const fits = await tq(node, 'full', `insert into docs ${rowOf(rows)}`);
    expect(fits.status, fits.text).to.equal(200);
    const grows = await tq(node, 'full', 'insert into docs {k: "big", body: $1, n: 0}', ['x'.repeat(600_000)]);
    expect(grows.status).to.equal(507);
    expect(grows.json.error.code).to.equal('storage_full');
    expect((await tq(node, 'full', 'get docs count')).json.count).to.equal(rows - 11 + 1);
    const found = await tq(node, 'full', 'get docs match body $1 limit 1', [`${WORDS[(rows * 7) % WORDS.length]}${rows % 50}`]);
    expect(found.status, found.text).to.equal(200);
    expect(found.json.count).to.equal(1);
  });
});
