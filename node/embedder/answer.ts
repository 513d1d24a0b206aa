/**
 * An embeddings answer read as the OpenAI API defines it — `{"data": [{"index", "embedding"}], "model",
 * "usage"}` — and checked: one vector per input, each index once, every component a finite float32, every
 * vector of one length (the dimension the start probe learned, once known). The vectors come back in input
 * order, whatever order `data` lists them in.
 */
import { failed, type EmbedderError } from './errors.js';

const FLOAT32_MAX = 3.4028234663852886e38;

/** The vectors in input order, or the error that says what was wrong with the answer. */
export function readAnswer(
  body: unknown,
  inputs: number,
  dimension: number | undefined,
): Float32Array[] | EmbedderError {
  if (typeof body !== 'object' || body === null || !Array.isArray((body as { data?: unknown }).data))
    return failed('its answer is JSON but has no "data" list of embeddings');
  const data = (body as { data: unknown[] }).data;
  if (data.length !== inputs) return failed(`it answered ${data.length} embeddings for ${inputs} inputs`);
  const vectors: (Float32Array | undefined)[] = new Array(inputs);
  let length = dimension;
  for (const item of data) {
    const { index, embedding } = (typeof item === 'object' && item !== null ? item : {}) as {
      index?: unknown;
      embedding?: unknown;
    };
    if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= inputs)
      return failed(`an embedding's "index" is ${JSON.stringify(index) ?? 'missing'}, not one of 0…${inputs - 1}`);
    const at = index as number;
    if (vectors[at] !== undefined) return failed(`two embeddings have "index" ${at}`);
    if (!Array.isArray(embedding))
      return failed(
        `embedding ${at} is not a list of numbers (${typeof embedding === 'string' ? 'a string: base64 is not read' : typeof embedding})`,
      );
    if (embedding.length === 0) return failed(`embedding ${at} is empty`);
    if (length === undefined) length = embedding.length;
    if (embedding.length !== length)
      return failed(
        `embedding ${at} has ${embedding.length} components where ${dimension === undefined ? 'the others have' : 'the model made'} ${length}`,
        {
          hint:
            dimension === undefined
              ? undefined
              : 'was the embedder started with another model? restart fenecdb to learn the new one',
        },
      );
    const vector = new Float32Array(length);
    for (let i = 0; i < length; i++) {
      const x = embedding[i] as unknown;
      if (typeof x !== 'number' || !Number.isFinite(x) || Math.abs(x) > FLOAT32_MAX)
        return failed(`embedding ${at} has ${JSON.stringify(x) ?? String(x)} at ${i}, not a finite float32`);
      vector[i] = x;
    }
    vectors[at] = vector;
  }
  return vectors as Float32Array[];
}

/**
 * Whether a refusal says the input is past the model's length. The servers word it differently: OpenAI "maximum
 * context length is 8192 tokens", TEI "must have less than 512 tokens", vLLM and llama.cpp "too long" or "exceed
 * the context".
 */
export function saysTooLong(status: number, message: string): boolean {
  if (status !== 400 && status !== 413 && status !== 422) return false;
  return /context length|context size|too long|maximum .*tokens|less than \d+ tokens|exceeds? .*(context|tokens)/i.test(
    message,
  );
}

/** The message of an error body as the servers shape it (`{"error": {"message"}}`, `{"error": "…"}`), else the text. */
export function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    const error = body.error as { message?: unknown } | string | undefined;
    if (typeof error === 'string') return error;
    if (typeof error?.message === 'string') return error.message;
    if (typeof body.message === 'string') return body.message;
    if (typeof body.detail === 'string') return body.detail;
  } catch {
    // Not JSON: the text itself is what it said.
  }
  return text;
}
