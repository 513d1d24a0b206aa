import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { expect } from 'chai';
import { query, request, Sandbox, FENEC, threadStat, type ServerProcess } from './processes.js';

const TOKEN = 'test-token-8c1f';
const CORS = 'https://app.example.com';

describe('fenec-server over HTTP', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  /** No token: answers only a Host naming this machine. A 4 KB body limit. */
  let open: ServerProcess;
  /** With a token and an --http-cors origin. */
  let guarded: ServerProcess;
  /** With a token and --http-read-only, over a file with a collection and a row. */
  let readOnly: ServerProcess;

  before(async () => {
    const dir = sandbox.dir();
    const readOnlyFile = path.join(dir, 'read-only.fenec');
    for (const statement of ['create collection notes (title text)', 'insert into notes {title: "kept"}']) {
      const done = await sandbox.run(FENEC, ['query', '--file', readOnlyFile, statement]);
      expect(done.code, done.stderr).to.equal(0);
    }
    [open, guarded, readOnly] = await Promise.all([
      sandbox.startServer(['--file', path.join(dir, 'open.fenec'), '--max-body', '4kb']),
      sandbox.startServer(['--file', path.join(dir, 'guarded.fenec'), '--http-cors', CORS], { FENEC_TOKEN: TOKEN }),
      sandbox.startServer(['--file', readOnlyFile, '--http-token', TOKEN, '--http-read-only']),
    ]);
    expect((await query(open.url, 'create collection notes (title text)')).status).to.equal(200);
    expect((await query(guarded.url, 'create collection notes (title text)', [], TOKEN)).status).to.equal(200);
    expect((await query(open.url, 'insert into notes {title: "first"}')).json).to.deep.equal({ count: 1, ids: [1] });
  });

  after(() => sandbox.cleanUp());

  describe('POST /query', () => {
    it('answers a statement with its JSON', async () => {
      const reply = await query(open.url, 'get notes where id = $1', [1]);
      expect(reply.status).to.equal(200);
      expect(reply.headers['content-type']).to.equal('application/json');
      expect(reply.json).to.deep.equal({ rows: [{ id: 1, title: 'first' }], count: 1 });
    });

    it('refuses a body that is not JSON with bad_json (400)', async () => {
      const reply = await request(open.url, { method: 'POST', path: '/query', body: '{"statement": "get notes"' });
      expect(reply.status).to.equal(400);
      expect(reply.json.error.code).to.equal('bad_json');
    });

    it('refuses JSON of another shape with bad_request (400), naming what is wrong', async () => {
      const cases: Array<[string, string]> = [
        ['["get notes"]', 'an array'],
        ['{"params": [1]}', '"statement" is missing'],
        ['{"statement": 7}', '"statement" must be a string'],
        ['{"statement": "get notes", "params": {"1": 2}}', '"params" must be an array'],
        ['{"statement": "get notes", "param": [1]}', 'unknown field "param"'],
      ];
      for (const [body, says] of cases) {
        const reply = await request(open.url, { method: 'POST', path: '/query', body });
        expect(reply.status, body).to.equal(400);
        expect(reply.json.error.code, body).to.equal('bad_request');
        expect(reply.json.error.message, body).to.include(says);
      }
    });

    it('refuses a statement that does not parse with syntax_error (400) and its line and column', async () => {
      const reply = await query(open.url, 'get notes\nwhere id = = 1');
      expect(reply.status).to.equal(400);
      expect(reply.json.error.code).to.equal('syntax_error');
      expect(reply.json.error.line).to.equal(2);
      expect(reply.json.error.column).to.be.a('number');
    });

    it('refuses a statement on an unknown collection with unknown_collection (404)', async () => {
      const reply = await query(open.url, 'get nothing');
      expect(reply.status).to.equal(404);
      expect(reply.json.error.code).to.equal('unknown_collection');
    });

    it('refuses a body over --max-body with payload_too_large (413), declared or chunked', async () => {
      const body = JSON.stringify({ statement: 'get notes', params: ['x'.repeat(5000)] });
      const declared = await request(open.url, { method: 'POST', path: '/query', body });
      expect(declared.status).to.equal(413);
      expect(declared.json.error.code).to.equal('payload_too_large');
      expect(declared.headers.connection).to.equal('close');
      const chunked = await request(open.url, { method: 'POST', path: '/query', body, chunked: true });
      expect(chunked.status).to.equal(413);
      expect(chunked.json.error.code).to.equal('payload_too_large');
    });

    it('refuses a body that is not UTF-8 with bad_json naming the byte, where it was stored with U+FFFD in place', async () => {
      const before = (await query(open.url, 'get notes count')).json;
      const body = Buffer.concat([
        Buffer.from('{"statement": "insert into notes {title: $1}", "params": ["caf'),
        Buffer.from([0xe9]),
        Buffer.from('"]}'),
      ]);
      const reply = await request(open.url, { method: 'POST', path: '/query', body });
      expect(reply.status, reply.text).to.equal(400);
      expect(reply.json.error.code).to.equal('bad_json');
      expect(reply.json.error.message).to.contain(`byte ${body.indexOf(0xe9)} (0xe9) begins no character`);
      expect(reply.json.error.hint).to.contain('iconv');
      expect((await query(open.url, 'get notes count')).json).to.deep.equal(before);
    });

    it('refuses a compressed body with unsupported_encoding (415), writing nothing; takes Content-Encoding: identity', async () => {
      const insert = JSON.stringify({ statement: 'insert into notes {title: "zipped"}' });
      const before = (await query(open.url, 'get notes count')).json;
      for (const [encoding, body] of [
        ['gzip', zlib.gzipSync(insert)],
        ['br', insert],
        ['deflate, gzip', insert],
      ] as const) {
        const reply = await request(open.url, {
          method: 'POST',
          path: '/query',
          body,
          headers: { 'content-encoding': encoding },
        });
        expect(reply.status, reply.text).to.equal(415);
        expect(reply.json.error.code).to.equal('unsupported_encoding');
        expect(reply.json.error.message).to.contain(`Content-Encoding ${JSON.stringify(encoding)}`);
        expect(reply.json.error.hint).to.contain('without a Content-Encoding header');
        expect(reply.headers.connection).to.equal('close');
      }
      expect((await query(open.url, 'get notes count')).json).to.deep.equal(before);
      const identity = await request(open.url, {
        method: 'POST',
        path: '/query',
        body: JSON.stringify({ statement: 'get notes count' }),
        headers: { 'content-encoding': 'identity' },
      });
      expect(identity.json).to.deep.equal(before);
    });

    it('takes a large body whole, declared or chunked, and refuses one that outgrows the limit on the way', async () => {
      // Past 64 KB a body is written into memory shared with the worker as it comes (handler.ts):
      // every byte of it must arrive, in order, whichever way it was sent.
      const title = (n: number): string => `${n}:${'abcdefghij'.repeat(40)}:${n}`;
      const rows = (from: number): { title: string }[] =>
        Array.from({ length: 1000 }, (_, i) => ({ title: title(from + i) }));
      for (const [from, chunked] of [
        [1000, false],
        [2000, true],
      ] as const) {
        const body = JSON.stringify({ statement: 'insert into notes $1', params: [rows(from)] });
        expect(body.length).to.be.above(400_000);
        const reply = await request(guarded.url, {
          method: 'POST',
          path: '/query',
          body,
          chunked,
          headers: { authorization: `Bearer ${TOKEN}` },
        });
        expect(reply.status, reply.text).to.equal(200);
        expect(reply.json.count).to.equal(1000);
      }
      const read = await query(guarded.url, 'get notes where title like "%:abcdefghij%" order id', [], TOKEN);
      expect(read.json.rows.map((row: { title: string }) => row.title)).to.deep.equal(
        [...rows(1000), ...rows(2000)].map((row) => row.title),
      );
      const tooLarge = JSON.stringify({
        statement: 'insert into notes $1',
        params: [[...rows(3000), ...rows(4000), ...rows(5000)]],
      });
      const refused = await request(guarded.url, {
        method: 'POST',
        path: '/query',
        body: tooLarge,
        chunked: true,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(refused.status).to.equal(413);
      expect(refused.json.error.code).to.equal('payload_too_large');
      expect(
        (await query(guarded.url, 'get notes where title like "%:abcdefghij%" count', [], TOKEN)).json.count,
      ).to.equal(2000);
    });
  });

  describe('the token', () => {
    it('is required: none gives unauthorized (401)', async () => {
      const reply = await query(guarded.url, 'schema');
      expect(reply.status).to.equal(401);
      expect(reply.json.error.code).to.equal('unauthorized');
      expect(reply.headers['www-authenticate']).to.equal('Bearer');
    });

    it("must be the server's: another gives invalid_token (401)", async () => {
      const reply = await query(guarded.url, 'schema', [], 'not-the-token');
      expect(reply.status).to.equal(401);
      expect(reply.json.error.code).to.equal('invalid_token');
    });

    it('lets a request through with the token from FENEC_TOKEN', async () => {
      const reply = await query(guarded.url, 'schema', [], TOKEN);
      expect(reply.status).to.equal(200);
      expect(reply.json).to.have.property('collections');
    });
  });

  describe('--http-read-only', () => {
    it('refuses an insert with read_only (403)', async () => {
      const reply = await query(readOnly.url, 'insert into notes {title: "no"}', [], TOKEN);
      expect(reply.status).to.equal(403);
      expect(reply.json.error.code).to.equal('read_only');
    });

    it('answers a get', async () => {
      const reply = await query(readOnly.url, 'get notes', [], TOKEN);
      expect(reply.status).to.equal(200);
      expect(reply.json).to.deep.equal({ rows: [{ id: 1, title: 'kept' }], count: 1 });
    });
  });

  describe('Host and Origin', () => {
    const get = { method: 'POST', path: '/query', body: '{"statement": "get notes count"}' };

    it('without a token, refuses a Host that does not name this machine with forbidden_host (403)', async () => {
      const reply = await request(open.url, { ...get, headers: { host: 'rebound.example.com:8080' } });
      expect(reply.status).to.equal(403);
      expect(reply.json.error.code).to.equal('forbidden_host');
    });

    it('without a token, answers localhost, 127.0.0.1, [::1] and *.localhost, with or without a port', async () => {
      for (const host of ['localhost', 'localhost:8080', '127.0.0.1:1', '[::1]:8080', 'app.localhost']) {
        const reply = await request(open.url, { ...get, headers: { host } });
        expect(reply.status, host).to.equal(200);
      }
    });

    it('with a token, answers any Host', async () => {
      const reply = await request(guarded.url, {
        ...get,
        headers: { host: 'db.example.com', authorization: `Bearer ${TOKEN}` },
      });
      expect(reply.status).to.equal(200);
    });

    it('refuses a foreign Origin with forbidden_origin (403) before looking at the token', async () => {
      const noToken = await request(guarded.url, { ...get, headers: { origin: 'https://evil.example' } });
      expect(noToken.status).to.equal(403);
      expect(noToken.json.error.code).to.equal('forbidden_origin');
      const withToken = await request(guarded.url, {
        ...get,
        headers: { origin: 'https://evil.example', authorization: `Bearer ${TOKEN}` },
      });
      expect(withToken.status).to.equal(403);
      expect(withToken.json.error.code).to.equal('forbidden_origin');
    });

    it("answers the server's own origin, and the --http-cors origin with CORS headers", async () => {
      const host = new URL(open.url).host;
      const own = await request(open.url, { ...get, headers: { origin: `http://${host}` } });
      expect(own.status).to.equal(200);
      const cors = await request(guarded.url, { ...get, headers: { origin: CORS, authorization: `Bearer ${TOKEN}` } });
      expect(cors.status).to.equal(200);
      expect(cors.headers['access-control-allow-origin']).to.equal(CORS);
      const preflight = await request(guarded.url, { method: 'OPTIONS', path: '/query', headers: { origin: CORS } });
      expect(preflight.status).to.equal(204);
      expect(preflight.headers['access-control-allow-headers']).to.include('authorization');
    });
  });

  describe('routes', () => {
    it('answers an unknown route with not_found (404) as JSON', async () => {
      const reply = await request(open.url, { path: '/notes' });
      expect(reply.status).to.equal(404);
      expect(reply.json.error.code).to.equal('not_found');
    });

    it('lists every route of its table in a 404, and points a tenant route to a tenant node', async () => {
      const reply = await request(open.url, { path: '/notes' });
      expect(reply.json.error.message).to.equal(
        'no route GET "/notes"; this server answers POST /query, GET|POST /_revocations, GET|HEAD /_health, ' +
          'GET|HEAD /_metrics, GET|HEAD /_console/*',
      );
      const method = await request(open.url, { method: 'DELETE', path: '/_revocations' });
      expect(method.json.error.message).to.equal('/_revocations takes GET, POST, not DELETE');
      expect(method.headers.allow).to.equal('GET, POST, OPTIONS');
    });

    it('answers a known route asked with the wrong method with 405 and Allow', async () => {
      const reply = await request(open.url, { path: '/query' });
      expect(reply.status).to.equal(405);
      expect(reply.json.error.code).to.equal('method_not_allowed');
      expect(reply.headers.allow).to.include('POST');
    });

    it('answers GET /_health with {"status":"ok"}, without a token and from any Host', async () => {
      const reply = await request(guarded.url, { path: '/_health', headers: { host: 'lb.internal' } });
      expect(reply.status).to.equal(200);
      expect(reply.json).to.deep.equal({ status: 'ok' });
    });

    it('serves GET /_metrics with the token only, counting requests by route and status', async () => {
      expect((await request(guarded.url, { path: '/_metrics' })).status).to.equal(401);
      await query(guarded.url, 'get nosuchcollection', [], TOKEN);
      await request(guarded.url, { path: '/elsewhere', headers: { authorization: `Bearer ${TOKEN}` } });
      const reply = await request(guarded.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(reply.status).to.equal(200);
      expect(reply.headers['content-type']).to.include('text/plain');
      expect(reply.text).to.match(/^fenec_http_requests_total\{route="\/query",status="200"\} [1-9]/m);
      expect(reply.text).to.match(/^fenec_http_requests_total\{route="\/query",status="404"\} 1$/m);
      expect(reply.text).to.match(/^fenec_http_requests_total\{route="\/query",status="401"\} [1-9]/m);
      expect(reply.text).to.match(/^fenec_http_requests_total\{route="other",status="404"\} 1$/m);
      expect(reply.text).to.match(/^fenec_http_requests_total\{route="\/_metrics",status="401"\} 1$/m);
      expect(reply.text).to.match(/^fenec_http_request_duration_seconds_count\{route="\/query"\} [1-9]/m);
      // A collection's name never becomes a label.
      expect(reply.text).not.to.include('nosuchcollection');
    });

    it("samples the event loop's delay every millisecond: an idle loop reads near 1 ms, not the 10 of a coarser timer", async () => {
      const metrics = async () =>
        (await request(guarded.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } })).text;
      await metrics(); // prom-client starts a new window at each scrape
      await new Promise((resolve) => setTimeout(resolve, 300));
      const text = await metrics();
      const min = Number(/^nodejs_eventloop_lag_min_seconds (\S+)$/m.exec(text)?.[1]);
      expect(min).to.be.within(0, 0.005);
      // Sampled, since a request came (a window without a sample reads 0): each sample is the time between two ticks.
      expect(Number(/^nodejs_eventloop_lag_mean_seconds (\S+)$/m.exec(text)?.[1])).to.be.above(0.0005);
    });

    // The 1 ms sampler and the workers' watchdog run only around requests: both on all the time cost an
    // idle server about 3.5 % of a core on its serving thread (10 ms of CPU in 3 s and more).
    it("lets an idle server's serving thread sleep: no timer wakes it between requests", async function () {
      if (process.platform !== 'linux') this.skip(); // per-thread CPU from /proc
      await query(guarded.url, 'get missing', [], TOKEN);
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // the sampler's second after the last request
      const ticks = (): number => {
        const fields = threadStat(guarded.pid, guarded.pid);
        return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (10 ms)
      };
      const before = ticks();
      await new Promise((resolve) => setTimeout(resolve, 3_000));
      expect(ticks() - before, 'clock ticks of CPU in 3 s idle').to.be.at.most(2);
    });
  });
});
