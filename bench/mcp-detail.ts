/**
 * `make mcp-detail`: the bytes a 10-row search answers at each `detail` — `ids`, `fields` (the
 * default) and `full` — over rows shaped like an agent's documents: a title, a body of about 1 000
 * characters, tags, a year and a 384-dim embedding. Counts bytes, not time: it may run beside
 * anything. Prints a table and writes bench/results/mcp-detail.json.
 *
 * Two figures a level: the text a model reads (the tool result's text content, marked as data) and
 * the whole JSON-RPC answer (that text and the structured content beside it).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FenecDatabase } from '../node/database.js';
import { mcpEndpoint } from '../node/mcp/serve-mcp.js';
import { createLogger } from '../shared/logger.js';
import { writeResults } from './harness.js';
import { seededRandom } from './search-data.js';

const ROWS = 500;
const DIMS = 384;
const LEVELS = ['ids', 'fields', 'full'] as const;

const WORDS =
  'agent memory deploy staging region login page token policy search vector index cursor query collection field schema answer model context tool call row page write read user session build release friday weekly night backup restore'.split(
    ' ',
  );

export interface DetailBytes {
  readonly detail: (typeof LEVELS)[number];
  /** The text content a model reads. */
  readonly text: number;
  /** The whole JSON-RPC answer. */
  readonly answer: number;
}

/** The bytes of the same 10-row search at each level, over a fresh file in `dir`. */
export function measureDetail(dir: string): DetailBytes[] {
  const next = seededRandom(13);
  const pick = () => WORDS[Math.floor(next() * WORDS.length)]!;
  const sentence = (n: number) => Array.from({ length: n }, pick).join(' ');
  const db = FenecDatabase.open({ file: path.join(dir, 'detail.fenec'), readOnly: false, program: 'mcp-detail' });
  try {
    db.execute(
      `create collection docs (title text @text, body text @text, tags [text], year int @sorted, embedding vector<${DIMS}> @hnsw(cosine))`,
    );
    for (let i = 0; i < ROWS; i++) {
      const embedding = Array.from({ length: DIMS }, () => Math.round((next() * 2 - 1) * 1e4) / 1e4);
      db.execute('insert into docs {title: $1, body: $2, tags: $3, year: $4, embedding: $5}', [
        sentence(6),
        sentence(150),
        [pick(), pick()],
        2000 + (i % 26),
        embedding,
      ]);
    }
    const endpoint = mcpEndpoint(db, {
      write: false,
      memory: undefined,
      readOnly: false,
      logger: createLogger('mcp-detail'),
    });
    return LEVELS.map((detail) => {
      const message = {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'search', arguments: { collection: 'docs', text: 'deploy', limit: 10, detail } },
      };
      const reply = endpoint.handle(JSON.stringify(message), { options: {}, scoped: false });
      const result = (
        JSON.parse(reply.json!) as { result: { content: { text: string }[]; structuredContent: { count: number } } }
      ).result;
      if (result.structuredContent.count !== 10)
        throw new Error(`search at detail ${detail} answered ${result.structuredContent.count} rows, not 10`);
      return { detail, text: Buffer.byteLength(result.content[0]!.text), answer: Buffer.byteLength(reply.json!) };
    });
  } finally {
    db.close();
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-detail-'));
  try {
    const figures = measureDetail(dir);
    const fields = figures.find((f) => f.detail === 'fields')!;
    console.log('detail   text (model reads)   whole answer   text vs fields');
    for (const f of figures)
      console.log(
        `${f.detail.padEnd(8)} ${String(f.text).padStart(10)} B ${String(f.answer).padStart(14)} B ${(f.text / fields.text).toFixed(2).padStart(12)}`,
      );
    writeResults('mcp-detail', { rows: ROWS, dims: DIMS, limit: 10, figures });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
