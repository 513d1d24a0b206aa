/**
 * The tests' own embedding server: the OpenAI embeddings API (`POST /v1/embeddings`) on 127.0.0.1, with
 * deterministic vectors and faults a test switches on.
 *
 * A text's vector is the sum of one seeded random vector per word, normalised, after the words are folded: lower
 * case, a plural or -ing/-ed ending cut ("fridays" → "friday"), synonyms made one ("ship", "release",
 * "deployment" → "deploy"), and stop words dropped. So "when do we ship?" is near "the deploy runs on fridays"
 * (they share "deploy") and far from a sentence that shares no folded word.
 *
 * Faults, one at a time (`server.fault = …`; undefined for none): a slow answer, a status for the next n
 * requests (429 with Retry-After, 500…), vectors of another dimension, malformed JSON, `data` answered out of
 * order, or any answer a test writes. An input of more words than maxInputTokens is answered 400 as OpenAI words
 * it. closedPortUrl() gives a URL whose connections are refused.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gaussian, seededRandom } from './vectors.js';

export type Fault =
  | { readonly kind: 'slow'; readonly ms: number }
  /** The next `times` requests get `status` (and Retry-After when given); later ones are answered as usual. */
  | {
      readonly kind: 'status';
      readonly status: number;
      readonly times: number;
      readonly retryAfter?: string;
      readonly body?: string;
    }
  | { readonly kind: 'wrong-dimension'; readonly dims: number }
  | { readonly kind: 'malformed' }
  | { readonly kind: 'out-of-order' }
  /** The body answered 200, as JSON, for the request's inputs. */
  | { readonly kind: 'answer'; readonly answer: (inputs: string[]) => unknown };

export interface EmbeddingServerOptions {
  readonly dims?: number;
  readonly model?: string;
  /** When set, a request without `Authorization: Bearer <apiKey>` is answered 401. */
  readonly apiKey?: string;
  /** The model's "context length", counted in words. Default 512. */
  readonly maxInputTokens?: number;
  /** The port to listen on (one a closedPortUrl() gave back: an embedder that comes up late). Default: a free one. */
  readonly port?: number;
}

export interface ReceivedRequest {
  /** performance.now() when the request's body had arrived. */
  readonly at: number;
  readonly model: unknown;
  readonly input: string[];
  readonly authorization: string | undefined;
}

export interface EmbeddingServer {
  /** The API base to give the client: http://127.0.0.1:PORT/v1. */
  readonly url: string;
  readonly dims: number;
  readonly model: string;
  readonly requests: ReceivedRequest[];
  /** The most requests it was answering at once. */
  readonly maxInFlight: number;
  fault: Fault | undefined;
  /** The vector this server answers for a text. */
  vectorOf(text: string): number[];
  close(): Promise<void>;
}

const STOP_WORDS = new Set(
  'a an and are at be by do does for from how i in is it of on or our the this to was we what with you'.split(' '),
);

const SYNONYMS: Record<string, string> = {
  ship: 'deploy',
  release: 'deploy',
  deployment: 'deploy',
  rollout: 'deploy',
  launch: 'deploy',
};

/** The folded words of a text: lower case, a plural or -ing/-ed cut, synonyms made one, stop words gone. */
export function foldedWords(text: string): string[] {
  const words: string[] = [];
  for (const raw of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw === '' || STOP_WORDS.has(raw)) continue;
    let word = raw;
    if (word.length > 4 && word.endsWith('ies')) word = `${word.slice(0, -3)}y`;
    else if (word.length > 5 && word.endsWith('ing')) word = word.slice(0, -3);
    else if (word.length > 4 && word.endsWith('ed')) word = word.slice(0, -2);
    else if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) word = word.slice(0, -1);
    if (word.endsWith('pp')) word = word.slice(0, -1);
    words.push(SYNONYMS[word] ?? word);
  }
  return words;
}

function wordVector(word: string, dims: number): number[] {
  const seed = createHash('sha256').update(word).digest().readInt32LE(0);
  const random = seededRandom(seed);
  return Array.from({ length: dims }, () => gaussian(random));
}

export function textVector(text: string, dims: number): number[] {
  const words = foldedWords(text);
  // A text of stop words alone still gets a direction of its own, never the zero vector.
  const sum = new Array<number>(dims).fill(0);
  for (const word of words.length === 0 ? [`\u0000${text}`] : words) {
    const v = wordVector(word, dims);
    for (let i = 0; i < dims; i++) sum[i]! += v[i]!;
  }
  const norm = Math.sqrt(sum.reduce((s, x) => s + x * x, 0)) || 1;
  return sum.map((x) => x / norm);
}

/** A URL on 127.0.0.1 where nothing listens: a port taken from the system and given back. */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/v1`;
}

export async function startEmbeddingServer(options: EmbeddingServerOptions = {}): Promise<EmbeddingServer> {
  const dims = options.dims ?? 64;
  const model = options.model ?? 'fenec-test-embed';
  const maxTokens = options.maxInputTokens ?? 512;
  const requests: ReceivedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer(handle);

  const state: EmbeddingServer = {
    url: '',
    dims,
    model,
    requests,
    maxInFlight: 0,
    fault: undefined,
    vectorOf: (text) => textVector(text, dims),
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };

  function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  }

  function openAiError(res: ServerResponse, status: number, message: string, code: string | null): void {
    send(res, status, JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code } }));
  }

  function answer(res: ServerResponse, body: { model?: unknown; input?: unknown }, authorization?: string): void {
    const input = typeof body.input === 'string' ? [body.input] : body.input;
    if (!Array.isArray(input) || input.length === 0 || !input.every((t) => typeof t === 'string'))
      return openAiError(res, 400, "'input' must be a string or a non-empty array of strings", null);
    requests.push({ at: performance.now(), model: body.model, input, authorization });
    if (options.apiKey !== undefined && authorization !== `Bearer ${options.apiKey}`)
      return openAiError(res, 401, 'Incorrect API key provided.', 'invalid_api_key');
    if (body.model !== model)
      return openAiError(res, 404, `The model \`${String(body.model)}\` does not exist`, 'model_not_found');

    const fault = state.fault;
    if (fault?.kind === 'status' && fault.times > 0) {
      state.fault = { ...fault, times: fault.times - 1 };
      const headers: Record<string, string> = fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter };
      return send(
        res,
        fault.status,
        fault.body ?? JSON.stringify({ error: { message: `fault ${fault.status}` } }),
        headers,
      );
    }
    if (fault?.kind === 'malformed')
      return send(res, 200, '{"object": "list", "data": [{"index": 0, "embedding": [0.1,');
    if (fault?.kind === 'answer') return send(res, 200, JSON.stringify(fault.answer(input)));

    for (const [i, text] of input.entries()) {
      const tokens = text.split(/\s+/).filter((w) => w !== '').length;
      if (tokens > maxTokens)
        return openAiError(
          res,
          400,
          `This model's maximum context length is ${maxTokens} tokens, however you requested ${tokens} tokens (${tokens} in your prompt; 0 for the completion). Please reduce your prompt; or completion length. (input ${i})`,
          null,
        );
    }
    const size = fault?.kind === 'wrong-dimension' ? fault.dims : dims;
    const data = input.map((text, index) => ({ object: 'embedding', index, embedding: textVector(text, size) }));
    if (fault?.kind === 'out-of-order') data.reverse();
    const tokens = input.reduce((n, text) => n + text.split(/\s+/).length, 0);
    const reply = JSON.stringify({
      object: 'list',
      data,
      model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    });
    if (fault?.kind === 'slow') {
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!res.destroyed) send(res, 200, reply);
      }, fault.ms);
      timers.add(timer);
      return;
    }
    send(res, 200, reply);
  }

  let inFlight = 0;
  function handle(req: IncomingMessage, res: ServerResponse): void {
    inFlight++;
    (state as { maxInFlight: number }).maxInFlight = Math.max(state.maxInFlight, inFlight);
    res.on('close', () => inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings')
        return send(res, 404, JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return openAiError(res, 400, 'We could not parse the JSON body of your request.', null);
      }
      answer(res, (body ?? {}) as { model?: unknown; input?: unknown }, req.headers.authorization);
    });
  }

  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, { url: `http://127.0.0.1:${port}/v1` });
}
