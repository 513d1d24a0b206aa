/**
 * The embedder client against the tests' own embedding server over real HTTP on 127.0.0.1: the answers, the
 * batches, the concurrency bound, and each fault with the error code it gives and the retries it made (counted
 * and timed by the server as the requests arrived).
 */
import { expect } from 'chai';
import { embedderConfig, type EmbedderInput } from '../../../node/embedder/config.js';
import { Embedder } from '../../../node/embedder/embedder.js';
import { EmbedderError } from '../../../node/embedder/errors.js';
import { retryAfter } from '../../../node/embedder/call.js';
import { saysTooLong } from '../../../node/embedder/answer.js';
import { closedPortUrl, startEmbeddingServer, type EmbeddingServer } from '../../helpers/embedding-server.js';

const BASE_DELAY = 40;

function config(server: { url: string; model?: string }, more: Partial<EmbedderInput> = {}) {
  return embedderConfig({
    url: server.url,
    model: server.model ?? 'fenec-test-embed',
    retries: 2,
    retryBaseDelayMs: BASE_DELAY,
    retryMaxDelayMs: 1_000,
    callTimeoutMs: 2_000,
    totalTimeoutMs: 8_000,
    ...more,
  });
}

/** The error a promise is refused with (the test fails if it is not refused). */
async function refusal(promise: Promise<unknown>): Promise<EmbedderError> {
  try {
    await promise;
  } catch (err) {
    expect(err).to.be.instanceOf(EmbedderError);
    return err as EmbedderError;
  }
  throw new Error('expected a refusal, got an answer');
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

/** The gaps, in ms, between the requests' arrivals at the server. */
function gaps(server: EmbeddingServer): number[] {
  return server.requests.slice(1).map((r, i) => r.at - server.requests[i]!.at);
}

/** Each retry waits at least half its back-off step (equal jitter): base, 2·base, 4·base… halved. */
function expectBackoff(server: EmbeddingServer, plus = 0): void {
  for (const [k, gap] of gaps(server).entries())
    expect(gap, `wait before retry ${k + 1}`).to.be.at.least(plus + (BASE_DELAY * 2 ** k) / 2 - 5);
}

describe('the embedder client', function () {
  this.timeout(20_000);
  let server: EmbeddingServer;

  beforeEach(async () => {
    server = await startEmbeddingServer({ dims: 32 });
  });
  afterEach(async () => {
    await server.close();
  });

  it('learns the dimension at start from one probe of two texts, naming the model', async () => {
    const embedder = await Embedder.start(config(server));
    expect(embedder.dimension).to.equal(32);
    expect(server.requests).to.have.length(1);
    expect(server.requests[0]!.model).to.equal('fenec-test-embed');
    expect(server.requests[0]!.input).to.have.length(2);
  });

  it('finds "the deploy runs on fridays" nearer "when do we ship?" than an unrelated sentence', async () => {
    await server.close();
    server = await startEmbeddingServer({ dims: 384 });
    const embedder = await Embedder.start(config(server));
    const [deploy, unrelated] = await embedder.embed(['the deploy runs on fridays', 'the cat sleeps on a warm mat']);
    const query = await embedder.embedQuery('when do we ship?');
    expect(cosine(query, deploy!)).to.be.above(cosine(query, unrelated!) + 0.2);
  });

  it('sends texts in batches of batchSize and answers in the texts order', async () => {
    const embedder = await Embedder.start(config(server, { batchSize: 64 }));
    const texts = Array.from({ length: 150 }, (_, i) => `text number ${i}`);
    const vectors = await embedder.embed(texts);
    expect(server.requests.slice(1).map((r) => r.input.length)).to.deep.equal([64, 64, 22]);
    for (const [i, text] of texts.entries())
      expect(Array.from(vectors[i]!)).to.deep.equal(Array.from(Float32Array.from(server.vectorOf(text))));
  });

  it('never has more than `concurrency` calls out at once, all callers together', async () => {
    const embedder = await Embedder.start(config(server, { batchSize: 1, concurrency: 2 }));
    server.fault = { kind: 'slow', ms: 150 };
    await Promise.all([embedder.embed(['a', 'b', 'c']), embedder.embed(['d', 'e', 'f'])]);
    expect(server.requests).to.have.length(7);
    expect(server.maxInFlight).to.equal(2);
  });

  it('puts a batch answered out of order back in input order by its index fields', async () => {
    const embedder = await Embedder.start(config(server));
    server.fault = { kind: 'out-of-order' };
    const texts = ['alpha', 'beta', 'gamma', 'delta', 'epsilon'];
    const vectors = await embedder.embed(texts);
    for (const [i, text] of texts.entries()) expect(cosine(vectors[i]!, server.vectorOf(text))).to.be.above(0.9999);
  });

  it('retries a call past its time limit with back-off, then refuses with embedder_unavailable', async () => {
    const embedder = await Embedder.start(config(server, { callTimeoutMs: 200 }));
    server.requests.length = 0;
    server.fault = { kind: 'slow', ms: 5_000 };
    const err = await refusal(embedder.embed(['slow text']));
    expect(err.code).to.equal('embedder_unavailable');
    expect(err.status).to.equal(503);
    expect(err.message).to.match(/within 200 ms \(3 tries\)/);
    expect(err.retryAfterSeconds).to.be.at.least(1);
    expect(server.requests).to.have.length(3);
    expectBackoff(server, 200);
  });

  it('waits out a 429 for its Retry-After in seconds, then takes the 200', async () => {
    const embedder = await Embedder.start(config(server));
    server.requests.length = 0;
    server.fault = { kind: 'status', status: 429, times: 1, retryAfter: '1' };
    const [vector] = await embedder.embed(['rate limited']);
    expect(cosine(vector!, server.vectorOf('rate limited'))).to.be.above(0.9999);
    expect(server.requests).to.have.length(2);
    expect(gaps(server)[0]).to.be.at.least(995);
  });

  it('waits out a 429 for its Retry-After as an HTTP date', async () => {
    const embedder = await Embedder.start(config(server));
    server.requests.length = 0;
    const date = new Date(Date.now() + 3_000);
    server.fault = { kind: 'status', status: 429, times: 1, retryAfter: date.toUTCString() };
    await embedder.embed(['rate limited']);
    expect(server.requests).to.have.length(2);
    // The date has whole seconds: the wait is what is left of the 3 s once the milliseconds are cut, over 1.5 s.
    expect(gaps(server)[0]).to.be.at.least(1_500);
  });

  it('refuses a 429 past the retries with embedder_unavailable and the server Retry-After', async () => {
    const embedder = await Embedder.start(config(server));
    server.requests.length = 0;
    server.fault = { kind: 'status', status: 429, times: 100, retryAfter: '1' };
    const err = await refusal(embedder.embed(['busy']));
    expect(err.code).to.equal('embedder_unavailable');
    expect(err.retryAfterSeconds).to.equal(1);
    expect(err.hint).to.equal('retry after 1 s');
    expect(server.requests).to.have.length(3);
    for (const gap of gaps(server)) expect(gap).to.be.at.least(995);
  });

  it('gives up at once when Retry-After is past the total time, with that figure', async () => {
    const embedder = await Embedder.start(config(server, { totalTimeoutMs: 5_000 }));
    server.requests.length = 0;
    server.fault = { kind: 'status', status: 429, times: 100, retryAfter: '60' };
    const started = performance.now();
    const err = await refusal(embedder.embed(['busy']));
    expect(err.code).to.equal('embedder_unavailable');
    expect(err.retryAfterSeconds).to.equal(60);
    expect(server.requests).to.have.length(1);
    expect(performance.now() - started).to.be.below(1_000);
  });

  it('stops retrying at the total time limit, however many retries are left', async () => {
    const embedder = await Embedder.start(config(server, { callTimeoutMs: 300, totalTimeoutMs: 700, retries: 10 }));
    server.requests.length = 0;
    server.fault = { kind: 'slow', ms: 5_000 };
    const started = performance.now();
    const err = await refusal(embedder.embed(['slow text']));
    expect(err.code).to.equal('embedder_unavailable');
    expect(server.requests.length).to.be.within(2, 3);
    expect(performance.now() - started).to.be.within(600, 1_500);
  });

  it('retries a 500 with back-off, then refuses with embedder_failed quoting what it answered', async () => {
    const embedder = await Embedder.start(config(server));
    server.requests.length = 0;
    server.fault = { kind: 'status', status: 500, times: 100, body: '{"error": {"message": "CUDA out of memory"}}' };
    const err = await refusal(embedder.embed(['fails']));
    expect(err.code).to.equal('embedder_failed');
    expect(err.status).to.equal(502);
    expect(err.message).to.include('answered 500: CUDA out of memory (3 tries)');
    expect(server.requests).to.have.length(3);
    expectBackoff(server);
  });

  it('recovers when a 503 passes before the retries run out; past them it is embedder_unavailable', async () => {
    const embedder = await Embedder.start(config(server));
    server.fault = { kind: 'status', status: 503, times: 2 };
    expect(await embedder.embed(['back soon'])).to.have.length(1);
    server.fault = { kind: 'status', status: 503, times: 3 };
    expect((await refusal(embedder.embed(['back soon']))).code).to.equal('embedder_unavailable');
  });

  it('refuses vectors of another dimension than the probe learned, without retrying', async () => {
    const embedder = await Embedder.start(config(server));
    server.requests.length = 0;
    server.fault = { kind: 'wrong-dimension', dims: 16 };
    const err = await refusal(embedder.embed(['changed model']));
    expect(err.code).to.equal('embedder_failed');
    expect(err.message).to.include('embedding 0 has 16 components where the model made 32');
    expect(server.requests).to.have.length(1);
  });

  it('refuses malformed JSON with an excerpt of it, without retrying', async () => {
    const embedder = await Embedder.start(config(server));
    server.requests.length = 0;
    server.fault = { kind: 'malformed' };
    const err = await refusal(embedder.embed(['broken']));
    expect(err.code).to.equal('embedder_failed');
    expect(err.message).to.include(
      'its answer is not JSON: {"object": "list", "data": [{"index": 0, "embedding": [0.1,',
    );
    expect(server.requests).to.have.length(1);
  });

  it('refuses to start on a closed port after its retries, with embedder_unavailable', async () => {
    const started = performance.now();
    const err = await refusal(Embedder.start(config({ url: await closedPortUrl() })));
    expect(err.code).to.equal('embedder_unavailable');
    expect(err.message).to.match(/cannot reach http:\/\/127\.0\.0\.1:\d+\/v1\/embeddings \(ECONNREFUSED\) \(3 tries\)/);
    // Two waits: at least half of base, then half of 2·base.
    expect(performance.now() - started).to.be.at.least(BASE_DELAY / 2 + BASE_DELAY - 5);
  });

  it('names the input past the model length, found by halving the batch', async () => {
    await server.close();
    server = await startEmbeddingServer({ dims: 32, maxInputTokens: 5 });
    const embedder = await Embedder.start(config(server));
    const texts = Array.from({ length: 8 }, (_, i) => (i === 5 ? 'one two three four five six seven' : `short ${i}`));
    const err = await refusal(embedder.embed(['first batch', ...texts], {}));
    expect(err.code).to.equal('embedder_failed');
    expect(err.input).to.equal(6);
    expect(err.message).to.match(
      /^the embedder failed: input 6 is longer than the model takes: This model's maximum context length is 5 tokens/,
    );
    expect(server.requests.length).to.be.at.most(1 + 1 + 4 + 1);
  });

  for (const [what, answer, said] of [
    [
      'numbers that are strings',
      (n: number) => vectorsOf(n, () => ['0.1', '0.2']),
      'has "0.1" at 0, not a finite float32',
    ],
    ['an empty embedding', (n: number) => vectorsOf(n, () => []), 'embedding 0 is empty'],
    [
      'vectors of two lengths',
      (n: number) => vectorsOf(n, (i) => (i === 0 ? [0.1, 0.2] : [0.1])),
      'embedding 1 has 1 components where the others have 2',
    ],
    ['one vector for two texts', () => vectorsOf(1, () => [0.1, 0.2]), 'it answered 1 embeddings for 2 inputs'],
    [
      'base64 embeddings',
      (n: number) => vectorsOf(n, () => 'AAAA'),
      'not a list of numbers (a string: base64 is not read)',
    ],
    ['no data list', () => ({ object: 'list' }), 'has no "data" list'],
  ] as const) {
    it(`refuses to start on an embedder that answers ${what}`, async () => {
      server.fault = { kind: 'answer', answer: (inputs) => answer(inputs.length) };
      const err = await refusal(Embedder.start(config(server)));
      expect(err.code).to.equal('embedder_failed');
      expect(err.message).to.include(said);
    });
  }

  it('refuses an answer past the byte cap', async () => {
    const embedder = await Embedder.start(config(server));
    const capped = await Embedder.start(config(server, { maxResponseBytes: 4_096 }));
    expect(embedder.dimension).to.equal(capped.dimension);
    const err = await refusal(capped.embed(Array.from({ length: 20 }, (_, i) => `text ${i}`)));
    expect(err.code).to.equal('embedder_failed');
    expect(err.message).to.include('its answer is larger than 4096 bytes');
  });

  it('sends the key as a bearer token and never repeats it in an error', async () => {
    await server.close();
    server = await startEmbeddingServer({ dims: 8, apiKey: 'sk-right-key' });
    await Embedder.start(config(server, { apiKey: 'sk-right-key' }));
    expect(server.requests[0]!.authorization).to.equal('Bearer sk-right-key');
    const wrong = await refusal(Embedder.start(config(server, { apiKey: 'sk-wrong-key' })));
    expect(wrong.code).to.equal('embedder_failed');
    expect(wrong.hint).to.equal('check the key in FENEC_EMBEDDER_API_KEY');
    expect(JSON.stringify(wrong.toJSON())).not.to.include('sk-wrong-key');
    server.fault = { kind: 'status', status: 400, times: 1, body: '{"error": "bad header Bearer sk-right-key"}' };
    const echoed = await refusal(Embedder.start(config(server, { apiKey: 'sk-right-key' })));
    expect(echoed.message).to.include('bad header Bearer [key]');
    expect(JSON.stringify(echoed.toJSON())).not.to.include('sk-right-key');
  });

  it('keeps recent query embeddings: the same text is embedded once', async () => {
    const embedder = await Embedder.start(config(server));
    const first = await embedder.embedQuery('when do we ship?');
    const again = await embedder.embedQuery('when do we ship?');
    await embedder.embedQuery('when do we release?');
    expect(again).to.equal(first);
    expect(server.requests).to.have.length(3);
  });

  it('refuses a field made with another model or dimension, naming both (embedder_mismatch)', async () => {
    const embedder = await Embedder.start(config(server));
    embedder.checkOrigin('notes.vec', { model: 'fenec-test-embed', dimension: 32 });
    let err: unknown;
    try {
      embedder.checkOrigin('notes.vec', { model: 'nomic-embed-text', dimension: 768 });
    } catch (caught) {
      err = caught;
    }
    expect(err).to.be.instanceOf(EmbedderError);
    expect((err as EmbedderError).code).to.equal('embedder_mismatch');
    expect((err as EmbedderError).status).to.equal(409);
    expect((err as EmbedderError).message).to.equal(
      "notes.vec was embedded with nomic-embed-text (768 dimensions), and this server's embedder is fenec-test-embed (32 dimensions)",
    );
  });

  it("stops at the caller's signal, throwing its reason", async () => {
    const embedder = await Embedder.start(config(server));
    server.fault = { kind: 'slow', ms: 5_000 };
    const reason = new Error('statement time limit');
    const controller = new AbortController();
    setTimeout(() => controller.abort(reason), 100);
    const started = performance.now();
    let thrown: unknown;
    try {
      await embedder.embed(['slow'], { signal: controller.signal });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).to.equal(reason);
    expect(performance.now() - started).to.be.below(1_000);
  });
});

function vectorsOf(n: number, embedding: (i: number) => unknown): unknown {
  return { object: 'list', data: Array.from({ length: n }, (_, index) => ({ index, embedding: embedding(index) })) };
}

describe('the embedder options', () => {
  it('refuses a URL that is not http(s), or that carries a user or a query', () => {
    for (const url of ['127.0.0.1:11434', 'ftp://host/v1', 'http://user:pw@host/v1', 'http://host/v1?key=sk'])
      expect(() => embedderConfig({ url, model: 'm' }), url).to.throw(/--embedder-url must/);
  });

  it('refuses a batch size outside 1…2048 and an empty model', () => {
    expect(() => embedderConfig({ url: 'http://h/v1', model: 'm', batchSize: 0 })).to.throw(/--embedder-batch must/);
    expect(() => embedderConfig({ url: 'http://h/v1', model: ' ' })).to.throw(/--embedder-model must name a model/);
  });

  it('takes the defaults and drops a trailing slash of the URL', () => {
    const config = embedderConfig({ url: 'http://127.0.0.1:11434/v1/', model: 'nomic-embed-text' });
    expect(config.url).to.equal('http://127.0.0.1:11434/v1');
    expect(config.batchSize).to.equal(64);
    expect(config.apiKey).to.equal(undefined);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-12-01T20:00:00Z');
  it('reads seconds, an HTTP date, and retry-after-ms', () => {
    expect(retryAfter(new Headers({ 'retry-after': '3' }), now)).to.equal(3_000);
    expect(retryAfter(new Headers({ 'retry-after': 'Tue, 01 Dec 2026 20:00:05 GMT' }), now)).to.equal(5_000);
    expect(retryAfter(new Headers({ 'retry-after': 'Tue, 01 Dec 2026 19:00:00 GMT' }), now)).to.equal(0);
    expect(retryAfter(new Headers({ 'retry-after-ms': '250' }), now)).to.equal(250);
    expect(retryAfter(new Headers({ 'retry-after': 'soon' }), now)).to.equal(undefined);
    expect(retryAfter(new Headers(), now)).to.equal(undefined);
  });
});

describe('an input past the model length, as each server words it', () => {
  it('is recognised in OpenAI, vLLM, TEI and Ollama refusals, and not in others', () => {
    const said: [number, string][] = [
      [
        400,
        "This model's maximum context length is 8192 tokens, however you requested 8610 tokens (8610 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.",
      ],
      [
        400,
        "This model's maximum context length is 512 tokens. However, you requested 600 tokens in the input for embedding generation. Please reduce the length of the input.",
      ],
      [413, 'Input validation error: `inputs` must have less than 512 tokens. Given: 1000'],
      [400, 'the input length exceeds the context length'],
    ];
    for (const [status, message] of said) expect(saysTooLong(status, message), message).to.equal(true);
    expect(saysTooLong(400, "'input' must be a string or a non-empty array of strings")).to.equal(false);
    expect(saysTooLong(500, 'the input length exceeds the context length')).to.equal(false);
  });
});
