import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TOKEN = 'move-test-token';

const tq = (node: ServerProcess, statement: string): Promise<Reply> =>
  request(node.url, { method: 'POST', path: '/t/acme/query', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ statement }) });

describe('deploy/move-tenant.sh', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it('moves a tenant with its rows, quotas and policy, pins it, and deletes the source', async () => {
    const root = sandbox.dir();
    const [fromDir, toDir] = [path.join(root, 'a'), path.join(root, 'b')];
    const [from, to] = await Promise.all([sandbox.startServer(['--data-dir', fromDir], { FENEC_TOKEN: TOKEN }), sandbox.startServer(['--data-dir', toDir], { FENEC_TOKEN: TOKEN })]);
    await request(from.url, { method: 'PUT', path: '/t/acme', headers: { authorization: `Bearer ${TOKEN}` }, body: '{"rate": 77}' });
    expect((await tq(from, 'create collection notes (title text @text)')).status).to.equal(200);
    for (let i = 0; i < 25; i++) expect((await tq(from, `insert into notes {title: "note ${i}"}`)).status).to.equal(200);
    fs.writeFileSync(path.join(fromDir, 'acme.policy'), 'notes read\n');
    const placement = path.join(root, 'placement.txt');
    fs.writeFileSync(placement, '# pins\n');

    const moved = spawnSync('bash', [path.join(ROOT, 'deploy/move-tenant.sh'), 'acme', 'b', '--delete-source'], {
      env: { PATH: process.env.PATH, FENEC_TOKEN: TOKEN, FROM_URL: from.url, TO_URL: to.url, FROM_DIR: fromDir, TO_DIR: toDir, PLACEMENT: placement },
      encoding: 'utf8',
    });
    expect(moved.status, moved.stderr).to.equal(0);

    expect((await tq(to, 'get notes count')).json.count).to.equal(25);
    expect(JSON.stringify((await tq(to, 'get notes match title "note 7"')).json)).to.include('note 7');
    const listed = await request(to.url, { path: '/_tenants', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(listed.json.tenants).to.deep.equal([{ name: 'acme', quotas: { rate: 77, burst: 200, maxBytes: 1024 ** 3, maxCollections: 100, maxRows: 1_000_000 } }]);
    expect(fs.readFileSync(path.join(toDir, 'acme.policy'), 'utf8')).to.equal('notes read\n');
    expect(fs.readFileSync(placement, 'utf8')).to.equal('# pins\nacme b\n');
    expect((await tq(from, 'get notes count')).status).to.equal(404);
  });
});
