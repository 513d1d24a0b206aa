import * as path from 'node:path';
import { expect } from 'chai';
import { Sandbox, FENEC, FENEC_SERVER } from './processes.js';

const TOKEN = 'cli-token-51a2';

describe('the command line', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  describe('fenec query --file', () => {
    it('runs statements on a file and prints each answer as JSON', async () => {
      const file = path.join(sandbox.dir(), 'cli.fenec');
      const run = (...args: string[]) => sandbox.run(FENEC, ['query', '--file', file, ...args]);
      expect((await run('create collection notes (title text)')).code).to.equal(0);
      const inserted = await run('insert into notes {title: $1}', '--params', '["hello"]');
      expect(inserted.code, inserted.stderr).to.equal(0);
      expect(JSON.parse(inserted.stdout)).to.deep.equal({ count: 1, ids: [1] });
      const got = await run('get notes');
      expect(JSON.parse(got.stdout)).to.deep.equal({ rows: [{ id: 1, title: 'hello' }], count: 1 });
    });

    it('prints a refusal as the error JSON on stderr and exits 1', async () => {
      const file = path.join(sandbox.dir(), 'cli.fenec');
      const done = await sandbox.run(FENEC, ['query', '--file', file, 'get nothing']);
      expect(done.code).to.equal(1);
      expect(done.stdout).to.equal('');
      expect(JSON.parse(done.stderr).error.code).to.equal('unknown_collection');
    });

    it('refuses a write with --read-only', async () => {
      const file = path.join(sandbox.dir(), 'cli.fenec');
      expect(
        (await sandbox.run(FENEC, ['query', '--file', file, 'create collection notes (title text)'])).code,
      ).to.equal(0);
      const done = await sandbox.run(FENEC, ['query', '--file', file, '--read-only', 'insert into notes {title: "x"}']);
      expect(done.code).to.equal(1);
      expect(JSON.parse(done.stderr).error.code).to.equal('read_only');
    });
  });

  describe('fenec query --url', () => {
    it('runs a statement on a server, by its base URL or its /query URL, with the token from FENEC_TOKEN', async () => {
      const server = await sandbox.startServer([
        '--file',
        path.join(sandbox.dir(), 'served.fenec'),
        '--http-token',
        TOKEN,
      ]);
      const env = { FENEC_TOKEN: TOKEN };
      const created = await sandbox.run(
        FENEC,
        ['query', '--url', server.url, 'create collection notes (title text)'],
        env,
      );
      expect(created.code, created.stderr).to.equal(0);
      const inserted = await sandbox.run(
        FENEC,
        ['query', '--url', `${server.url}/query`, 'insert into notes {title: "a"}'],
        env,
      );
      expect(JSON.parse(inserted.stdout)).to.deep.equal({ count: 1, ids: [1] });
      const withFlag = await sandbox.run(FENEC, ['query', '--url', server.url, '--token', TOKEN, 'get notes count']);
      expect(JSON.parse(withFlag.stdout)).to.deep.equal({ count: 1 });
    });

    it("prints the server's refusal on stderr and exits 1", async () => {
      const server = await sandbox.startServer([
        '--file',
        path.join(sandbox.dir(), 'served.fenec'),
        '--http-token',
        TOKEN,
      ]);
      const done = await sandbox.run(FENEC, ['query', '--url', server.url, 'schema']);
      expect(done.code).to.equal(1);
      expect(JSON.parse(done.stderr).error.code).to.equal('unauthorized');
    });

    it('says when no server answers (unavailable)', async () => {
      const done = await sandbox.run(FENEC, ['query', '--url', 'http://127.0.0.1:1', 'schema']);
      expect(done.code).to.equal(1);
      expect(JSON.parse(done.stderr).error.code).to.equal('unavailable');
    });
  });

  describe('usage errors', () => {
    const cases: Array<[string, string, string[]]> = [
      ['fenec', 'an unknown flag', ['query', '--file', 'x.fenec', '--bogus', 'schema']],
      ['fenec', 'both --file and --url', ['query', '--file', 'x.fenec', '--url', 'http://127.0.0.1:8080', 'schema']],
      ['fenec', 'neither --file nor --url', ['query', 'schema']],
      ['fenec', '--params that are not a JSON array', ['query', '--file', 'x.fenec', '--params', '{"a":1}', 'schema']],
      ['fenec-server', 'an unknown flag', ['--file', 'x.fenec', '--bogus']],
      ['fenec-server', 'no --file', []],
      ['fenec-server', 'a port that is not one', ['--file', 'x.fenec', '--port', 'eighty']],
      ['fenec-server', 'a size that is not one', ['--file', 'x.fenec', '--max-body', '12 parsecs']],
      [
        'fenec-server',
        'a CORS origin with a path',
        ['--file', 'x.fenec', '--http-cors', 'https://app.example.com/page'],
      ],
    ];
    for (const [program, what, args] of cases) {
      it(`${program} exits 2 with one line on stderr for ${what}`, async () => {
        const done = await sandbox.run(program === 'fenec' ? FENEC : FENEC_SERVER, args);
        expect(done.code, done.stderr).to.equal(2);
        expect(done.stderr.trim().split('\n'), done.stderr).to.have.length(1);
        expect(done.stderr).to.match(new RegExp(`^${program}: `));
      });
    }

    it('fenec without a subcommand prints its help on stderr and exits 2', async () => {
      const done = await sandbox.run(FENEC, []);
      expect(done.code).to.equal(2);
      expect(done.stderr).to.include('query');
    });

    it('fenec-server --help describes every flag and exits 0', async () => {
      const done = await sandbox.run(FENEC_SERVER, ['--help']);
      expect(done.code).to.equal(0);
      for (const flag of [
        '--file',
        '--host',
        '--port',
        '--http-token',
        '--http-read-only',
        '--read-only',
        '--max-body',
        '--http-cors',
      ]) {
        expect(done.stdout).to.include(flag);
      }
    });
  });
});
