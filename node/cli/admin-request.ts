/**
 * The requests of the operator's commands to a server, a node or a router.
 */
import { FenecError } from '../../shared/errors.js';
import { usageError } from './command-line.js';

const NAME = 'fenec';

/**
 * One request of an operator's command (fenec tenant, fenec token revoke) with the server token from
 * $FENEC_TOKEN: the answer's JSON to stdout, or the refusal's to stderr with exit status 1.
 */
export async function adminRequest(method: string, base: string, path: string, body?: string): Promise<void> {
  const token = process.env.FENEC_TOKEN || undefined;
  if (token === undefined) usageError(NAME, 'this command needs the server token in $FENEC_TOKEN');
  let url: URL;
  try {
    url = new URL(path, base);
  } catch {
    return usageError(NAME, `--url takes a URL such as http://127.0.0.1:8080, not ${base}`);
  }
  let status: number;
  let text: string;
  try {
    const response = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, ...(body === undefined ? {} : { body }) });
    status = response.status;
    text = await response.text();
  } catch (err) {
    const cause = (err as Error).cause as NodeJS.ErrnoException | undefined;
    const error = new FenecError('unavailable', `cannot reach ${url.href}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    process.stderr.write(`${JSON.stringify(error.toJSON())}\n`);
    process.exitCode = 1;
    return;
  }
  if (status >= 400) {
    process.stderr.write(`${text.trim()}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write(`${text.trim()}\n`);
}
