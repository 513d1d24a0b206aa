/**
 * What make before-bench and make peers-bench share of a fenec-server under measure, asked from outside over
 * HTTP by one client: the `docs` rows loaded as statements of ROWS_PER_INSERT rows until the vector index holds
 * them, the reads of issue 29 (`near`, filtered `near`, `match`, `fuse`, top 10), and its process's RSS and CPU
 * from /proc.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import { performance } from 'node:perf_hooks';
import { cpuSeconds, type Program } from './harness.js';
import { DIMS, GROUP, K, vectorLiteral, zipfWorkload, type Workload } from './search-data.js';

export const DOCS = 'create collection docs (body text @text, vec vector<384> @hnsw(cosine), grp int @hash)';
/** Rows per insert statement: each under the statement limit of 1 048 576 characters. */
export const ROWS_PER_INSERT = 100;
export const READS = {
  near: `get docs near vec $1 limit ${K}`,
  'filtered near': `get docs near vec $1 where grp = ${GROUP} limit ${K}`,
  match: `get docs match body $1 limit ${K}`,
  fuse: `get docs match body $1 near vec $2 fuse limit ${K}`,
} as const;
export type ReadName = keyof typeof READS;
/** How long the index may take to hold every row once they are in. */
const INDEX_WAIT_MS = 600_000;

export interface Server {
  readonly name: string;
  readonly program: Program;
  /** Where its statements go. */
  readonly query: string;
}

/** The rows and queries: Zipf text over 5 000 words and 384-dim vectors around 1 000 centres, seed 42. */
export function docsWorkload(rows: number, queries: number): Workload {
  return zipfWorkload({
    seed: 42,
    rows,
    queries,
    vocabulary: 5_000,
    zipfExponent: 1,
    minWords: 8,
    maxWords: 20,
    dims: DIMS,
    clusters: 1_000,
    spread: 0.5,
  });
}

/** Makes `docs` and loads `rows` rows, then waits until its vector index holds them; the seconds it took. */
export async function loadDocs(server: Server, work: Workload, rows: number, token: string): Promise<number> {
  const t0 = performance.now();
  await statement(server, DOCS, token);
  for (let start = 0; start < rows; start += ROWS_PER_INSERT) {
    const batch: string[] = [];
    for (let i = start; i < Math.min(rows, start + ROWS_PER_INSERT); i++) {
      batch.push(
        `{body: ${JSON.stringify(work.bodies[i])}, vec: ${vectorLiteral(work.vectors, i, DIMS)}, grp: ${i % 100}}`,
      );
    }
    await statement(server, `insert into docs [${batch.join(', ')}]`, token);
  }
  const deadline = Date.now() + INDEX_WAIT_MS;
  while (!indexed(await statement(server, 'schema docs', token))) {
    if (Date.now() > deadline) throw new Error(`${server.name}: the index did not hold every row in time`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await untilIdle(server, deadline);
  return (performance.now() - t0) / 1000;
}

/**
 * Once the server's threads take under 5 % of a core for a second: the build before tells nothing of its index,
 * and any server may still store it after it answers from it.
 */
export async function untilIdle(server: Server, deadline = Date.now() + INDEX_WAIT_MS): Promise<void> {
  for (;;) {
    if (Date.now() > deadline) throw new Error(`${server.name}: the server did not go idle in time`);
    const cpu = cpuSeconds(server.program.child.pid!);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    if (cpuSeconds(server.program.child.pid!) - cpu < 0.05) return;
  }
}

/** Whether `schema docs` says its vector index holds every row, in either build's words. */
function indexed(schema: any): boolean {
  const fields: any[] = schema.collections?.[0]?.fields ?? schema.fields ?? [];
  const indexes = fields.map((f) => f.index).filter((i) => i !== undefined && typeof i === 'object');
  return indexes.every(
    (i) => (i.pending ?? 0) === 0 && i.building !== true && (i.state === undefined || i.state === 'ready'),
  );
}

export function rssMb(pid: number): number {
  const line = fs
    .readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One request with `token` over a kept-alive connection (one client); its answer's text. Throws on any but 2xx. */
export function post(url: string, method: string, body: unknown, token: string): Promise<string> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const answer = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode! >= 300) reject(new Error(`${method} ${url} → ${res.statusCode} ${answer.slice(0, 500)}`));
          else resolve(answer);
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

export async function statement(server: Server, text: string, token: string): Promise<any> {
  return JSON.parse(await post(server.query, 'POST', { statement: text, params: [] }, token));
}
