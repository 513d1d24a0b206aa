/**
 * Every FenecQL example in docs/ sent as a reader would send it: POST /query to a real fenec-server
 * (one per page, on a fresh file), its whole answer compared with the one the page shows — a page's
 * `next_cursor` included, shown as "…" (fenecql-blocks.ts).
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { query, Sandbox, type ServerProcess } from '../integration/processes.js';
import { asShown, fenecqlExamples, figureless } from './fenecql-blocks.js';
import { embedderFlags } from '../helpers/embedder-rig.js';
import { startEmbeddingServer, type EmbeddingServer } from '../helpers/embedding-server.js';

/** The dimension of the docs' embedder: nomic-embed-text's, as the pages write it. */
const DOCS_DIMS = 768;

const DOCS = new URL('../../../docs/', import.meta.url);
const pages = readdirSync(DOCS).filter((name) => name.endsWith('.md'));

describe('the FenecQL examples in docs/', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  // Every page's server has an embedder, as a reader's would for the pages' @embed examples.
  let embedder: EmbeddingServer;
  before(async () => {
    embedder = await startEmbeddingServer({ dims: DOCS_DIMS });
  });
  after(async () => {
    await sandbox.cleanUp();
    await embedder.close();
  });

  for (const page of pages) {
    const examples = fenecqlExamples(page, readFileSync(new URL(page, DOCS), 'utf8'));
    if (examples.length === 0) continue;

    describe(page, () => {
      let server: ServerProcess;
      before(async () => {
        server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'docs.fenec'), ...embedderFlags(embedder)]);
      });

      for (const example of examples) {
        it(`line ${example.line}: ${example.statement.split('\n')[0]}`, async () => {
          const reply = await query(server.url, example.statement, example.params);
          const refused = (reply.json as { error?: { code: string } } | undefined)?.error;
          switch (example.expect.kind) {
            case 'error':
              expect(reply.status, reply.text).to.be.at.least(400);
              expect(refused?.code, 'the code it is refused with').to.equal(example.expect.code);
              break;
            case 'answer':
              expect(reply.status, reply.text).to.equal(200);
              expect(asShown(reply.json)).to.deep.equal(example.expect.answer);
              break;
            case 'shape':
              expect(reply.status, reply.text).to.equal(200);
              expect(figureless(asShown(reply.json))).to.deep.equal(figureless(example.expect.answer));
              break;
            case 'ok':
              expect(reply.status, reply.text).to.equal(200);
              break;
          }
        });
      }
    });
  }

  it('finds examples to run', () => {
    expect(
      pages.flatMap((page) => fenecqlExamples(page, readFileSync(new URL(page, DOCS), 'utf8'))),
    ).to.have.length.above(20);
  });
});
