/**
 * The embedder's flags at start, over real processes and the tests' own embedding server on 127.0.0.1: the probe
 * learns the dimension; an embedder that is away or answers nonsense stops the start with exit status 2 and a line
 * that says why (fenec-server with --file and --data-dir, fenec mcp --file); --embedder-lazy starts anyway and
 * probes when a statement needs it; the key from FENEC_EMBEDDER_API_KEY is sent and never written anywhere.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { EmbedderRig, embedderFlags } from '../../helpers/embedder-rig.js';
import { closedPortUrl, startEmbeddingServer } from '../../helpers/embedding-server.js';
import { FENEC, FENEC_SERVER, query } from '../processes.js';

const KEY = 'sk-test-embedder-key-0123456789';

describe('fenec-server and fenec mcp with --embedder-url', function () {
  this.timeout(60_000);
  const rig = new EmbedderRig({ embedder: { dims: 24 }, server: false });
  const { sandbox } = rig;

  beforeEach(() => rig.open());
  afterEach(() => rig.close());

  const file = (): string => path.join(sandbox.dir(), 'e.fenec');
  const flags = (url: string, model = rig.embedder.model): string[] => embedderFlags({ url, model });

  it('probes the embedder once at start and names its model and dimension in the startup line', async () => {
    const server = await sandbox.startServer(['--file', file(), ...flags(rig.embedder.url)]);
    expect(rig.embedder.requests).to.have.length(1);
    const line = server
      .stderr()
      .split('\n')
      .find((l) => l.includes('"listening"'))!;
    expect(JSON.parse(line).embedder).to.include({ model: rig.embedder.model, dimension: 24, key: 'none' });
  });

  for (const where of ['--file', '--data-dir'] as const) {
    it(`refuses to start (${where}) when the embedder is away: exit 2, the URL and a hint`, async () => {
      const away = await closedPortUrl();
      const target = where === '--file' ? file() : sandbox.dir();
      const done = await sandbox.run(FENEC_SERVER, ['--port', '0', where, target, ...flags(away)]);
      expect(done.code).to.equal(2);
      expect(done.stderr).to.match(/embedder_unavailable: the start probe of http:\/\/127\.0\.0\.1:\d+\/v1/);
      expect(done.stderr).to.include('ECONNREFUSED');
      expect(done.stderr).to.include('--embedder-lazy');
    });
  }

  it('refuses to start when the embedder answers nonsense, quoting it', async () => {
    rig.embedder.fault = { kind: 'answer', answer: () => ({ vectors: 'none here' }) };
    const done = await sandbox.run(FENEC_SERVER, ['--port', '0', '--file', file(), ...flags(rig.embedder.url)]);
    expect(done.code).to.equal(2);
    expect(done.stderr).to.include('embedder_failed');
    expect(done.stderr).to.include('no "data" list');
  });

  it('refuses a model the embedder does not serve, with the 404 it answered', async () => {
    const done = await sandbox.run(FENEC_SERVER, ['--port', '0', '--file', file(), ...flags(rig.embedder.url, 'nope')]);
    expect(done.code).to.equal(2);
    expect(done.stderr).to.include('answered 404');
  });

  it('refuses --embedder-url without --embedder-model, and the reverse, as usage errors', async () => {
    const a = await sandbox.run(FENEC_SERVER, ['--file', file(), '--embedder-url', rig.embedder.url]);
    expect(a.code).to.equal(2);
    expect(a.stderr).to.include('--embedder-model');
    const b = await sandbox.run(FENEC_SERVER, ['--file', file(), '--embedder-model', 'm']);
    expect(b.code).to.equal(2);
    expect(b.stderr).to.include('--embedder-url');
  });

  it('fenec mcp --file refuses to start when the embedder is away (exit 2)', async () => {
    const away = await closedPortUrl();
    const done = await sandbox.run(FENEC, ['mcp', '--file', file(), ...flags(away)], {}, { stdin: '' });
    expect(done.code).to.equal(2);
    expect(done.stderr).to.include('embedder_unavailable');
  });

  it('with --embedder-lazy starts while the embedder is away, refuses 503 + Retry-After, then embeds once it is up', async () => {
    const away = await closedPortUrl();
    const server = await sandbox.startServer([
      '--file',
      file(),
      ...flags(away),
      '--embedder-retries',
      '0',
      '--embedder-lazy',
    ]);
    expect(server.stderr()).to.include('starting anyway (--embedder-lazy)');
    const refused = await query(server.url, 'create collection n (t text, v vector<24> @embed(t))');
    expect(refused.status, refused.text).to.equal(503);
    expect(refused.json.error.code).to.equal('embedder_unavailable');
    expect(refused.headers['retry-after']).to.match(/^\d+$/);
    const late = await startEmbeddingServer({ dims: 24, port: Number(new URL(away).port) });
    try {
      const made = await query(server.url, 'create collection n (t text, v vector<24> @embed(t))');
      expect(made.status, made.text).to.equal(200);
      const written = await query(server.url, 'insert into n {t: "hello"}');
      expect(written.status, written.text).to.equal(200);
      expect(late.requests.map((r) => r.input.length)).to.deep.equal([2, 1]);
    } finally {
      await late.close();
    }
  });

  it('sends FENEC_EMBEDDER_API_KEY as a bearer token and never writes it out, not even when it is refused', async () => {
    const keyed = await startEmbeddingServer({ dims: 24, apiKey: KEY });
    try {
      const server = await sandbox.startServer(['--file', file(), ...embedderFlags(keyed)], {
        FENEC_EMBEDDER_API_KEY: KEY,
      });
      expect(keyed.requests[0]!.authorization).to.equal(`Bearer ${KEY}`);
      await query(server.url, 'create collection n (t text, v vector<24> @embed(t))');
      expect((await query(server.url, 'insert into n {t: "hello"}')).status).to.equal(200);
      keyed.fault = { kind: 'status', status: 500, times: 10, body: `upstream echoed Authorization: Bearer ${KEY}` };
      const failed = await query(server.url, 'insert into n {t: "again"}');
      expect(failed.status).to.equal(502);
      expect(failed.text).to.not.include(KEY);
      expect(failed.text).to.include('[key]');
      expect(server.stderr()).to.not.include(KEY);
      expect(server.stderr()).to.include('from FENEC_EMBEDDER_API_KEY');

      const wrong = await sandbox.run(FENEC_SERVER, ['--port', '0', '--file', file(), ...embedderFlags(keyed)], {
        FENEC_EMBEDDER_API_KEY: `${KEY}-wrong`,
      });
      expect(wrong.code).to.equal(2);
      expect(wrong.stderr).to.include('refused the key (401)');
      expect(wrong.stderr + wrong.stdout).to.not.include(KEY);
    } finally {
      await keyed.close();
    }
  });
});
