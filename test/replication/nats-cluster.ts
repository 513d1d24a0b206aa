/**
 * A JetStream cluster of nats-servers on 127.0.0.1 for the replication tests (Debian's nats-server, installed by
 * scripts/install-test-tools.sh): each on free ports, its store in a folder of its own, ended by its pid.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { pause } from '../helpers/pause.js';

export const NATS_SERVER = '/usr/sbin/nats-server';

/** A port the kernel had free a moment ago. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

interface Member {
  readonly name: string;
  readonly port: number;
  readonly clusterPort: number;
  readonly dir: string;
  child: ChildProcess | undefined;
  log: string;
}

export class NatsCluster {
  readonly #members: Member[];
  readonly #root: string;

  private constructor(members: Member[], root: string) {
    this.#members = members;
    this.#root = root;
  }

  /**
   * Starts `size` servers as one cluster and resolves once each is ready. A port taken by another program between
   * its choice and the server's listen is tried again with new ports (three times).
   */
  static async start(size = 3): Promise<NatsCluster> {
    for (let attempt = 1; ; attempt++) {
      const cluster = await NatsCluster.#startOnce(size);
      try {
        await cluster.#ready();
        return cluster;
      } catch (err) {
        await cluster.stop();
        if (attempt === 3 || !/address already in use/.test(String(err))) throw err;
      }
    }
  }

  static async #startOnce(size: number): Promise<NatsCluster> {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-nats-'));
    const members: Member[] = [];
    for (let i = 0; i < size; i++) {
      members.push({
        name: `n${i}`,
        port: await freePort(),
        clusterPort: await freePort(),
        dir: path.join(root, `n${i}`),
        child: undefined,
        log: '',
      });
    }
    const cluster = new NatsCluster(members, root);
    for (let i = 0; i < size; i++) cluster.#spawn(i);
    return cluster;
  }

  async #ready(): Promise<void> {
    await Promise.all(this.#members.map((member) => this.#listening(member)));
  }

  /** The client URLs, comma-separated as `--nats` takes them. */
  get urls(): string {
    return this.#members.map((m) => `nats://127.0.0.1:${m.port}`).join(',');
  }

  /** Every process still running, for a nemesis. */
  pids(): number[] {
    return this.#members.flatMap((m) => (m.child?.pid === undefined || m.child.exitCode !== null ? [] : [m.child.pid]));
  }

  /**
   * Pauses every server (SIGSTOP), resolving once each has stopped (test/helpers/pause.ts): from then on the cluster
   * answers nothing, until `resume`.
   */
  pause(): Promise<void> {
    return pause(this.pids());
  }

  /** Lets every server go on (SIGCONT). */
  resume(): void {
    for (const pid of this.pids()) process.kill(pid, 'SIGCONT');
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.#members.map(async (member) => {
        const child = member.child;
        if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, 'exit');
        child.kill('SIGKILL');
        child.kill('SIGCONT');
        await exited;
      }),
    );
    fs.rmSync(this.#root, { recursive: true, force: true });
  }

  #spawn(index: number): void {
    const member = this.#members[index]!;
    const routes = this.#members
      .filter((m) => m !== member)
      .map((m) => `nats-route://127.0.0.1:${m.clusterPort}`)
      .join(',');
    fs.mkdirSync(member.dir, { recursive: true });
    const child = spawn(
      NATS_SERVER,
      [
        '-a',
        '127.0.0.1',
        '-p',
        String(member.port),
        '-n',
        member.name,
        '-js',
        '-sd',
        member.dir,
        '--cluster_name',
        'fenec-test',
        '--cluster',
        `nats://127.0.0.1:${member.clusterPort}`,
        '--routes',
        routes,
        // Clients keep to the URLs they were given (a node behind a partition proxy does not go around it).
        '--no_advertise',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    member.child = child;
    const take = (chunk: Buffer): void => {
      member.log += chunk.toString();
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    STARTED.add(child);
    child.once('exit', () => STARTED.delete(child));
  }

  async #listening(member: Member): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (!/Server is ready/.test(member.log)) {
      if (Date.now() > deadline) throw new Error(`nats-server ${member.name} did not start:\n${member.log}`);
      if (member.child?.exitCode !== null) throw new Error(`nats-server ${member.name} exited:\n${member.log}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** Every nats-server a test started, killed by pid if the test run is stopped. */
const STARTED = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of STARTED) child.kill('SIGKILL');
});
