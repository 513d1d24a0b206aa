/**
 * The Faiss engine: the only module that loads our addon (native/faiss, built by `make install`).
 *
 * The addon throws TypeError / RangeError for arguments the caller should not have passed, and
 * errors with `code` ERR_FAISS_BUSY / ERR_FAISS_DISPOSED for calls out of turn: programming
 * errors, passed through as they are. What Faiss itself refuses (ERR_FAISS) and bytes that are
 * not a sound index (ERR_FAISS_BAD_INDEX) become FenecError `vector_engine`, the native error as
 * its cause.
 */
import { availableParallelism } from 'node:os';
import { createRequire } from 'node:module';
import { FenecError } from '../../shared/errors.js';
import { findNativeBuild } from '../native-builds.js';
import type {
  VectorEngine,
  VectorIndex,
  VectorIndexKind,
  VectorIndexOptions,
  VectorMetric,
  VectorSearchOptions,
  VectorSearchResult,
} from './vector-index.js';

/** What native/faiss/src/addon.cc exports: an index of the shape the wrapper below presents. */
type NativeIndex = VectorIndex;

interface NativeAddon {
  readonly FaissIndex: {
    new (options: VectorIndexOptions): NativeIndex;
    deserialize(bytes: Uint8Array): NativeIndex;
  };
  setThreads(threads: number): void;
  getThreads(): number;
  /** Absent from a build older than this source (one FENEC_FAISS_ADDON names): then nothing is given back. */
  releaseFreeMemory?(): Promise<boolean>;
}

const OPTION_KEYS: ReadonlySet<string> = new Set(['kind', 'dims', 'metric', 'm', 'efConstruction', 'efSearch']);
const MISSPELLINGS: Readonly<Record<string, string>> = {
  M: 'm',
  ef: 'efSearch',
  ef_search: 'efSearch',
  ef_construction: 'efConstruction',
  dim: 'dims',
  dimension: 'dims',
};

let loaded: NativeAddon | undefined;

/** The addon, loaded on first use, from where node/native-builds.ts finds it. */
function addon(): NativeAddon {
  if (loaded !== undefined) return loaded;
  const path = findNativeBuild('faiss');
  try {
    loaded = createRequire(import.meta.url)(path) as NativeAddon;
    // Background work (builds, adds, snapshots) may use every core: its threads run below the serving
    // thread and the workers (native/faiss/src/threads.cc), so it takes the time they leave. Searches run on one.
    loaded.setThreads(availableParallelism());
  } catch (err) {
    throw new FenecError('vector_engine', `the Faiss addon ${path} does not load: ${(err as Error).message}`, {
      hint: 'run `make install` again to rebuild it',
      cause: err,
    });
  }
  return loaded;
}

/**
 * Gives the C allocator's free pages back to the system (glibc's malloc_trim, on one of libuv's threads: it takes
 * up to 100 ms after a load, and holds each arena's lock meanwhile, the serving thread's too: for a thread gone
 * quiet, node/workers/idle-collect.ts); true when some were. Before the addon is loaded it does nothing (false):
 * loading it for this alone would map its libraries into a server without vectors.
 */
export async function releaseFreeMemory(): Promise<boolean> {
  return (await loaded?.releaseFreeMemory?.()) ?? false;
}

/** A native error as what callers catch: Faiss's own refusals become FenecError `vector_engine`. */
function translate(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ERR_FAISS_BAD_INDEX') {
    return new FenecError('vector_engine', (err as Error).message, {
      hint: 'the stored vector index is damaged; it can be rebuilt from the rows',
      cause: err,
    });
  }
  if (code === 'ERR_FAISS') return new FenecError('vector_engine', (err as Error).message, { cause: err });
  return err;
}

function guarded<T>(call: () => T): T {
  try {
    return call();
  } catch (err) {
    throw translate(err);
  }
}

/** True for the error deserialize() throws on damaged or foreign bytes (rebuild the index from the rows). */
export function isDamagedIndexError(err: unknown): boolean {
  return (
    err instanceof FenecError &&
    err.code === 'vector_engine' &&
    (err.cause as { code?: unknown } | undefined)?.code === 'ERR_FAISS_BAD_INDEX'
  );
}

class FaissIndex implements VectorIndex {
  readonly #native: NativeIndex;

  constructor(native: NativeIndex) {
    this.#native = native;
  }

  get kind(): VectorIndexKind {
    return this.#native.kind;
  }
  get metric(): VectorMetric {
    return this.#native.metric;
  }
  get dims(): number {
    return this.#native.dims;
  }
  get ntotal(): number {
    return this.#native.ntotal;
  }
  get busy(): boolean {
    return this.#native.busy;
  }

  add(vectors: Float32Array): number {
    return guarded(() => this.#native.add(vectors));
  }

  async addAsync(vectors: Float32Array): Promise<number> {
    try {
      return await this.#native.addAsync(vectors);
    } catch (err) {
      throw translate(err);
    }
  }

  search(queries: Float32Array, k: number, options?: VectorSearchOptions): VectorSearchResult {
    return guarded(() => this.#native.search(queries, k, options));
  }

  serialize(): Buffer {
    return guarded(() => this.#native.serialize());
  }

  async serializeAsync(): Promise<Buffer> {
    try {
      return await this.#native.serializeAsync();
    } catch (err) {
      throw translate(err);
    }
  }

  dispose(): void {
    this.#native.dispose();
  }
}

function checkOptionKeys(options: VectorIndexOptions): void {
  if (typeof options !== 'object' || options === null)
    throw new TypeError('options must be an object { kind, dims, metric }');
  for (const key of Object.keys(options)) {
    if (OPTION_KEYS.has(key)) continue;
    const hint = MISSPELLINGS[key];
    throw new TypeError(
      `unknown vector index option "${key}"` + (hint !== undefined ? ` (did you mean "${hint}"?)` : ''),
    );
  }
}

/** The Faiss engine. Loading the addon waits for the first call, so a build without vectors starts without it. */
export const faiss: VectorEngine = Object.freeze({
  create(options: VectorIndexOptions): VectorIndex {
    checkOptionKeys(options);
    const { FaissIndex: Native } = addon();
    return new FaissIndex(guarded(() => new Native(options)));
  },
  deserialize(bytes: Uint8Array): VectorIndex {
    const { FaissIndex: Native } = addon();
    return new FaissIndex(guarded(() => Native.deserialize(bytes)));
  },
  setThreads(threads: number): void {
    addon().setThreads(threads);
  },
});
