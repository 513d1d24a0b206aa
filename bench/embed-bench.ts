/**
 * `make embed-bench`: a load through the server's embedder, and a search by words against one given its vector.
 *
 * The embedder is the bench's own, on 127.0.0.1, speaking the OpenAI embeddings API: it serves one batch at a time
 * (as one GPU does) and answers each in EMBED_BATCH_MS (default 20 ms), with a vector per text drawn from a hash of
 * it. Its busy time is the sum of the time it spent on batches: the least any load through it can take.
 *
 * 1. The load: EMBED_ROWS rows (default 20 000) of Zipf text of 10–40 words, through `fenec import` over HTTP into a
 *    collection whose `vec vector<384> @hnsw(cosine) @embed(body)` the server embeds. Target: the import's wall time
 *    (from its start to its last row committed) ≤ 1.10 × the embedder's busy time — the writes hidden behind the
 *    embedding (the server writes a chunk while the embedder works on the next). The wait for the vector index to
 *    hold every row is shown, not counted.
 * 2. The search: `get docs select body near vec $1 limit 10` with $1 words (their embedding in the server's cache of
 *    query embeddings, after a first call), against the same statement with $1 the vector of those words, in turns,
 *    one request at a time, EMBED_QUERIES of each (default 400). Target: the median by words ≤ 1.2 × the median by
 *    vector.
 *
 *     EMBED_ROWS=2000 EMBED_QUERIES=50 node dist/bench/embed-bench.js
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  call,
  fenecImport,
  intEnv,
  Programs,
  progress,
  runInfo,
  verdict,
  writeNdjson,
  writeResults,
} from './harness.js';
import { median, percentile } from './stats.js';
import { VOCABULARY, ZIPF_EXPONENT, zipfWorkload } from './search-data.js';

const ROWS = intEnv('EMBED_ROWS', 20_000, 100);
const QUERIES = intEnv('EMBED_QUERIES', 400, 10);
const BATCH_MS = intEnv('EMBED_BATCH_MS', 20, 1);
const DIMS = 384;
const MODEL = 'bench-embed';
const TOKEN = 'embed-bench-token';
const LOAD_TARGET = 1.1;
const SEARCH_TARGET = 1.2;
/** Distinct word queries, each asked in turn. */
const WORD_QUERIES = 20;

/** A text's vector: seeded by its hash, unit length (the embedder's answer, and what a client would send). */
function vectorOf(text: string): number[] {
  let seed = createHash('sha256').update(text).digest().readUInt32LE(0) || 1;
  const v = new Array<number>(DIMS);
  let norm = 0;
  for (let i = 0; i < DIMS; i++) {
    // xorshift32: cheap, so that the embedder's time is its fixed time.
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    const x = (seed >>> 0) / 2 ** 32 - 0.5;
    v[i] = x;
    norm += x * x;
  }
  const scale = 1 / Math.sqrt(norm);
  return v.map((x) => Number((x * scale).toFixed(6)));
}

interface Embedder {
  readonly url: string;
  /** Seconds spent serving batches, and how many. */
  busySeconds(): number;
  batches(): number;
  close(): Promise<void>;
}

/** The fixed-time embedder: batches queued, served one at a time, each answered BATCH_MS after it began. */
async function startEmbedder(): Promise<Embedder> {
  let free = 0;
  let busy = 0;
  let count = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { input: string[] | string };
      const input = typeof body.input === 'string' ? [body.input] : body.input;
      const begin = Math.max(performance.now(), free);
      free = begin + BATCH_MS;
      const reply = JSON.stringify({
        object: 'list',
        model: MODEL,
        data: input.map((text, index) => ({ object: 'embedding', index, embedding: vectorOf(text) })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      });
      setTimeout(
        () => {
          const end = performance.now();
          busy += end - begin;
          count += 1;
          free = Math.max(free, end);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(reply);
        },
        Math.max(0, free - performance.now()),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    busySeconds: () => busy / 1000,
    batches: () => count,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function query(url: string, statement: string, params: unknown[] = []): Promise<any> {
  return call(url, TOKEN, 'POST', '/query', { statement, params });
}

/** One request's milliseconds. */
async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(tmpdir(), 'fenec-embed-'));
  const programs = new Programs();
  const embedder = await startEmbedder();
  try {
    progress(`data: ${ROWS} rows of Zipf text; an embedder of ${DIMS} dims answering each batch in ${BATCH_MS} ms`);
    const { bodies, words } = zipfWorkload({
      seed: 7,
      rows: ROWS,
      queries: WORD_QUERIES,
      vocabulary: VOCABULARY,
      zipfExponent: ZIPF_EXPONENT,
      minWords: 10,
      maxWords: 40,
      dims: 2,
      clusters: 1,
      spread: 0.5,
    });
    const file = path.join(dir, 'rows.ndjson');
    writeNdjson(file, ROWS, (i) => ({ body: bodies[i] }));
    const server = await programs.start('dist/node/cli/fenec-server.js', [
      '--file',
      path.join(dir, 'embed.fenec'),
      '--port',
      '0',
      '--http-token',
      TOKEN,
      '--sweep-interval',
      '0',
      '--embedder-url',
      embedder.url,
      '--embedder-model',
      MODEL,
    ]);
    await query(server.url, `create collection docs (body text @text, vec vector<${DIMS}> @hnsw(cosine) @embed(body))`);
    const probe = { busy: embedder.busySeconds(), batches: embedder.batches() };
    progress('the load: fenec import over HTTP, the server embedding every row');
    const { seconds, summary } = await fenecImport(server.url, 'docs', file, TOKEN);
    const busy = embedder.busySeconds() - probe.busy;
    const batches = embedder.batches() - probe.batches;
    const importSeconds = summary.seconds!;
    const loadRatio = importSeconds / busy;
    const count = (await query(server.url, 'get docs count')).count as number;
    if (count !== ROWS) throw new Error(`the collection holds ${count} rows, not ${ROWS}`);

    progress(`the search: near by words (cached) and by their vector, ${QUERIES} of each in turns`);
    const texts = words.slice(0, WORD_QUERIES).map((pair) => pair.join(' '));
    const statement = 'get docs select body near vec $1 limit 10';
    // A first call of each embeds its words (the cache then holds them); both kinds warm the same reads.
    for (const text of texts) {
      await query(server.url, statement, [text]);
      await query(server.url, statement, [vectorOf(text)]);
    }
    const byWords: number[] = [];
    const byVector: number[] = [];
    for (let i = 0; i < QUERIES; i++) {
      const text = texts[i % texts.length]!;
      const vector = vectorOf(text);
      // Alternated, and the order flipped each round: neither kind always runs right after the other.
      if (i % 2 === 0) {
        byWords.push(await timed(() => query(server.url, statement, [text])));
        byVector.push(await timed(() => query(server.url, statement, [vector])));
      } else {
        byVector.push(await timed(() => query(server.url, statement, [vector])));
        byWords.push(await timed(() => query(server.url, statement, [text])));
      }
    }
    const wordsMs = median(byWords);
    const vectorMs = median(byVector);
    const searchRatio = wordsMs / vectorMs;
    const report = {
      ...runInfo('embed'),
      rows: ROWS,
      dims: DIMS,
      batchMs: BATCH_MS,
      cores: availableParallelism(),
      load: {
        importSeconds,
        indexSeconds: summary.index_seconds ?? null,
        wallSeconds: seconds,
        embedderBusySeconds: busy,
        batches,
        ratio: loadRatio,
        target: LOAD_TARGET,
      },
      search: {
        queries: QUERIES,
        wordsMedianMs: wordsMs,
        wordsP99Ms: percentile(byWords, 99),
        vectorMedianMs: vectorMs,
        vectorP99Ms: percentile(byVector, 99),
        ratio: searchRatio,
        target: SEARCH_TARGET,
      },
    };
    process.stdout.write(
      `embed-bench: ${ROWS} rows, ${DIMS} dims, ${BATCH_MS} ms a batch, ${availableParallelism()} cores\n`,
    );
    process.stdout.write(
      `load: import ${importSeconds.toFixed(2)} s (then ${(summary.index_seconds ?? 0).toFixed(2)} s until the index holds every row); ` +
        `the embedder busy ${busy.toFixed(2)} s over ${batches} batches\n`,
    );
    process.stdout.write(
      `target: import ≤ ${LOAD_TARGET}x the embedder's busy time: ${verdict(loadRatio <= LOAD_TARGET)} (${loadRatio.toFixed(2)}x)\n`,
    );
    process.stdout.write(
      `search: near by words ${wordsMs.toFixed(3)} ms (p99 ${report.search.wordsP99Ms.toFixed(3)}), by vector ${vectorMs.toFixed(3)} ms (p99 ${report.search.vectorP99Ms.toFixed(3)})\n`,
    );
    process.stdout.write(
      `target: by words (cached) ≤ ${SEARCH_TARGET}x by vector: ${verdict(searchRatio <= SEARCH_TARGET)} (${searchRatio.toFixed(2)}x)\n`,
    );
    writeResults('embed', report);
  } finally {
    await programs.stopAll();
    await embedder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
