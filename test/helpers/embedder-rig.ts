/**
 * What the embedder's integration tests set up alike: the tests' own embedding server, and a fenec-server (one file,
 * or a tenant node's folder) started with --embedder-url and --embedder-model pointing at it, in a sandbox whose
 * clean-up ends both. A suite opens the rig in its before or beforeEach hook and closes it in the matching after hook.
 */
import * as path from 'node:path';
import { query, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';
import { startEmbeddingServer, type EmbeddingServer, type EmbeddingServerOptions } from './embedding-server.js';

/** The flags that point a fenec-server or `fenec mcp` at an embedder. */
export function embedderFlags(embedder: { readonly url: string; readonly model: string }): string[] {
  return ['--embedder-url', embedder.url, '--embedder-model', embedder.model];
}

export interface EmbedderRigOptions {
  readonly embedder?: EmbeddingServerOptions;
  /** What the server serves: one file (--file, the default), or tenants in a folder (--data-dir). */
  readonly data?: 'file' | 'dir';
  /** The server's flags besides its data and its embedder's URL and model; a function gets the rig's folder. */
  readonly flags?: readonly string[] | ((dir: string) => readonly string[]);
  readonly env?: NodeJS.ProcessEnv;
  /** False: the embedding server alone, for a suite that starts its own servers and clients (with embedderFlags). */
  readonly server?: boolean;
}

export class EmbedderRig {
  readonly sandbox = new Sandbox();
  #embedder: EmbeddingServer | undefined;
  #server: ServerProcess | undefined;
  #dir: string | undefined;

  constructor(private readonly options: EmbedderRigOptions = {}) {}

  /** Starts the embedding server, then the server on fresh data (unless `server: false`). */
  async open(): Promise<void> {
    this.#embedder = await startEmbeddingServer(this.options.embedder);
    this.#dir = this.sandbox.dir();
    if (this.options.server !== false) await this.start();
  }

  /**
   * Starts the server (again, after a kill) on the rig's data with its flags, calling `embedder`: the rig's by
   * default, another one, or none (null).
   */
  async start(embedder: EmbeddingServer | null = this.embedder): Promise<ServerProcess> {
    const { flags = [] } = this.options;
    this.#server = await this.sandbox.startServer(
      [
        this.options.data === 'dir' ? '--data-dir' : '--file',
        this.data,
        ...(embedder === null ? [] : embedderFlags(embedder)),
        ...(typeof flags === 'function' ? flags(this.dir) : flags),
      ],
      this.options.env,
    );
    return this.#server;
  }

  /** POST /query to the server. */
  readonly q = (statement: string, params: readonly unknown[] = []): Promise<Reply> =>
    query(this.server.url, statement, params);

  /** Ends every process the sandbox started, removes its folders, and closes the embedding server. */
  async close(): Promise<void> {
    await this.sandbox.cleanUp();
    await this.#embedder?.close();
    this.#embedder = undefined;
    this.#server = undefined;
    this.#dir = undefined;
  }

  get embedder(): EmbeddingServer {
    return opened(this.#embedder);
  }

  /** The server started last. */
  get server(): ServerProcess {
    return opened(this.#server);
  }

  /** The rig's fresh folder, made at open(). */
  get dir(): string {
    return opened(this.#dir);
  }

  /** The server's file in the rig's folder (with `data: 'dir'`, the folder itself). */
  get data(): string {
    return this.options.data === 'dir' ? this.dir : path.join(this.dir, 'e.fenec');
  }
}

function opened<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the embedder rig is not open (open() it in a before hook)');
  return value;
}
