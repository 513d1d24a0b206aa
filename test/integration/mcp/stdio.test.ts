/**
 * `fenec mcp` as an agent's host starts it: a message a line on stdin, an answer a line on stdout,
 * logs on stderr; the file's lock held for the session (with patience for a holder that is exiting,
 * as the v2 client's probe process is); --read-only beside a server; --url as a bridge that decides
 * nothing, and says what the server would not.
 */
import { expect } from 'chai';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { FenecDatabase } from '../../../node/database.js';
import { FENEC, query, Sandbox, type ServerProcess } from '../processes.js';

const TOKEN = 'stdio-test-token';

/** `fenec mcp ARGS` with its stdin open: send lines, read the answers in order. */
class StdioSession {
  readonly child: ChildProcessWithoutNullStreams;
  readonly #answers: string[] = [];
  readonly #waiting: ((line: string) => void)[] = [];
  stderr = '';

  constructor(args: readonly string[], env: NodeJS.ProcessEnv = {}) {
    const { FENEC_TOKEN: _inherited, ...parent } = process.env;
    this.child = spawn(process.execPath, [FENEC, 'mcp', ...args], { env: { ...parent, ...env } });
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const waiter = this.#waiting.shift();
      if (waiter === undefined) this.#answers.push(line);
      else waiter(line);
    });
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
  }

  send(message: unknown): void {
    this.child.stdin.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  }

  next(): Promise<any> {
    const line = this.#answers.shift();
    if (line !== undefined) return Promise.resolve(JSON.parse(line));
    return new Promise((resolve) => this.#waiting.push((l) => resolve(JSON.parse(l))));
  }

  async ask(method: string, params: Record<string, unknown> = {}, id = 1): Promise<any> {
    this.send({ jsonrpc: '2.0', id, method, params });
    return this.next();
  }

  /** Closes stdin and waits for the exit. */
  async end(): Promise<number | null> {
    const exited = once(this.child, 'exit');
    this.child.stdin.end();
    const [code] = (await exited) as [number | null];
    return code;
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

describe('fenec mcp', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  const sessions: StdioSession[] = [];
  const session = (args: readonly string[], env?: NodeJS.ProcessEnv) => {
    const s = new StdioSession(args, env);
    sessions.push(s);
    return s;
  };
  let dir: string;

  before(() => {
    dir = sandbox.dir();
  });
  afterEach(() => sessions.splice(0).forEach((s) => s.kill()));
  after(() => sandbox.cleanUp());

  describe('--file', () => {
    it('answers a message a line, only answers on stdout, logs on stderr, and ends with stdin, lock released', async () => {
      const file = path.join(dir, 'lines.fenec');
      const s = session(['--file', file, '--write']);
      const init = await s.ask('initialize', { protocolVersion: '2025-11-25', capabilities: {} }, 0);
      expect(init.result.protocolVersion).to.equal('2025-11-25');
      s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      s.send('not json');
      expect((await s.next()).error.code).to.equal(-32700);
      const listed = await s.ask('tools/list', {}, 2);
      expect(listed.result.tools.map((t: { name: string }) => t.name)).to.deep.equal([
        'query',
        'search',
        'schema',
        'write',
      ]);
      expect(fs.existsSync(`${file}.lock`)).to.equal(true);
      expect(await s.end()).to.equal(0);
      expect(fs.existsSync(`${file}.lock`)).to.equal(false);
      expect(s.stderr).to.contain('serving MCP on stdio');
    });

    it('refuses to start while a server holds the file, naming its pid (exit 1)', async () => {
      const file = path.join(dir, 'held.fenec');
      const server = await sandbox.startServer(['--file', file]);
      const s = session(['--file', file]);
      const [code] = (await once(s.child, 'exit')) as [number];
      expect(code).to.equal(1);
      expect(s.stderr).to.contain('lock_held').and.contain(`pid ${server.pid}`);
      await sandbox.kill(server.child);
    });

    it('holds the file while it serves: a server started on it is refused', async () => {
      const file = path.join(dir, 'mine.fenec');
      const s = session(['--file', file]);
      await s.ask('ping');
      const refused = await sandbox.run(path.join(FENEC, '../fenec-server.js'), ['--file', file, '--port', '0']);
      expect(refused.code).to.equal(1);
      expect(refused.stderr).to.contain('lock_held');
      await s.end();
    });

    it("waits for a lock whose holder is exiting, as the v2 client's probe process is", async () => {
      const file = path.join(dir, 'probe.fenec');
      const probe = session(['--file', file]);
      expect((await probe.ask('ping')).result).to.deep.equal({});
      const real = session(['--file', file, '--memory', 'memories']);
      // The probe is ended only once the real process has found the lock held.
      for (let waited = 0; !real.stderr.includes('waiting for the lock') && waited < 10_000; waited += 20) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await probe.end();
      const answer = await real.ask('tools/call', { name: 'remember', arguments: { text: 'after the probe' } });
      expect(answer.result.structuredContent).to.deep.equal({ count: 1, ids: [1] });
      await real.end();
    });

    it('--read-only takes no lock, beside a server, and reads the file as it stood when the session began', async () => {
      const file = path.join(dir, 'shared.fenec');
      const server = await sandbox.startServer(['--file', file, '--http-token', TOKEN]);
      await query(server.url, 'create collection notes (title text)', [], TOKEN);
      await query(server.url, 'insert into notes {title: "before"}', [], TOKEN);
      const s = session(['--file', file, '--read-only', '--memory', 'memories']);
      const listed = await s.ask('tools/list');
      expect(listed.result.tools.map((t: { name: string }) => t.name)).to.deep.equal([
        'query',
        'search',
        'schema',
        'recall',
      ]);
      await query(server.url, 'insert into notes {title: "after"}', [], TOKEN);
      const read = await s.ask('tools/call', { name: 'query', arguments: { statement: 'get notes select title' } }, 2);
      expect(read.result.structuredContent.rows.map((r: { title: string }) => r.title)).to.deep.equal(['before']);
      await s.end();
      await sandbox.kill(server.child);
    });

    it('writes each change to the disk before answering it', async () => {
      const file = path.join(dir, 'durable.fenec');
      const created = FenecDatabase.open({ file, readOnly: false, program: 'test' });
      created.execute('create collection notes (title text)');
      created.close();
      const s = session(['--file', file, '--write']);
      const answer = await s.ask('tools/call', {
        name: 'write',
        arguments: { collection: 'notes', insert: { title: 'kept' } },
      });
      expect(answer.result.structuredContent).to.deep.equal({ count: 1, ids: [1] });
      s.kill();
      await once(s.child, 'exit');
      const reopened = FenecDatabase.open({ file, readOnly: true, program: 'test' });
      expect(reopened.execute('get notes')).to.deep.equal({ rows: [{ id: 1, title: 'kept' }], count: 1 });
      reopened.close();
    });
  });

  describe('--url', () => {
    let server: ServerProcess;
    before(async () => {
      server = await sandbox.startServer([
        '--file',
        path.join(dir, 'bridged.fenec'),
        '--http-token',
        TOKEN,
        '--mcp-memory',
        'memories',
      ]);
    });

    it('passes messages to the server and its answers back, headers made from the message', async () => {
      const s = session(['--url', `${server.url}/_mcp`], { FENEC_TOKEN: TOKEN });
      const meta = {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      const answer = await s.ask('tools/call', { name: 'remember', arguments: { text: 'bridged' }, _meta: meta });
      expect(answer.result).to.deep.include({ resultType: 'complete', isError: false });
      const unknown = await s.ask('no/such', { _meta: meta }, 2);
      expect(unknown.error.code).to.equal(-32601);
      await s.end();
    });

    it('takes a base URL and adds /_mcp', async () => {
      const s = session(['--url', server.url], { FENEC_TOKEN: TOKEN });
      expect((await s.ask('ping')).result).to.deep.equal({});
      await s.end();
    });

    it('answers a refused token with a JSON-RPC error carrying the status (-32000, 401)', async () => {
      const s = session(['--url', `${server.url}/_mcp`], { FENEC_TOKEN: 'wrong' });
      const answer = await s.ask('tools/list', {}, 7);
      expect(answer.id).to.equal(7);
      expect(answer.error.code).to.equal(-32000);
      expect(answer.error.data.status).to.equal(401);
      await s.end();
    });

    it('answers for a server that does not answer (-32000)', async () => {
      const s = session(['--url', 'http://127.0.0.1:9/_mcp'], { FENEC_TOKEN: TOKEN });
      const answer = await s.ask('tools/list');
      expect(answer.error.code).to.equal(-32000);
      expect(answer.error.message).to.contain('cannot reach');
      await s.end();
    });
  });

  describe('usage', () => {
    for (const [args, says] of [
      [[], 'one of --file'],
      [['--file', 'a.fenec', '--url', 'http://127.0.0.1:1/_mcp'], 'one of --file'],
      [['--url', 'https://db.example.com/_mcp'], 'plain HTTP only'],
      [['--url', 'http://127.0.0.1:1/_mcp', '--memory', 'm'], '--memory is for --file'],
      [['--file', 'a.fenec', '--write', '--read-only'], 'contradict'],
      [['--file', 'a.fenec', '--memory', 'not a name'], '--memory takes'],
    ] as [string[], string][]) {
      it(`refuses ${JSON.stringify(args.join(' '))} with one line and status 2`, async () => {
        const finished = await sandbox.run(FENEC, ['mcp', ...args]);
        expect(finished.code).to.equal(2);
        expect(finished.stderr).to.contain(says);
        expect(finished.stdout).to.equal('');
      });
    }
  });
});
