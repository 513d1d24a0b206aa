/**
 * The integration tests' clients: real `fenec-server` and `fenec` processes, started on free ports,
 * each ended by its pid when the test is done, and a plain HTTP client that sends exactly the
 * headers it is given (fetch would set Host and Origin itself).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const FENEC_SERVER = path.join(ROOT, 'dist/node/cli/fenec-server.js');
export const FENEC = path.join(ROOT, 'dist/node/cli/fenec.js');
export const FENEC_ROUTER = path.join(ROOT, 'dist/router/cli.js');
/** Where node is, and the system's own programs: a PATH with nothing of ours on it. */
export const SYSTEM_PATH = [...new Set([path.dirname(process.execPath), '/usr/bin', '/bin'])].join(':');

/**
 * How long a program may take to start or to run one command. A server starts a worker thread that
 * loads the storage modules again; four started at once on a loaded 2-core machine took 13 s.
 */
const START_TIMEOUT_MS = 30_000;

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly url: string;
  /** Everything the server wrote on stderr so far. */
  stderr(): string;
}

export interface Finished {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Every child of every sandbox still running: killed by pid if the test run itself is stopped. */
const LIVE = new Set<ChildProcess>();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // `make reliability` stops a run past its time bound with SIGTERM; a run stopped so leaves no server behind.
  process.once(signal, () => {
    for (const child of LIVE) child.kill('SIGKILL');
    process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
  });
}

/** The processes and temporary folders of one suite, all removed by `cleanUp()`. */
export class Sandbox {
  readonly #children = new Set<ChildProcess>();
  readonly #dirs: string[] = [];

  /** A fresh folder under the system's temporary folder. */
  dir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-it-'));
    this.#dirs.push(dir);
    return dir;
  }

  /** Starts `fenec-server --port 0 ARGS` and resolves with its URL once it logs that it listens. */
  startServer(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
    return this.startProgram(FENEC_SERVER, ['--port', '0', ...args], env);
  }

  /**
   * Starts a program that logs a `listening` line with its URL (fenec-server, fenec-router), and resolves with that
   * URL.
   */
  async startProgram(script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
    const program = path.basename(script);
    const child = this.#spawn(script, args, env);
    let stderr = '';
    const listening = new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${program} did not start in time:\n${stderr}`)),
        START_TIMEOUT_MS,
      );
      child.stderr!.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        for (const line of stderr.split('\n')) {
          const url = listeningUrl(line);
          if (url !== undefined) {
            clearTimeout(timer);
            resolve(url);
          }
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${program} exited (${code ?? signal}) before listening:\n${stderr}`));
      });
    });
    const url = await listening;
    return { child, pid: child.pid!, url, stderr: () => stderr };
  }

  /**
   * Runs a program to its end (killed past the timeout, default START_TIMEOUT_MS) and gives its
   * status and output; `stdin`, when given, is written to its standard input.
   */
  async run(
    script: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv = {},
    options: { timeoutMs?: number; stdin?: string | Buffer } = {},
  ): Promise<Finished> {
    const child = this.#spawn(script, args, env, options.stdin !== undefined);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (options.stdin !== undefined) child.stdin!.end(options.stdin);
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? START_TIMEOUT_MS);
    const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
    clearTimeout(timer);
    return { code, signal, stdout, stderr };
  }

  /** Kills a child with SIGKILL and waits until it is reaped (its pid is gone). */
  async kill(child: ChildProcess): Promise<void> {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    this.#children.delete(child);
  }

  async cleanUp(): Promise<void> {
    await Promise.all([...this.#children].map((child) => this.kill(child)));
    for (const dir of this.#dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  }

  #spawn(script: string, args: readonly string[], env: NodeJS.ProcessEnv, stdin = false): ChildProcess {
    const { FENEC_TOKEN: _inherited, ...parentEnv } = process.env;
    const child = spawn(process.execPath, [...programNodeArgs(script), script, ...args], {
      env: { ...parentEnv, ...env },
      stdio: [stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    this.#children.add(child);
    LIVE.add(child);
    child.once('exit', () => {
      this.#children.delete(child);
      LIVE.delete(child);
    });
    return child;
  }
}

export interface CommandOptions {
  /** The whole environment of the command (nothing is inherited). */
  readonly env: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Killed (SIGKILL) past it. Default 60 s. */
  readonly timeoutMs?: number;
}

/**
 * The fields of a thread's /proc/PID/task/TID/stat after its parenthesised name (Linux): [0] is field 3
 * (its state), so field N is [N - 3] — nice [16], utime [11], stime [12] (clock ticks).
 */
export function threadStat(pid: number, tid: number): string[] {
  return statFields(`/proc/${pid}/task/${tid}/stat`);
}

/** The fields of a process's /proc stat, every thread counted, from its state on (so utime is [11]). */
export function processStat(pid: number): string[] {
  return statFields(`/proc/${pid}/stat`);
}

function statFields(file: string): string[] {
  const stat = fs.readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * The options a program's `#!/usr/bin/env -S node …` line gives Node.js (fenec-server's --expose-gc): the tests
 * and benches start a program as its command on PATH would run.
 */
export function programNodeArgs(script: string): string[] {
  const first = fs.readFileSync(script, 'utf8').split('\n', 1)[0]!;
  const shebang = /^#!\/usr\/bin\/env -S node((?: --[\w-]+(?:=\S+)?)*)$/.exec(first);
  return shebang === null ? [] : shebang[1]!.trim().split(' ').filter(Boolean);
}

/** Runs any command (found on `env.PATH`) to its end, and gives its status and output. */
export async function runCommand(command: string, args: readonly string[], options: CommandOptions): Promise<Finished> {
  const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  try {
    const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
    return { code, signal, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

/** scripts/link-bins.sh (`make install`'s last step), with nothing of this process's environment but what is given. */
export function linkBins(env: Record<string, string>): Promise<Finished> {
  return runCommand('bash', [path.join(ROOT, 'scripts/link-bins.sh')], {
    env: { PATH: SYSTEM_PATH, ...env },
    timeoutMs: 20_000,
  });
}

function listeningUrl(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const entry = JSON.parse(line) as { msg?: string; url?: string };
    return entry.msg === 'listening' ? entry.url : undefined;
  } catch {
    return undefined;
  }
}

export interface Reply {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
  /** The body as JSON (undefined when it is not). */
  readonly json: any;
}

export interface RequestOptions {
  readonly method?: string;
  readonly path?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Buffer;
  /** Send the body in chunked encoding, without Content-Length. */
  readonly chunked?: boolean;
  /** Give up (reject) when the whole answer is not in by then; without it the wait is the test's own timeout. */
  readonly timeoutMs?: number;
}

/** One HTTP request on a fresh connection, with exactly the headers given (plus Host, unless given). */
export function request(base: string, options: RequestOptions = {}): Promise<Reply> {
  const url = new URL(options.path ?? '/', base);
  const headers: Record<string, string | number> = { ...options.headers };
  if (options.body !== undefined && !options.chunked) headers['content-length'] = Buffer.byteLength(options.body);
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: options.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
      res.on('error', reject);
    });
    // A server that refuses a body early may close before all of it is sent; its answer still counts.
    req.on('error', reject);
    if (options.timeoutMs !== undefined) {
      const timer = setTimeout(
        () => req.destroy(new Error(`no answer from ${url.pathname} within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      req.once('response', (res) => res.once('close', () => clearTimeout(timer)));
      req.once('error', () => clearTimeout(timer));
    }
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** POST /t/TENANT/query (a tenant node's or a router's) with `token`; `timeoutMs`: no answer by then is an error. */
export function tenantQuery(
  base: string,
  token: string,
  tenant: string,
  statement: string,
  params: readonly unknown[] = [],
  timeoutMs?: number,
): Promise<Reply> {
  return request(base, {
    method: 'POST',
    path: `/t/${tenant}/query`,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ statement, params }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** POST /query with a statement, its params, and optionally a token. */
export function query(
  base: string,
  statement: string,
  params: readonly unknown[] = [],
  token?: string,
): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return request(base, { method: 'POST', path: '/query', headers, body: JSON.stringify({ statement, params }) });
}
