/**
 * One request's embeddings, gathered in passes. A statement runs synchronously (its worker turn, its SQLite
 * transaction), and an embedding is a network call: so a statement that needs texts embedded asks this round for
 * their vectors first, before its write's transaction begins. The texts the round lacks are noted, and the statement
 * stops (EmbeddingsWanted) having written nothing. Its caller then embeds them with no turn and no transaction held
 * (fill), and runs the request again: this time every vector is here, and the statement runs through.
 */
import { FenecError } from '../../shared/errors.js';
import { checkOrigin, type Embedder, type EmbeddingOrigin } from './embedder.js';
import { EmbedderError } from './errors.js';
import type { EmbeddingLoad } from './load.js';

/** The server's embedder as a statement sees it: none, one whose dimension is not learned yet, or one ready. */
export type EmbedderState =
  | { readonly kind: 'none' }
  | { readonly kind: 'unprobed'; readonly model: string }
  | ({ readonly kind: 'ready' } & EmbeddingOrigin);

/** A text a statement wants embedded: a row's fields (a document) or a search's words (a query). */
export interface WantedText {
  readonly text: string;
  readonly query: boolean;
  /** Where it comes from, as a refusal names it: `row 2, field vec`. */
  readonly label: string;
}

/**
 * Thrown by a statement that wants texts embedded, before it wrote anything. Never an answer: the caller embeds and
 * runs the request again. A caller without that loop (none should be) would answer it as a 503.
 */
export class EmbeddingsWanted extends FenecError {
  constructor() {
    super('embedder_unavailable', 'the statement needs texts embedded first; nothing was written', {
      hint: 'retry',
    });
  }
}

/** How many passes a request may take: a statement needs one, an MCP tool that makes its collection first two. */
export const MAX_PASSES = 4;

export class EmbeddingRound {
  #server: EmbedderState;
  readonly #vectors = new Map<string, Float32Array>();
  readonly #wanted = new Map<string, WantedText>();
  #probe = false;
  /** Texts embedded for the request so far (what the tenant's quota was charged). */
  embedded = 0;
  /** The statement writes the rows of a parameter's list (`insert into C $1`): its caller may make it a load. */
  bulk = false;
  /** The load the request's rows are written in, chunk by chunk (node/embedder/load.ts), once its caller made one. */
  load: EmbeddingLoad | undefined;
  /** A load pass wrote a chunk and rows are left: the request runs again once the next chunk's vectors are in. */
  more = false;

  constructor(server: EmbedderState) {
    this.#server = server;
  }

  get server(): EmbedderState {
    return this.#server;
  }

  /** The texts wanted by the last pass, and whether the embedder must be probed first. */
  get wanted(): readonly WantedText[] {
    return [...this.#wanted.values()];
  }

  get wantsProbe(): boolean {
    return this.#probe;
  }

  get wants(): boolean {
    return this.#probe || this.#wanted.size > 0 || this.more;
  }

  /** Whether a document's vector is here (noting nothing). */
  has(text: string): boolean {
    return this.#vectors.has(keyOf(text, false));
  }

  /** Forgets the texts the last pass wanted: a load has them all under way already. */
  forget(): void {
    this.#wanted.clear();
  }

  /**
   * The server's embedder for a statement that needs one (a field made with @embed, a text embedded): its model and
   * dimension. Refused when the server has none; a pass stops when it is not probed yet.
   */
  embedder(what: string): EmbeddingOrigin {
    const server = this.#server;
    if (server.kind === 'ready') return server;
    if (server.kind === 'none') throw missing(what);
    this.#probe = true;
    throw new EmbeddingsWanted();
  }

  /**
   * The vector of a text for a field made with `origin`, or undefined when it is not embedded yet (it is noted, and
   * the statement calls stop() once it has noted all it needs). Refused when the server's embedder is not the field's.
   */
  vector(
    text: string,
    query: boolean,
    label: string,
    field: string,
    origin: EmbeddingOrigin,
  ): Float32Array | undefined {
    checkOrigin(field, origin, this.embedder(`${field} embeds its texts`));
    const key = keyOf(text, query);
    const vector = this.#vectors.get(key);
    if (vector === undefined && !this.#wanted.has(key)) this.#wanted.set(key, { text, query, label });
    return vector;
  }

  /** Stops the pass when any text was wanted: called by a statement before its write begins. */
  stop(): void {
    if (this.wants) throw new EmbeddingsWanted();
  }

  /** The embedder answered the probe: statements may now ask for vectors. */
  probed(origin: EmbeddingOrigin): void {
    this.#server = { kind: 'ready', ...origin };
    this.#probe = false;
  }

  /** The vectors of the texts wanted, in their order; the next pass finds them. */
  give(wanted: readonly WantedText[], vectors: readonly Float32Array[]): void {
    wanted.forEach((want, i) => {
      const key = keyOf(want.text, want.query);
      this.#vectors.set(key, vectors[i]!);
      this.#wanted.delete(key);
    });
  }
}

function keyOf(text: string, query: boolean): string {
  return `${query ? 'q' : 'd'}${text}`;
}

/** The refusal of a statement that needs an embedder on a server started without one. */
export function missing(what: string): FenecError {
  return new FenecError('embedder_missing', `${what}, and this server has no embedder`, {
    hint: 'start the server with --embedder-url and --embedder-model, or give the vector yourself',
  });
}

export interface FillOptions {
  /** The request's end (its statement's time limit). */
  readonly signal?: AbortSignal;
}

/**
 * Embeds what the round wants: the probe first when it is due, then the queries (through the embedder's cache) and
 * the documents (in batches). An input the embedder refuses as too long is named by its label.
 */
export async function fill(embedder: Embedder, round: EmbeddingRound, options: FillOptions = {}): Promise<void> {
  const wanted = round.wanted;
  const queries = wanted.filter((w) => w.query);
  const documents = wanted.filter((w) => !w.query);
  try {
    const [found, vectors] = await Promise.all([
      Promise.all(queries.map((q) => embedder.embedQuery(q.text, options))),
      embedder.embed(
        documents.map((d) => d.text),
        options,
      ),
    ]);
    round.give(queries, found);
    round.give(documents, vectors);
  } catch (err) {
    if (err instanceof EmbedderError && err.input !== undefined && documents[err.input] !== undefined)
      throw new EmbedderError(err.code as 'embedder_failed', `${documents[err.input]!.label}: ${err.message}`, {
        hint: err.hint,
      });
    throw err;
  }
}
