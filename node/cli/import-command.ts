/**
 * `fenec import --url URL|--file F COLLECTION data.ndjson|data.json|-`: loads rows into a
 * collection in batches (`insert into C $1`, each batch all or nothing), the next batch read while
 * the server writes the last. It stops at the first batch refused, naming the line of the row
 * refused and how many rows were committed before it; then, unless --no-wait, it waits until the
 * collection's vector indexes hold every row, and says how long that took.
 *
 * Progress goes to stderr (a bar on a terminal, plain lines otherwise); the summary, one JSON line,
 * to stdout; a refusal, as JSON with its line and what was committed, to stderr with exit status 1.
 *
 * Into a collection with an `@embed` field, the server embeds each batch's rows, writing them a chunk at a time while
 * it embeds the next (node/embedder/load.ts): the progress counts rows embedded and committed, and a batch refused
 * part way says how many of its rows were committed before the refused chunk.
 */
import { createReadStream, statSync } from 'node:fs';
import type { Command } from 'commander';
import { FenecError } from '../../shared/errors.js';
import { isName } from '../../shared/fenecql/lexer.js';
import { FenecDatabase } from '../database.js';
import { localError, onExit, usageError } from '../../shared/cli/command-line.js';
import { createCollectionFor, SAMPLE_ROWS } from './infer-schema.js';
import { duration, figure, Progress } from './progress.js';
import { readRows, rowValue, type SourceRow } from './row-source.js';
import { OrderedRequests, postQuery, queryUrl, tokenOf, type Outcome } from './server-client.js';

const NAME = 'fenec';
/** Under the server's default body limit (1 MB), with room for the statement around the rows. */
const DEFAULT_BATCH_BYTES = 900 * 1024;
const INDEX_POLL_MS = 200;

interface ImportOptions {
  url?: string;
  file?: string;
  token?: string;
  batchBytes: string;
  wait: boolean;
}

/** Where the rows go: a server's /query, or a file opened here. */
interface Target {
  /** `committed`: told when the rows are in the file before the answer comes (a replicated node's 102). */
  insert(statement: string, rows: readonly SourceRow[], committed?: () => void): Promise<Outcome>;
  /** Whether the collection has a field made with @embed (its rows are embedded as they are written). */
  embeds(collection: string): Promise<boolean>;
  /** Resolves once the collection's vector indexes hold every row; `onPending` hears how many they do not yet. */
  caughtUp(collection: string, onPending: (rows: number) => void): Promise<void>;
  close(): void;
}

/**
 * A refusal: the error, the line it names, what was committed before it, and what after — a batch sent on the
 * refused one's 102, when the log then failed to ack the refused one (its outcome unknown) and the next was taken
 * by another node.
 */
class ImportRefused extends Error {
  constructor(
    readonly error: Record<string, unknown>,
    readonly line: number | undefined,
    readonly committed: number,
    readonly after = 0,
  ) {
    super(String(error.message));
  }
}

export function addImportCommand(program: Command): void {
  program
    .command('import')
    .description(
      'Load rows into a collection from NDJSON (one JSON object per line) or a JSON array of objects, in batches.',
    )
    .argument('<collection>', 'the collection the rows go into (it must exist)')
    .argument('<source>', 'the file to read (data.ndjson, data.json), or - for stdin')
    .option(
      '--url <url>',
      'load through a server: its base URL (http://127.0.0.1:8080) or its /query URL; the token from --token or $FENEC_TOKEN',
    )
    .option('--file <path>', 'load into this .fenec file (takes its lock while it runs)')
    .option('--token <token>', 'with --url: the bearer token (default: $FENEC_TOKEN)')
    .option(
      '--batch-bytes <n>',
      'largest request body, in bytes (a batch is halved when the server finds it too large)',
      String(DEFAULT_BATCH_BYTES),
    )
    .option('--no-wait', 'do not wait for the vector indexes to hold every row')
    .action(async (collection: string, source: string, options: ImportOptions) => {
      if ((options.file === undefined) === (options.url === undefined))
        usageError(NAME, 'import takes one of --file <path> or --url <url>');
      if (!isName(collection)) usageError(NAME, `${JSON.stringify(collection)} is not a collection name`);
      const batchBytes = Number(options.batchBytes);
      if (!Number.isSafeInteger(batchBytes) || batchBytes < 1024)
        usageError(NAME, `--batch-bytes takes a whole number of bytes ≥ 1024, not ${options.batchBytes}`);
      if (options.file !== undefined && options.token !== undefined)
        usageError(NAME, '--token is for --url; a file takes no token');
      const target =
        options.url !== undefined
          ? serverTarget(queryUrl(options.url), tokenOf(options.token))
          : fileTarget(options.file!);
      const create = (statement: string): string =>
        options.url !== undefined
          ? `fenec query --url ${options.url} '${statement}'`
          : `fenec query --file ${options.file!} '${statement}'`;
      process.exitCode = await runImport(target, collection, source, batchBytes, options.wait, create);
    });
}

async function runImport(
  target: Target,
  collection: string,
  source: string,
  batchBytes: number,
  wait: boolean,
  create: (statement: string) => string,
): Promise<number> {
  const tty = process.stderr.isTTY === true;
  const write = (text: string): void => void process.stderr.write(text);
  let totalBytes: number | undefined;
  if (source !== '-') {
    try {
      totalBytes = statSync(source).size;
    } catch (err) {
      usageError(NAME, `cannot read ${source}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  }
  const input = source === '-' ? process.stdin : createReadStream(source);
  const progress = new Progress({ write: (text) => write(`${tty ? '' : `${NAME} import: `}${text}`), tty, totalBytes });
  let read = 0;
  const rows = readRows(input as AsyncIterable<Buffer>, { onBytes: (bytes) => (read = bytes) });
  // Rows written into a collection with an @embed field are embedded by the server first: the count says so.
  const label = (await target.embeds(collection)) ? 'rows embedded' : 'rows';
  const loader = new Loader(target, `insert into ${collection} $1`, batchBytes, (committed) =>
    progress.update(committed, read, label),
  );
  try {
    await loader.load(rows);
  } catch (err) {
    progress.finish();
    const refused =
      err instanceof ImportRefused
        ? err
        : new ImportRefused(localError(err).toJSON().error, lineOf(err), loader.committed);
    if (refused.error.code === 'unknown_collection') offerCreate(refused, collection, loader.sample, create);
    if (tty)
      write(
        `${NAME} import: ${refused.message}; ${figure(refused.committed)} rows were committed before it, ${refused.after === 0 ? 'none' : figure(refused.after)} after\n`,
      );
    write(
      `${JSON.stringify({ error: refused.error, ...(refused.line === undefined ? {} : { line: refused.line }), committed: refused.committed, ...(refused.after === 0 ? {} : { committed_after: refused.after }) })}\n`,
    );
    target.close();
    return 1;
  }
  progress.update(loader.committed, read, label);
  progress.finish();
  const seconds = progress.elapsed;
  const summary: Record<string, unknown> = {
    collection,
    rows: loader.committed,
    seconds: round(seconds),
    rows_per_second: Math.round(loader.committed / Math.max(seconds, 1e-3)),
    ...(label === 'rows' ? {} : { embedded: loader.committed }),
  };
  write(
    `${NAME} import: ${figure(loader.committed)} ${label} into ${collection} in ${duration(seconds)} (${figure(summary.rows_per_second as number)} rows/s)\n`,
  );
  if (wait) {
    const waiting = new Progress({ write: (text) => write(`${tty ? '' : `${NAME} import: `}${text}`), tty });
    try {
      await target.caughtUp(collection, (pending) => waiting.left(pending, 'rows still to index'));
    } catch (err) {
      waiting.finish();
      write(`${JSON.stringify(localError(err).toJSON())}\n`);
      target.close();
      return 1;
    }
    waiting.finish();
    summary.index_seconds = round(waiting.elapsed);
    write(`${NAME} import: the vector indexes hold every row ${duration(waiting.elapsed)} later\n`);
  }
  target.close();
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  return 0;
}

/**
 * A collection that does not exist: the hint becomes the `create collection` that fits the file's first
 * rows (infer-schema.ts), as a command to run, rather than the server's "schema lists the collections".
 */
function offerCreate(
  refused: ImportRefused,
  collection: string,
  sample: readonly SourceRow[],
  create: (statement: string) => string,
): void {
  let rows: Record<string, unknown>[];
  try {
    rows = sample.map(rowValue);
  } catch {
    return;
  }
  const statement = createCollectionFor(collection, rows);
  if (statement === undefined) return;
  refused.error.hint =
    `create it first, with the fields the first rows hold: ${create(statement)} ` +
    '(add @text to a field to search it by words, @hnsw(cosine) to a vector for near)';
}

/**
 * Batches the rows under the byte budget and sends them in order, the next read while the last is written and sent
 * once the last is committed (OrderedRequests: a replicated node's 102 comes before its log's ack).
 */
class Loader {
  committed = 0;
  /** The file's first rows, from which a missing collection's fields are inferred. */
  readonly sample: SourceRow[] = [];
  #budget: number;
  readonly #target: Target;
  readonly #statement: string;
  readonly #onCommitted: (committed: number) => void;

  constructor(target: Target, statement: string, budget: number, onCommitted: (committed: number) => void) {
    this.#target = target;
    this.#statement = statement;
    this.#budget = budget;
    this.#onCommitted = onCommitted;
  }

  async load(rows: AsyncIterable<SourceRow>): Promise<void> {
    const requests = new OrderedRequests<void>();
    const sent: { readonly rows: number; readonly done: Promise<void> }[] = [];
    let failed = false;
    let batch: SourceRow[] = [];
    let bytes = 0;
    const flush = async (): Promise<void> => {
      const sending = batch;
      batch = [];
      bytes = 0;
      const pushed = await requests.push((committed) => this.#send(sending, committed));
      if (pushed === undefined) {
        failed = true;
        return;
      }
      // Kept from rejecting unobserved while the next batch is read; its failure is read in order below.
      pushed.done.catch(() => (failed = true));
      sent.push({ rows: sending.length, done: pushed.done });
    };
    let unread: unknown;
    try {
      for await (const row of rows) {
        if (failed) break;
        if (this.sample.length < SAMPLE_ROWS) this.sample.push(row);
        const size = row.bytes.length + 1;
        if (batch.length > 0 && bytes + size > this.#budget) await flush();
        batch.push(row);
        bytes += size;
      }
      if (batch.length > 0 && !failed) await flush();
    } catch (err) {
      // A line that is not a row: the batches in flight end first, so that what was committed is known.
      unread = err;
    }
    await this.#refusal(sent);
    if (unread !== undefined) throw unread;
  }

  /**
   * Waits for every batch sent; throws the first refused, in the file's order, with the rows committed before it (a
   * batch sent on its 102 and committed after it is counted apart: see ImportRefused).
   */
  async #refusal(sent: readonly { readonly rows: number; readonly done: Promise<void> }[]): Promise<void> {
    let before = 0;
    let refused: unknown;
    for (const { rows, done } of sent) {
      try {
        await done;
        if (refused === undefined) before += rows;
      } catch (err) {
        refused ??= err;
      }
    }
    if (refused === undefined) return;
    if (!(refused instanceof ImportRefused)) throw refused;
    const committed = before + refused.committed;
    throw new ImportRefused(refused.error, refused.line, committed, this.committed - committed);
  }

  /** Sends a batch; `committed` hears of its commit before its answer (see OrderedRequests). */
  async #send(rows: readonly SourceRow[], committed?: () => void): Promise<void> {
    const outcome = await this.#target.insert(this.#statement, rows, committed);
    if (outcome.ok) {
      this.committed += rows.length;
      this.#onCommitted(this.committed);
      return;
    }
    const error = (outcome.body as { error?: Record<string, unknown> } | null)?.error ?? {
      code: 'internal',
      message: JSON.stringify(outcome.body),
    };
    if (outcome.status === 413 && rows.length > 1) {
      // Nothing of a batch too large was written: send it in halves, and smaller batches from now on.
      this.#budget = Math.max(1024, Math.floor(this.#budget / 2));
      const half = Math.ceil(rows.length / 2);
      await this.#send(rows.slice(0, half));
      try {
        await this.#send(rows.slice(half), committed);
      } catch (err) {
        // Counted from the batch's start: its first half was committed.
        if (err instanceof ImportRefused) throw new ImportRefused(err.error, err.line, half + err.committed);
        throw err;
      }
      return;
    }
    // A body that is not JSON: a row shaped as an object is not one (row-source.ts); its parse names it.
    if (error.code === 'bad_json' && error.row === undefined) rows.forEach(rowValue);
    // A batch the server embeds is written a chunk at a time: the chunks before the refused one are committed.
    const before = typeof error.committed === 'number' ? Math.min(error.committed, rows.length - 1) : 0;
    if (before > 0) {
      this.committed += before;
      this.#onCommitted(this.committed);
    }
    // An input the embedder refused is named by its place in the message ($1[i], field f), not by "row".
    const named = /^\$1\[(\d+)\]/.exec(String(error.message ?? ''));
    const index = typeof error.row === 'number' ? error.row : named === null ? undefined : Number(named[1]);
    const line = index === undefined ? undefined : rows[index]?.line;
    const first = rows[before]!.line;
    const last = rows.at(-1)!.line;
    const where = line !== undefined ? `line ${line}` : `the batch of lines ${first}–${last}`;
    const message = String(error.message ?? '')
      .replace(/^\$1\[\d+\](: |, )/, '')
      .replace(/; the \d+ rows before it were committed, none after$/, '');
    const { committed: _chunks, ...said } = error;
    throw new ImportRefused({ ...said, message: `${where}: ${message}` }, line ?? first, before);
  }
}

function lineOf(err: unknown): number | undefined {
  const match = /^line (\d+):/.exec(err instanceof Error ? err.message : '');
  return match === null ? undefined : Number(match[1]);
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}

const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']]}');

/**
 * A batch's /query body, its rows' text as read (no second JSON of the rows), put together as bytes:
 * a batch joined as one string of about a megabyte, then measured and encoded, cost the CLI more than
 * reading the rows.
 */
function batchBody(statement: string, rows: readonly SourceRow[]): Buffer {
  const parts: Buffer[] = [Buffer.from(`{"statement":${JSON.stringify(statement)},"params":[[`)];
  for (let i = 0; i < rows.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(rows[i]!.bytes);
  }
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

function serverTarget(url: URL, token: string | undefined): Target {
  return {
    insert: (statement, rows, committed) => postQuery(url, batchBody(statement, rows), token, committed),
    async embeds(collection) {
      const outcome = await postQuery(url, JSON.stringify({ statement: `schema ${collection}` }), token);
      return outcome.ok && embedsIn(outcome.body);
    },
    async caughtUp(collection, onPending) {
      for (;;) {
        const outcome = await postQuery(url, JSON.stringify({ statement: `schema ${collection}` }), token);
        if (!outcome.ok)
          throw new FenecError('unavailable', `schema ${collection} was refused: ${JSON.stringify(outcome.body)}`);
        const pending = indexBacklog(outcome.body);
        if (pending === undefined) return;
        onPending(pending);
        await new Promise((resolve) => setTimeout(resolve, INDEX_POLL_MS));
      }
    },
    close: () => undefined,
  };
}

/** Whether `schema C`'s answer shows a field made with @embed (a collection that does not exist: no). */
function embedsIn(answer: unknown): boolean {
  const fields = (answer as { collections?: { fields?: { annotations?: string[] }[] }[] }).collections?.[0]?.fields;
  return (fields ?? []).some((f) => (f.annotations ?? []).some((a) => a.startsWith('@embed(')));
}

/** Rows the collection's indexes do not hold yet (as `schema` tells), or undefined when they hold every row. */
function indexBacklog(answer: unknown): number | undefined {
  const fields =
    (answer as { collections?: { fields?: { index?: { pending: number; building: boolean } }[] }[] }).collections?.[0]
      ?.fields ?? [];
  const indexes = fields.flatMap((f) => (f.index === undefined ? [] : [f.index]));
  if (indexes.every((i) => i.pending === 0 && !i.building)) return undefined;
  return indexes.reduce((sum, i) => sum + i.pending, 0);
}

function fileTarget(file: string): Target {
  const db = FenecDatabase.open({ file, readOnly: false, program: 'fenec import', sweepIntervalMs: 0 });
  // A signal or fault while it runs must still release the file's lock.
  onExit(() => db.close());
  return {
    async insert(statement, rows) {
      try {
        const body = db.execute(statement, [rows.map(rowValue)]);
        // A turn of the event loop between batches: the vector indexes' background work goes on.
        await new Promise((resolve) => setImmediate(resolve));
        return { ok: true, body };
      } catch (err) {
        const error = localError(err);
        return { ok: false, status: error.status, body: error.toJSON() };
      }
    },
    embeds(collection) {
      try {
        return Promise.resolve(embedsIn(db.execute(`schema ${collection}`)));
      } catch {
        return Promise.resolve(false);
      }
    },
    async caughtUp(collection, onPending) {
      const timer = setInterval(() => onPending(indexBacklog(db.execute(`schema ${collection}`)) ?? 0), INDEX_POLL_MS);
      try {
        // Also stores the indexes, so that the next open loads them rather than building them again.
        await db.idle();
      } finally {
        clearInterval(timer);
      }
    },
    close: () => db.close(),
  };
}
