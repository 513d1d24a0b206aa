/**
 * The requests of the operator's commands to a server, a node or a router, with the server token
 * from $FENEC_TOKEN.
 */
import { FenecError } from '../../shared/errors.js';
import { usageError } from '../../shared/cli/command-line.js';

const NAME = 'fenec';

/**
 * One request of an operator's command (fenec tenant, fenec token revoke): the answer's JSON to
 * stdout, or the refusal's to stderr with exit status 1.
 */
export async function adminRequest(method: string, base: string, path: string, body?: string): Promise<void> {
  const response = await adminSend(method, base, path, { 'content-type': 'application/json' }, body);
  if (response === undefined) return;
  const text = await response.text();
  if (response.status >= 400) return refused(text);
  process.stdout.write(`${text.trim()}\n`);
}

/**
 * Sends one request (a streamed body when given one) and resolves with the response, or with
 * undefined when the server cannot be reached (said on stderr, exit status 1).
 */
export async function adminSend(
  method: string,
  base: string,
  path: string,
  headers: Record<string, string>,
  body?: RequestInit['body'],
): Promise<Response | undefined> {
  const token = process.env.FENEC_TOKEN || undefined;
  if (token === undefined) usageError(NAME, 'this command needs the server token in $FENEC_TOKEN');
  let url: URL;
  try {
    url = new URL(path, base);
  } catch {
    return usageError(NAME, `--url takes a URL such as http://127.0.0.1:8080, not ${base}`);
  }
  try {
    return await fetch(url, {
      method,
      headers: { authorization: `Bearer ${token}`, ...headers },
      // A stream sent as the body must say it is sent while the answer may already come (undici's rule).
      ...(body === undefined ? {} : ({ body, duplex: 'half' } as RequestInit)),
    });
  } catch (err) {
    const cause = (err as Error).cause as NodeJS.ErrnoException | undefined;
    refused(
      JSON.stringify(
        new FenecError(
          'unavailable',
          `cannot reach ${url.href}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
        ).toJSON(),
      ),
    );
    return undefined;
  }
}

/** A refusal's JSON to stderr, exit status 1. */
export function refused(text: string): void {
  process.stderr.write(`${text.trim()}\n`);
  process.exitCode = 1;
}
