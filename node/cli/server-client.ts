/**
 * `fenec`'s way to a server's /query: the URL a user gives, the POST with its token, and the answer
 * as JSON (a refusal's too), or `unavailable` when no fenecdb server answers.
 */
import { FenecError } from '../../shared/errors.js';
import { usageError } from '../../shared/cli/command-line.js';

const NAME = 'fenec';

/** An answer, or a refusal as its error JSON. */
export interface Outcome {
  readonly ok: boolean;
  readonly status?: number;
  readonly body: unknown;
}

/** A base URL gets /query appended (keeping any path prefix, as /t/<tenant>); a /query URL is kept. */
export function queryUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    usageError(NAME, `--url takes a URL such as http://127.0.0.1:8080, not ${text}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') usageError(NAME, `--url takes an http or https URL, not ${text}`);
  if (!url.pathname.endsWith('/query')) url.pathname = `${url.pathname.replace(/\/$/, '')}/query`;
  return url;
}

/** POSTs a /query body (JSON text). @throws FenecError `unavailable` when no fenecdb server answers at `url`. */
export async function postQuery(url: URL, body: string | Buffer, token: string | undefined): Promise<Outcome> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  let response: Response;
  try {
    response = await fetch(url, { method: 'POST', headers, body });
  } catch (err) {
    const cause = (err as Error).cause as NodeJS.ErrnoException | undefined;
    throw new FenecError('unavailable', `cannot reach ${url.href}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
  }
  const text = await response.text();
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    throw new FenecError('unavailable', `${url.href} answered ${response.status} with no JSON; is it a fenecdb server?`);
  }
  return { ok: response.ok, status: response.status, body: answer };
}

/** The bearer token of a command that reaches a server: --token, else $FENEC_TOKEN. */
export function tokenOf(option: string | undefined): string | undefined {
  return option ?? (process.env.FENEC_TOKEN || undefined);
}
