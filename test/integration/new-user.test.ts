/**
 * What a new user tripped over on a clean clone (issue 27, item 9), each tried as they tried it: real
 * fenec-server and fenec processes, over real HTTP.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FENEC, FENEC_SERVER, query, request, Sandbox } from './processes.js';

const RUN_STACK = fileURLToPath(new URL('../../../scripts/run-stack.sh', import.meta.url));

const SECRET = 'a-jwt-secret-of-at-least-32-bytes-0123456789';
const TOKEN = 'new-user-token-4f1c';

/** The server's `listening` line, as JSON. */
function listening(stderr: string): Record<string, unknown> {
  const line = stderr.split('\n').find((l) => l.startsWith('{') && l.includes('"msg":"listening"'));
  expect(line, stderr).to.not.equal(undefined);
  return JSON.parse(line!) as Record<string, unknown>;
}

describe('what a new user tripped over', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  describe("fenec-server's start line", () => {
    it('names the auth that FENEC_TOKEN and FENEC_JWT_SECRET, exported for the CLIs, turned on', async () => {
      const dir = sandbox.dir();
      const server = await sandbox.startServer(['--file', path.join(dir, 'a.fenec')], {
        FENEC_TOKEN: TOKEN,
        FENEC_JWT_SECRET: SECRET,
      });
      const line = listening(server.stderr());
      expect(line).to.deep.include({
        auth: 'token + JWT HS256',
        authFrom: { token: '$FENEC_TOKEN', 'JWT HS256': '$FENEC_JWT_SECRET' },
        withoutToken: '401, but for /_health and the console page',
      });
      // What the line says is what a token-less request gets.
      expect((await query(server.url, 'schema')).status).to.equal(401);
      await sandbox.kill(server.child);
    });

    it('says a flag is where a setting came from when it was one', async () => {
      const dir = sandbox.dir();
      const server = await sandbox.startServer(
        ['--file', path.join(dir, 'b.fenec'), '--http-token', TOKEN, '--jwt-secret', SECRET],
        { FENEC_TOKEN: 'other', FENEC_JWT_SECRET: `other-${SECRET}` },
      );
      expect(listening(server.stderr()).authFrom).to.deep.equal({ token: '--http-token', 'JWT HS256': '--jwt-secret' });
      expect((await query(server.url, 'schema', [], TOKEN)).status).to.equal(200);
      await sandbox.kill(server.child);
    });

    it('says a token-less request is answered from this machine when no auth is on', async () => {
      const dir = sandbox.dir();
      const server = await sandbox.startServer(['--file', path.join(dir, 'c.fenec')]);
      const line = listening(server.stderr());
      expect(line).to.include({ auth: 'local Host only' });
      expect(line).to.not.have.property('authFrom');
      expect((await query(server.url, 'schema')).status).to.equal(200);
      await sandbox.kill(server.child);
    });

    it('names the console URL, which serves the console, on a file server and a tenant node', async () => {
      const dir = sandbox.dir();
      for (const args of [
        ['--file', path.join(dir, 'd.fenec')],
        ['--data-dir', dir],
      ]) {
        const server = await sandbox.startServer(args);
        const url = listening(server.stderr()).console;
        expect(url).to.equal(`${server.url}/_console/`);
        const page = await request(server.url, { path: new URL(url as string).pathname });
        expect(page.status).to.equal(200);
        expect(page.text).to.include('<html');
        await sandbox.kill(server.child);
      }
    });
  });

  describe('fenec-server without one of --file and --data-dir', () => {
    it('says neither was given when neither was', async () => {
      const done = await sandbox.run(FENEC_SERVER, []);
      expect(done.code, done.stderr).to.equal(2);
      expect(done.stderr).to.not.include('not both');
      expect(done.stderr).to.include('give --file F to serve one file');
    });

    it('says both were given when both were', async () => {
      const dir = sandbox.dir();
      const done = await sandbox.run(FENEC_SERVER, ['--file', path.join(dir, 'e.fenec'), '--data-dir', dir]);
      expect(done.code, done.stderr).to.equal(2);
      expect(done.stderr).to.include('--file and --data-dir were both given');
    });
  });

  describe('fenec import into a collection that does not exist', () => {
    it("offers the create collection that fits the file's first rows, and that statement takes them", async () => {
      const dir = sandbox.dir();
      const server = await sandbox.startServer(['--file', path.join(dir, 'f.fenec'), '--http-token', TOKEN]);
      const rows = [
        { text: 'buy milk', year: 2024, score: 1, done: false, tags: ['home'], vec: [0.1, 0.2, 0.3], at: null },
        { text: 'call ann', year: 2025, score: 0.5, done: true, tags: [], vec: [1, 0, 0], meta: { a: 1 } },
        { text: 'fix it', year: null, score: 2, tags: ['work'], vec: [0, 1, 0], at: '2026-11-29T18:00:00Z' },
      ];
      const file = path.join(dir, 'notes.ndjson');
      fs.writeFileSync(file, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
      const run = () =>
        sandbox.run(FENEC, ['import', '--url', server.url, '--no-wait', 'notes', file], { FENEC_TOKEN: TOKEN });
      const refused = await run();
      expect(refused.code, refused.stderr).to.equal(1);
      const { error } = JSON.parse(refused.stderr.trim().split('\n').at(-1)!) as { error: Record<string, string> };
      expect(error.code).to.equal('unknown_collection');
      const statement =
        'create collection notes (text text, year int, score float, done bool, tags [text], vec vector<3>, at timestamp, meta json)';
      expect(error.hint).to.include(`fenec query --url ${server.url} '${statement}'`);
      expect(error.hint).to.not.include('schema lists');

      expect((await query(server.url, statement, [], TOKEN)).status).to.equal(200);
      const loaded = await run();
      expect(loaded.code, loaded.stderr).to.equal(0);
      expect(JSON.parse(loaded.stdout)).to.include({ collection: 'notes', rows: 3 });
      await sandbox.kill(server.child);
    });
  });

  describe('a fuse row that holds the searched word', () => {
    it('has its snippet over /query, though the text ranking took it past its depth', async () => {
      const dir = sandbox.dir();
      const server = await sandbox.startServer(['--file', path.join(dir, 'g.fenec'), '--http-token', TOKEN]);
      const q = (statement: string, params: unknown[] = []) => query(server.url, statement, params, TOKEN);
      expect((await q('create collection d (t text @text, v vector<2> @hnsw(cosine))')).status).to.equal(200);
      // 60 short texts with the word, far from the vector searched; 60 near it without the word; and one row with
      // both, whose long text ranks it last by words (past the text ranking's depth of 50) and first by vector.
      const rows = [
        ...Array.from({ length: 60 }, () => ({ t: 'the fox', v: [-1, 0.01] })),
        ...Array.from({ length: 60 }, () => ({ t: 'a dog', v: [1, 0.01] })),
        { t: `the fox ${'and then some more words '.repeat(20)}`, v: [1, 0] },
      ];
      expect((await q('insert into d $1', [rows])).status).to.equal(200);
      const answer = await q('get d match t "fox" near v [1, 0] fuse limit 5');
      expect(answer.status, answer.text).to.equal(200);
      const found = (answer.json.rows as { id: number; snippet: string | null }[]).find((r) => r.id === 121);
      expect(found, answer.text).to.not.equal(undefined);
      expect(found!.snippet).to.be.a('string').that.includes('**fox**');
      // A row found by its vector alone holds no word to show.
      const others = (answer.json.rows as { id: number; snippet: string | null }[]).filter(
        (r) => r.id > 60 && r.id < 121,
      );
      expect(others.map((r) => r.snippet)).to.satisfy((s: unknown[]) => s.every((x) => x === null));
      await sandbox.kill(server.child);
    });
  });

  describe("make run's banner", () => {
    it('names the console, which the router serves', async function () {
      this.timeout(150_000);
      const data = sandbox.dir();
      // Three ports in a row (the router's and the two nodes'), under the kernel's ephemeral range (Linux: from
      // 32768), which the other test files' servers on port 0 are handed at the same time.
      const port = 20_000 + Math.floor(Math.random() * 4_000) * 3;
      const { FENEC_TOKEN: _token, FENEC_JWT_SECRET: _secret, ...env } = process.env;
      const stack = spawn('bash', [RUN_STACK], {
        env: { ...env, PORT: String(port), FENEC_STACK_DATA: data },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      stack.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      stack.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`the stack did not start in time:\n${out}`)), 120_000);
          stack.stdout.on('data', () => {
            if (!out.includes('Ctrl-C stops all three.')) return;
            clearTimeout(timer);
            resolve();
          });
          stack.once('exit', () => {
            clearTimeout(timer);
            reject(new Error(`the stack exited:\n${out}`));
          });
        });
        const router = `http://127.0.0.1:${port}`;
        expect(out).to.include(`console: ${router}/_console/`);
        const page = await request(router, { path: '/_console/' });
        expect(page.status).to.equal(200);
      } finally {
        // The script's trap stops the router and both nodes; its process group is killed if it does not.
        // (A stack that already exited has its reason in the error above: there is nothing to wait for.)
        if (stack.exitCode === null && stack.signalCode === null) {
          const exited = once(stack, 'exit');
          process.kill(-stack.pid!, 'SIGTERM');
          const timer = setTimeout(() => {
            try {
              process.kill(-stack.pid!, 'SIGKILL');
            } catch {
              // The group ended between the two signals.
            }
          }, 10_000);
          await exited;
          clearTimeout(timer);
        }
      }
    });
  });
});
