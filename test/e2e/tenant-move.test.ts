/**
 * Operating tenants over HTTP, as real processes: two tenant nodes, a router of two workers and a
 * second router of one. A tenant backed up and restored through the router, a tenant moved from node
 * to node while a client writes to it (every acknowledged write on the target, none answered by the
 * old node after the move, the other router following without a restart), a placement file edited
 * under a running router, and the workers' metrics summed.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FENEC, FENEC_ROUTER, request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';

const TOKEN = 'move-test-server-token';
const ENV = { FENEC_TOKEN: TOKEN };
const auth = { authorization: `Bearer ${TOKEN}` };

const post = (base: string, tenant: string, statement: string, params: unknown[] = []): Promise<Reply> =>
  request(base, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ statement, params }),
  });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** `fenec ARGS` with the server token, its stdout into `out` when given (a backup is bytes, not text). */
function fenec(args: string[], out?: string): { status: number | null; stdout: string; stderr: string } {
  const command = [process.execPath, FENEC, ...args].map((part) => `'${part.replace(/'/g, "'\\''")}'`).join(' ');
  const result = spawnSync('bash', ['-c', out === undefined ? command : `${command} > '${out}'`], {
    env: { ...process.env, ...ENV },
    timeout: 30_000,
    encoding: 'utf8',
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('hosted operations: backup, restore, moving a tenant, placement, router workers', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  const dirs = { a: '', b: '' };
  let nodes: Record<'a' | 'b', ServerProcess>;
  let router: ServerProcess;
  let other: ServerProcess;
  let placementFile: string;

  before(async () => {
    const root = sandbox.dir();
    dirs.a = path.join(root, 'a');
    dirs.b = path.join(root, 'b');
    placementFile = path.join(root, 'placement.txt');
    fs.writeFileSync(placementFile, '');
    const [a, b] = await Promise.all([
      sandbox.startServer(['--data-dir', dirs.a, '--tenant-rate', '5000', '--tenant-burst', '5000'], ENV),
      sandbox.startServer(['--data-dir', dirs.b, '--tenant-rate', '5000', '--tenant-burst', '5000'], ENV),
    ]);
    nodes = { a: a!, b: b! };
    const list = `a=${nodes.a.url},b=${nodes.b.url}`;
    [router, other] = await Promise.all([
      sandbox.startProgram(
        FENEC_ROUTER,
        ['--port', '0', '--nodes', list, '--workers', '2', '--placement', placementFile],
        ENV,
      ),
      sandbox.startProgram(
        FENEC_ROUTER,
        ['--port', '0', '--nodes', list, '--workers', '1', '--placement', placementFile],
        ENV,
      ),
    ]);
  });
  after(() => sandbox.cleanUp());

  it('backs a tenant up over HTTP while it serves, and restores it under another name with its indexes', async () => {
    expect((await request(router.url, { method: 'PUT', path: '/t/saved', headers: auth, body: '{}' })).status).to.equal(
      201,
    );
    expect(
      (await post(router.url, 'saved', 'create collection notes (text text @text, v vector<2> @hnsw(cosine))')).status,
    ).to.equal(200);
    const rows = [...Array(50).keys()].map((i) => ({
      text: i === 7 ? 'the deploy runs on fridays' : `note number ${i}`,
      v: [Math.cos(i), Math.sin(i)],
    }));
    expect((await post(router.url, 'saved', 'insert into notes $1', [rows])).status).to.equal(200);
    const file = path.join(sandbox.dir(), 'saved.fenec');
    const backup = fenec(['tenant', 'backup', 'saved', '--url', router.url], file);
    expect(backup.status, backup.stderr).to.equal(0);
    expect(fs.readFileSync(file).subarray(0, 16).toString('latin1')).to.equal('SQLite format 3\0');

    const restored = fenec(['tenant', 'restore', 'copy', file, '--url', router.url]);
    expect(restored.status, restored.stderr).to.equal(0);
    expect(JSON.parse(restored.stdout)).to.include({ restored: 'copy', created: true });
    const found = await post(router.url, 'copy', 'get notes select text match text "deploy" near v $1 fuse limit 1', [
      [Math.cos(7), Math.sin(7)],
    ]);
    expect(found.json.rows[0]).to.include({ id: 8, text: 'the deploy runs on fridays' });
    expect((await post(router.url, 'copy', 'get notes count')).json).to.deep.equal({ count: 50 });
  });

  it('refuses to restore over a live tenant unless asked, and refuses a file that is not a tenant', async () => {
    const dir = sandbox.dir();
    const file = path.join(dir, 'saved.fenec');
    expect(fenec(['tenant', 'backup', 'saved', '--url', router.url], file).status).to.equal(0);
    const refused = fenec(['tenant', 'restore', 'copy', file, '--url', router.url]);
    expect(refused.status).to.equal(1);
    expect(JSON.parse(refused.stderr).error.code).to.equal('tenant_exists');
    expect((await post(router.url, 'copy', 'insert into notes {text: "only in the copy"}')).status).to.equal(200);
    const replaced = fenec(['tenant', 'restore', 'copy', file, '--url', router.url, '--replace']);
    expect(replaced.status, replaced.stderr).to.equal(0);
    expect((await post(router.url, 'copy', 'get notes count')).json).to.deep.equal({ count: 50 });
    fs.writeFileSync(path.join(dir, 'junk.fenec'), 'not a database at all');
    const junk = fenec(['tenant', 'restore', 'junk', path.join(dir, 'junk.fenec'), '--url', router.url]);
    expect(JSON.parse(junk.stderr).error.code).to.equal('invalid_backup');
    expect(
      (
        await request(router.url, {
          path: '/t/junk/query',
          method: 'POST',
          headers: auth,
          body: '{"statement": "schema"}',
        })
      ).json.error.code,
    ).to.equal('unknown_tenant');
    const jwtOnly = await request(router.url, {
      path: '/t/saved/_backup',
      headers: { authorization: 'Bearer not-the-token' },
    });
    expect(jwtOnly.status).to.equal(401);
  });

  it('moves a tenant node to node while a client writes to it: every acknowledged write arrives, the other router follows', async () => {
    expect((await request(router.url, { method: 'PUT', path: '/t/mover', headers: auth, body: '{}' })).status).to.equal(
      201,
    );
    expect(
      (await post(router.url, 'mover', 'create collection log (n int required, text text @text)')).status,
    ).to.equal(200);
    const home = (
      JSON.parse(fenec(['tenant', 'list', '--url', router.url]).stdout).tenants as { name: string; node: 'a' | 'b' }[]
    ).find((t) => t.name === 'mover')!.node;
    const away = home === 'a' ? 'b' : 'a';

    const acknowledged: number[] = [];
    const waitedOn: number[] = [];
    let writing = true;
    let failure: unknown;
    /** Waits for the writer's progress, bounded, failing with the writer's own failure if it stopped. */
    const until = async (count: number): Promise<void> => {
      const deadline = Date.now() + 30_000;
      while (acknowledged.length < count) {
        if (failure !== undefined) throw failure;
        if (Date.now() > deadline)
          throw new Error(`the writer had ${acknowledged.length} writes acknowledged, not ${count}, after 30 s`);
        await sleep(10);
      }
    };
    const writer = (async () => {
      for (let n = 0; writing; n += 1) {
        for (;;) {
          const reply = await post(router.url, 'mover', 'insert into log {n: $1, text: "written during the move"}', [
            n,
          ]);
          if (reply.status === 200) {
            acknowledged.push(n);
            break;
          }
          expect(reply.status, reply.text).to.equal(429);
          expect(reply.json.error.code).to.equal('tenant_moving');
          waitedOn.push(Number(reply.headers['retry-after']));
          await sleep(50);
        }
      }
    })().catch((err: unknown) => {
      failure = err;
    });
    await until(30);
    const moved = fenec(['tenant', 'move', 'mover', '--to', away, '--url', router.url]);
    expect(moved.status, moved.stderr).to.equal(0);
    expect(JSON.parse(moved.stdout)).to.include({ moved: 'mover', from: home, to: away });
    const afterMove = acknowledged.length;
    await until(afterMove + 30);
    writing = false;
    await writer;
    if (failure !== undefined) throw failure;

    // The target holds every acknowledged write, once; the old node holds no data, only where it went.
    const onTarget = await post(nodes[away].url, 'mover', 'get log select n order n limit 100000');
    expect(onTarget.json.rows.map((row: { n: number }) => row.n)).to.deep.equal(acknowledged);
    const left = fs.readdirSync(dirs[home]).filter((file) => file.startsWith('mover'));
    expect(left).to.deep.equal(['mover.moved']);
    const old = await post(nodes[home].url, 'mover', 'get log count');
    expect(old.status).to.equal(429);
    expect(old.json.error.code).to.equal('tenant_moving');
    expect(waitedOn.every((seconds) => seconds >= 1)).to.equal(true);

    // The router that was not asked learns the move from the old node's tombstone, without a restart.
    const deadline = Date.now() + 5000;
    let through: Reply;
    do {
      through = await post(other.url, 'mover', 'get log count');
      if (through.status === 200) break;
      await sleep(100);
    } while (Date.now() < deadline);
    expect(through.json).to.deep.equal({ count: acknowledged.length });
  });

  it('refuses a move to the node that holds the tenant, or to a node that is not one', async () => {
    const home = (
      JSON.parse(fenec(['tenant', 'list', '--url', router.url]).stdout).tenants as { name: string; node: string }[]
    ).find((t) => t.name === 'saved')!.node;
    const same = fenec(['tenant', 'move', 'saved', '--to', home, '--url', router.url]);
    expect(JSON.parse(same.stderr).error.code).to.equal('bad_request');
    const nowhere = fenec(['tenant', 'move', 'saved', '--to', 'c', '--url', router.url]);
    expect(JSON.parse(nowhere.stderr).error.message).to.include('one of a, b');
    expect((await post(router.url, 'saved', 'get notes count')).json).to.deep.equal({ count: 50 });
  });

  it('re-reads the placement file when it changes', async () => {
    // The same tenant name on both nodes, told apart by what each holds.
    for (const node of ['a', 'b'] as const) {
      expect(
        (await request(nodes[node].url, { method: 'PUT', path: '/t/pinned', headers: auth, body: '{}' })).status,
      ).to.equal(201);
      expect((await post(nodes[node].url, 'pinned', `create collection on_${node} (x int)`)).status).to.equal(200);
    }
    const holder = async (base: string): Promise<string> =>
      (await post(base, 'pinned', 'schema')).json.collections[0].name;
    /** What 8 requests in a row found (fresh connections: through both workers of a two-worker router). */
    const holders = async (base: string): Promise<string[]> => [
      ...new Set(await Promise.all([...Array(8).keys()].map(() => holder(base)))),
    ];
    for (const node of ['a', 'b']) {
      fs.writeFileSync(placementFile, `# edited under a running router\npinned ${node}\n`);
      // Each router process reads the file each second: every one follows within a few.
      for (const base of [router.url, other.url]) {
        const deadline = Date.now() + 5000;
        while ((await holders(base)).join() !== `on_${node}` && Date.now() < deadline) await sleep(100);
        expect(await holders(base)).to.deep.equal([`on_${node}`]);
      }
    }
  });

  it('serves one port from two router workers and sums their metrics', async () => {
    const metric = async (): Promise<number> => {
      const text = (await request(router.url, { path: '/_metrics', headers: auth })).text;
      return [...text.matchAll(/^fenec_router_requests_total\{node="(?:a|b)",status="200"\} (\d+)$/gm)].reduce(
        (sum, m) => sum + Number(m[1]),
        0,
      );
    };
    const before = await metric();
    // Fresh connections: the kernel spreads them over the workers.
    for (let i = 0; i < 40; i += 1)
      expect((await post(router.url, 'saved', 'get notes where id = 1')).status).to.equal(200);
    expect(await metric()).to.equal(before + 40);
    const workers = fs.readFileSync(`/proc/${router.pid}/task/${router.pid}/children`, 'utf8').trim().split(/\s+/);
    expect(workers).to.have.length(2);
  });
});
