/**
 * `make mcp-bench`: what a tool call costs beyond the statement it runs. The same reads — a row by
 * id, a search by words, a recall — as an MCP tool call (`POST /_mcp`) and as `POST /query`, over
 * 10 000 rows of one real fenec-server, in one run.
 *
 * One client sends one request at a time on a kept-alive connection; the tool call and the `/query`
 * request of a pair go one after the other, asking for the same row or words, their order swapped
 * every pair, so that whatever else the machine does falls on both alike. The extra cost is the
 * median of the pairs' differences; the ratio is the tool call's median latency over /query's.
 * Beside it, in this process, the same endpoint without HTTP: `McpEndpoint.handle` against
 * `executeStatement` and one JSON.stringify, which is the tool call's own work alone.
 *
 * Tool calls are sent as the v2 client sends them (2026-07-28: `_meta`, MCP-Protocol-Version,
 * Mcp-Method, Mcp-Name); the row by id is also sent as SDK 1.x does (2025-11-25, no headers).
 *
 * Env: BENCH_PAIRS (default 2000) pairs per read and round, BENCH_ROUNDS (default 5).
 * Writes bench/results/mcp.json. Targets (issue 5): under 50 µs extra per call at the median, and
 * under 1.2× the /query latency.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { FenecDatabase, type ExecuteOptions } from '../node/database.js';
import { mcpEndpoint } from '../node/mcp/serve-mcp.js';
import { parseStatement } from '../shared/fenecql/parser.js';
import { createLogger } from '../shared/logger.js';
import { intEnv, Programs, progress, verdict, writeResults } from './harness.js';
import { median, percentile, spread } from './stats.js';

const PAIRS = intEnv('BENCH_PAIRS', 2000, 1);
const ROUNDS = intEnv('BENCH_ROUNDS', 5, 1);
const WARM_UP_PAIRS = 300;
const ROWS = 10_000;
const TOKEN = randomBytes(16).toString('hex');
const TARGET_EXTRA_US = 50;
const TARGET_RATIO = 1.2;
/** A vocabulary of 2 000 words, drawn by a Zipf-like law: a word searched for matches tens of rows, not all. */
const VOCABULARY = Array.from({ length: 2000 }, (_, i) => `w${i.toString(36)}`);
/** Words of middling frequency: what the bench searches for. */
const WORDS = VOCABULARY.slice(40, 52);
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'mcp-bench', version: '1' },
};

/** One read, as the two requests that ask for the same thing; `i` picks the row or the words. */
interface Case {
  readonly name: string;
  readonly statement: string;
  readonly params: (i: number) => unknown[];
  readonly tool: string;
  readonly args: (i: number) => Record<string, unknown>;
  readonly revision: '2026-07-28' | '2025-11-25';
}

const rowId = (i: number): number => 1 + ((i * 7919) % ROWS);
const word = (i: number): string => WORDS[i % WORDS.length]!;

/** A row by id through the `query` tool, sent as a client of `revision` sends it. */
const rowById = (name: string, revision: Case['revision']): Case => ({
  name,
  statement: 'get docs where id = $1',
  params: (i) => [rowId(i)],
  tool: 'query',
  args: (i) => ({ statement: 'get docs where id = $1', params: [rowId(i)] }),
  revision,
});

const CASES: readonly Case[] = [
  rowById('row by id', '2026-07-28'),
  rowById('row by id (2025-11-25)', '2025-11-25'),
  {
    name: 'search, 10 rows',
    statement: 'get docs match * $1 limit 10',
    params: (i) => [word(i)],
    tool: 'search',
    args: (i) => ({ collection: 'docs', text: word(i) }),
    revision: '2026-07-28',
  },
  {
    name: 'recall, 5 memories',
    statement: 'get memories select text, tags, at match text $1 limit 5',
    params: (i) => [word(i)],
    tool: 'recall',
    args: (i) => ({ text: word(i) }),
    revision: '2026-07-28',
  },
];

interface Result {
  readonly read: string;
  readonly queryP50Us: number;
  readonly toolP50Us: number;
  readonly queryP99Us: number;
  readonly toolP99Us: number;
  /** The median of the pairs' differences (tool − /query), in µs. */
  readonly extraUs: number;
  readonly ratio: number;
  /** Per round: [lowest, highest] of the rounds' extra µs. */
  readonly extraSpreadUs: [number, number];
  /** The same read in this process, without HTTP: McpEndpoint.handle against executeStatement + JSON.stringify. */
  readonly inProcessStatementUs: number;
  readonly inProcessToolUs: number;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-mcp-bench-'));
  const file = path.join(dir, 'bench.fenec');
  const programs = new Programs();
  try {
    seed(file);
    const server = await programs.start('dist/node/cli/fenec-server.js', [
      '--file',
      file,
      '--port',
      '0',
      '--http-token',
      TOKEN,
      '--mcp-memory',
      'memories',
      '--sweep-interval',
      '0',
    ]);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const results: Result[] = [];
    for (const read of CASES) {
      const send = {
        query: (i: number) =>
          post(agent, server.url, '/query', { statement: read.statement, params: read.params(i) }, {}),
        tool: (i: number) => post(agent, server.url, '/_mcp', ...toolRequest(read, i)),
      };
      await check(read, send);
      progress(read.name);
      for (let i = 0; i < WARM_UP_PAIRS; i++) await pair(send, i);
      const rounds: { query: number[]; tool: number[]; diffs: number[] }[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const times = { query: [] as number[], tool: [] as number[], diffs: [] as number[] };
        for (let i = 0; i < PAIRS; i++) {
          const [q, t] = await pair(send, round * PAIRS + i);
          times.query.push(q);
          times.tool.push(t);
          times.diffs.push(t - q);
        }
        rounds.push(times);
      }
      const all = (key: 'query' | 'tool' | 'diffs') => rounds.flatMap((r) => r[key]);
      const inProcess = inProcessCosts(file, read);
      results.push({
        read: read.name,
        queryP50Us: median(all('query')),
        toolP50Us: median(all('tool')),
        queryP99Us: percentile(all('query'), 0.99),
        toolP99Us: percentile(all('tool'), 0.99),
        extraUs: median(all('diffs')),
        ratio: median(all('tool')) / median(all('query')),
        extraSpreadUs: spread(rounds.map((r) => median(r.diffs))),
        inProcessStatementUs: inProcess.statement,
        inProcessToolUs: inProcess.tool,
      });
    }
    agent.destroy();
    report(results);
  } finally {
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** 10 000 documents and 10 000 memories, written in this process before the server takes the file. */
function seed(file: string): void {
  const db = FenecDatabase.open({ file, readOnly: false, program: 'mcp-bench', sweepIntervalMs: 0 });
  db.execute('create collection docs (title text @text, body text @text, year int @sorted)');
  db.execute(
    'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms))',
  );
  const insertDoc = 'insert into docs {title: $1, body: $2, year: $3}';
  const insertMemory = 'insert into memories {text: $1, tags: $2, at: now(), expires: null}';
  let state = 42;
  const random = (): number => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const zipf = (): string =>
    VOCABULARY[Math.min(VOCABULARY.length - 1, Math.floor(Math.exp(random() * Math.log(VOCABULARY.length + 1)) - 1))]!;
  for (let i = 0; i < ROWS; i++) {
    const words = Array.from({ length: 12 }, zipf);
    db.execute(insertDoc, [`doc ${i} ${words[0]}`, words.join(' '), 2000 + (i % 25)]);
    db.execute(insertMemory, [`memory ${i}: ${words.slice(0, 6).join(' ')}`, [words[1]!]]);
  }
  db.close();
}

function toolRequest(read: Case, i: number): [string, Record<string, string>] {
  if (read.revision === '2025-11-25') {
    const body = { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: read.tool, arguments: read.args(i) } };
    return [JSON.stringify(body), { 'mcp-protocol-version': '2025-11-25' }];
  }
  const body = {
    jsonrpc: '2.0',
    id: i,
    method: 'tools/call',
    params: { name: read.tool, arguments: read.args(i), _meta: META },
  };
  return [
    JSON.stringify(body),
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': read.tool },
  ];
}

/** One request, answered; resolves with its latency in µs and its body. */
function post(
  agent: http.Agent,
  base: string,
  route: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ us: number; body: string }> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const url = new URL(route, base);
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: `Bearer ${TOKEN}`,
          'content-length': Buffer.byteLength(text),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const answer = Buffer.concat(chunks).toString();
          if (res.statusCode !== 200) return reject(new Error(`${route} answered ${res.statusCode}: ${answer}`));
          resolve({ us: (performance.now() - started) * 1000, body: answer });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

type Senders = {
  query: (i: number) => Promise<{ us: number; body: string }>;
  tool: (i: number) => Promise<{ us: number; body: string }>;
};

/** The two requests of pair i, /query first on even pairs and the tool call first on odd ones. */
async function pair(send: Senders, i: number): Promise<[query: number, tool: number]> {
  if (i % 2 === 0) {
    const q = await send.query(i);
    const t = await send.tool(i);
    return [q.us, t.us];
  }
  const t = await send.tool(i);
  const q = await send.query(i);
  return [q.us, t.us];
}

/**
 * The two answer the same rows: the tool's structured content is /query's answer, but for the cursor
 * each may carry (each bound to its own door, so the two differ; either both have one or neither).
 */
async function check(read: Case, send: Senders): Promise<void> {
  const rows = (answer: unknown) => {
    const { next_cursor: cursor, ...rest } = answer as { next_cursor?: string };
    return JSON.stringify({ ...rest, cursor: cursor !== undefined });
  };
  for (const i of [0, 1, 2]) {
    const query = JSON.parse((await send.query(i)).body) as unknown;
    const tool = JSON.parse((await send.tool(i)).body) as {
      result?: { structuredContent?: unknown; isError?: boolean };
    };
    if (tool.result?.isError !== false)
      throw new Error(`${read.name}: the tool call was refused: ${JSON.stringify(tool)}`);
    if (rows(tool.result.structuredContent) !== rows(query)) {
      throw new Error(
        `${read.name}: the tool answered otherwise than /query:\n${JSON.stringify(tool.result.structuredContent)}\n${JSON.stringify(query)}`,
      );
    }
    if ((query as { count?: number }).count === 0)
      throw new Error(`${read.name}: no rows; the bench would measure nothing`);
  }
}

/** µs per call in this process: executeStatement + JSON.stringify, and McpEndpoint.handle + JSON.stringify. */
function inProcessCosts(file: string, read: Case): { statement: number; tool: number } {
  const db = FenecDatabase.open({ file, readOnly: true, program: 'mcp-bench' });
  try {
    const endpoint = mcpEndpoint(db, {
      write: false,
      memory: 'memories',
      readOnly: true,
      logger: createLogger('mcp-bench'),
    });
    const caller = { options: {} as ExecuteOptions, scoped: false };
    const statement = parseStatement(read.statement);
    const bodies = Array.from({ length: 64 }, (_, i) => toolRequest(read, i)[0]);
    const n = Math.max(2000, PAIRS);
    const time = (run: (i: number) => void): number => {
      for (let i = 0; i < 500; i++) run(i);
      const samples: number[] = [];
      for (let r = 0; r < 5; r++) {
        const started = performance.now();
        for (let i = 0; i < n; i++) run(i);
        samples.push(((performance.now() - started) * 1000) / n);
      }
      return median(samples);
    };
    return {
      statement: time((i) => JSON.stringify(db.executeStatement(statement, read.params(i % 64)))),
      tool: time((i) => endpoint.handle(bodies[i % 64]!, caller).json),
    };
  } finally {
    db.close();
  }
}

function report(results: readonly Result[]): void {
  const f = (n: number) => n.toFixed(1);
  const lines = [
    `mcp-bench: ${ROWS} rows, ${ROUNDS} rounds of ${PAIRS} pairs per read, one client, kept-alive connection (${os.cpus().length} cores, Node.js ${process.versions.node})`,
    '',
    '| read | /query p50 µs | tool p50 µs | extra µs (p50 of pairs) | ratio | per round extra µs | /query p99 µs | tool p99 µs | in process: statement µs | in process: tool µs |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.read} | ${f(r.queryP50Us)} | ${f(r.toolP50Us)} | ${f(r.extraUs)} | ${r.ratio.toFixed(2)} | ${f(r.extraSpreadUs[0])}–${f(r.extraSpreadUs[1])} | ${f(r.queryP99Us)} | ${f(r.toolP99Us)} | ${f(r.inProcessStatementUs)} | ${f(r.inProcessToolUs)} |`,
    ),
    '',
    ...results.map((r) => {
      return `${r.read}: extra ${f(r.extraUs)} µs < ${TARGET_EXTRA_US} µs ${verdict(r.extraUs < TARGET_EXTRA_US)}; ratio ${r.ratio.toFixed(2)} < ${TARGET_RATIO} ${verdict(r.ratio < TARGET_RATIO)}`;
    }),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  writeResults('mcp', {
    date: new Date().toISOString(),
    rows: ROWS,
    pairs: PAIRS,
    rounds: ROUNDS,
    cores: os.cpus().length,
    node: process.versions.node,
    results,
  });
}

await main();
