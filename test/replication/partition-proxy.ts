/**
 * A TCP proxy between one fenecdb node and the NATS cluster, for the partition nemesis: one listener on 127.0.0.1
 * per nats-server, the node's `--nats` given the listeners' URLs. `cut()` partitions the node from the servers
 * (all, or those named by index), `heal()` ends it.
 *
 * - `black-hole` (a real partition): nothing is forwarded either way and nothing is closed — the sockets stay
 *   open with their bytes held, as TCP holds unacknowledged ones; a new connection is accepted and held too. A
 *   server that gives up on the node meanwhile (its own pings) closes its side, and the node learns it only at
 *   the heal, as it would once packets flow again. At the heal held bytes flow on.
 * - `reset`: every connection is reset at the cut, and each new one while it lasts (a refused route).
 */
import * as net from 'node:net';

export type CutMode = 'black-hole' | 'reset';

interface Pair {
  readonly client: net.Socket;
  upstream: net.Socket | undefined;
  readonly target: number;
  /** The server's side ended while cut: the node is told at the heal. */
  upstreamGone: boolean;
  /** Bytes read while cut, each way, sent on at the heal. */
  readonly toServer: Buffer[];
  readonly toClient: Buffer[];
}

export class PartitionProxy {
  readonly #servers: net.Server[] = [];
  readonly #targets: number[];
  readonly #pairs = new Set<Pair>();
  /** Indexes of the nats-servers cut off now, and how. */
  #cut = new Set<number>();
  #mode: CutMode = 'black-hole';

  private constructor(targets: number[]) {
    this.#targets = targets;
  }

  /** A listener for each `nats://127.0.0.1:PORT` of `urls` (comma-separated, as `--nats` takes them). */
  static async start(urls: string): Promise<PartitionProxy> {
    const targets = urls.split(',').map((url) => Number(new URL(url).port));
    const proxy = new PartitionProxy(targets);
    for (const [index] of targets.entries()) {
      const server = net.createServer((client) => proxy.#accept(client, index));
      server.listen(0, '127.0.0.1');
      await new Promise<void>((resolve, reject) => {
        server.once('listening', resolve);
        server.once('error', reject);
      });
      proxy.#servers.push(server);
    }
    return proxy;
  }

  /** The listeners' URLs, comma-separated, for the node's `--nats`. */
  get urls(): string {
    return this.#servers.map((server) => `nats://127.0.0.1:${(server.address() as net.AddressInfo).port}`).join(',');
  }

  /** The indexes of the servers the node has a connection to now. */
  connected(): number[] {
    return [...new Set([...this.#pairs].filter((pair) => pair.upstream !== undefined).map((pair) => pair.target))];
  }

  get isCut(): boolean {
    return this.#cut.size > 0;
  }

  /** Cuts the node off from the servers at `indexes` (all of them when omitted). */
  cut(mode: CutMode = 'black-hole', indexes: readonly number[] = this.#targets.map((_, i) => i)): void {
    this.#mode = mode;
    this.#cut = new Set(indexes);
    for (const pair of this.#pairs) {
      if (!this.#cut.has(pair.target)) continue;
      if (mode === 'reset') this.#reset(pair);
    }
  }

  /** Ends the cut: held bytes flow on, held connections reach their server, a side closed meanwhile is closed. */
  heal(): void {
    const cut = this.#cut;
    this.#cut = new Set();
    for (const pair of [...this.#pairs]) {
      if (!cut.has(pair.target)) continue;
      if (pair.upstreamGone) this.#reset(pair);
      else if (pair.upstream === undefined) this.#connect(pair);
      else {
        for (const chunk of pair.toServer.splice(0)) pair.upstream.write(chunk);
        for (const chunk of pair.toClient.splice(0)) pair.client.write(chunk);
        pair.client.resume();
        pair.upstream.resume();
      }
    }
  }

  async stop(): Promise<void> {
    for (const pair of this.#pairs) this.#reset(pair);
    await Promise.all(this.#servers.map((server) => new Promise((resolve) => server.close(resolve))));
  }

  #accept(client: net.Socket, target: number): void {
    const pair: Pair = { client, upstream: undefined, target, upstreamGone: false, toServer: [], toClient: [] };
    this.#pairs.add(pair);
    client.on('error', () => undefined);
    client.on('close', () => {
      pair.upstream?.destroy();
      this.#pairs.delete(pair);
    });
    this.#forward(pair, client, () => pair.upstream, pair.toServer);
    if (!this.#cut.has(target)) this.#connect(pair);
    else if (this.#mode === 'reset') this.#reset(pair);
    else client.pause();
  }

  /** Forwards `from`'s bytes to `to`, or holds them (and stops reading: the sender's buffers fill) while cut. */
  #forward(pair: Pair, from: net.Socket, to: () => net.Socket | undefined, held: Buffer[]): void {
    from.on('data', (chunk: Buffer) => {
      const dest = to();
      if (this.#cut.has(pair.target) || dest === undefined) {
        held.push(chunk);
        from.pause();
      } else dest.write(chunk);
    });
  }

  #connect(pair: Pair): void {
    const upstream = net.connect(this.#targets[pair.target]!, '127.0.0.1');
    pair.upstream = upstream;
    upstream.on('error', () => undefined);
    upstream.on('close', () => {
      if (this.#cut.has(pair.target) && this.#mode === 'black-hole') pair.upstreamGone = true;
      else pair.client.destroy();
    });
    this.#forward(pair, upstream, () => pair.client, pair.toClient);
    for (const chunk of pair.toServer.splice(0)) upstream.write(chunk);
    pair.client.resume();
  }

  #reset(pair: Pair): void {
    pair.client.resetAndDestroy();
    pair.upstream?.resetAndDestroy();
    this.#pairs.delete(pair);
  }
}
