/**
 * The one way the server reads an authorization server's documents (its metadata, its key set):
 * GET over the network, no redirects followed, a time-out and a size cap on every fetch, JSON out.
 * An issuer that stalls or answers a gigabyte costs the server a bounded wait and a bounded buffer.
 */

/** What one fetch may take. */
export interface FetchLimits {
  /** The whole fetch, headers and body, in ms. */
  readonly timeoutMs: number;
  /** The largest body read; a larger one is refused unread past it. */
  readonly maxBytes: number;
}

export const FETCH_LIMITS: FetchLimits = Object.freeze({ timeoutMs: 5_000, maxBytes: 256 * 1024 });

/**
 * The JSON document at `url`.
 *
 * @throws Error saying why in plain words (status, time-out, too large, not JSON): the caller puts it in a refusal.
 */
export async function fetchJson(url: string, limits: FetchLimits = FETCH_LIMITS): Promise<unknown> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'error', signal, headers: { accept: 'application/json' } });
  } catch (err) {
    throw new Error(signal.aborted ? `${url} did not answer within ${limits.timeoutMs} ms` : `${url}: ${causeOf(err)}`);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`${url} answered status ${response.status}`);
  }
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > limits.maxBytes) {
    await response.body?.cancel();
    throw new Error(`${url} answered ${declared} bytes, more than the ${limits.maxBytes} taken`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of response.body ?? []) {
      size += chunk.byteLength;
      // Leaving the loop cancels the rest of the body.
      if (size > limits.maxBytes) throw new Error(`${url} answered more than the ${limits.maxBytes} bytes taken`);
      chunks.push(chunk);
    }
  } catch (err) {
    if (signal.aborted) throw new Error(`${url} did not answer within ${limits.timeoutMs} ms`);
    throw err;
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new Error(`${url} answered something that is not JSON`);
  }
}

function causeOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}
