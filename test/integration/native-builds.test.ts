/**
 * FENEC_FTS5_EXTENSION and FENEC_FAISS_ADDON (node/native-builds.ts): read by the CLIs, handed to the worker
 * threads, and a build at the named path is the one loaded.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FENEC, query, Sandbox } from './processes.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXTENSION = path.join(ROOT, 'native/fts5/build/fenec_fts5.so');
const ADDON = path.join(ROOT, 'native/faiss/build/Release/fenec_faiss.node');

describe('the native builds named by FENEC_FTS5_EXTENSION and FENEC_FAISS_ADDON', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  after(() => sandbox.cleanUp());

  it('loads the SQLite extension from FENEC_FTS5_EXTENSION, and refuses a path with nothing there', async () => {
    const dir = sandbox.dir();
    // The extension's entry point is named after its file, so its copy keeps the name.
    fs.mkdirSync(path.join(dir, 'elsewhere'));
    const copy = path.join(dir, 'elsewhere/fenec_fts5.so');
    fs.copyFileSync(EXTENSION, copy);
    const file = path.join(dir, 'notes.fenec');
    const created = await sandbox.run(FENEC, ['query', '--file', file, 'create collection notes (body text @text)'], {
      FENEC_FTS5_EXTENSION: copy,
    });
    expect(created.code, created.stderr).to.equal(0);

    const missing = path.join(dir, 'nowhere/fenec_fts5.so');
    const refused = await sandbox.run(FENEC, ['query', '--file', file, 'list collections'], {
      FENEC_FTS5_EXTENSION: missing,
    });
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.include(missing).and.to.include('FENEC_FTS5_EXTENSION');
  });

  it("hands FENEC_FAISS_ADDON to fenec-server's worker threads", async () => {
    const dir = sandbox.dir();
    const missing = path.join(dir, 'nowhere/fenec_faiss.node');
    const server = await sandbox.startServer(['--file', path.join(dir, 'v.fenec')], { FENEC_FAISS_ADDON: missing });
    // A one-file server runs every statement on its worker thread: the index the collection needs is made there.
    const refused = await query(server.url, 'create collection docs (vec vector<3> @hnsw(cosine))');
    expect(refused.json.error.code).to.equal('vector_engine');
    expect(refused.json.error.message).to.include('FENEC_FAISS_ADDON').and.to.include(missing);

    const copy = path.join(dir, 'fenec_faiss.node');
    fs.copyFileSync(ADDON, copy);
    const served = await sandbox.startServer(['--file', path.join(dir, 'w.fenec')], { FENEC_FAISS_ADDON: copy });
    const created = await query(served.url, 'create collection docs (vec vector<3> @hnsw(cosine))');
    expect(created.status, created.text).to.equal(200);
    const inserted = await query(served.url, 'insert into docs {vec: [1, 0, 0]}');
    expect(inserted.status, inserted.text).to.equal(200);
    const maps = fs.readFileSync(`/proc/${served.pid}/maps`, 'utf8');
    expect(maps).to.include(copy);
    expect(maps).to.not.include(ADDON);
  });
});
