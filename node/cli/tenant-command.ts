/**
 * `fenec tenant create|delete NAME --url URL` and `fenec tenant list --url URL`: provisioning
 * through the router (or a node) with the server token from $FENEC_TOKEN. The answer's JSON goes
 * to stdout; a refusal's to stderr with exit status 1.
 */
import type { Command } from 'commander';
import { FenecError } from '../../shared/errors.js';
import { isTenantName } from '../../router/tenant-name.js';
import { usageError } from './command-line.js';

const NAME = 'fenec';

interface TenantOptions {
  url: string;
  quotas?: string;
}

export function addTenantCommand(program: Command): void {
  const tenant = program.command('tenant').description('Create, delete and list tenants of a router or a tenant node (server token: $FENEC_TOKEN).');
  tenant
    .command('create <name>')
    .description('Create a tenant (or set its quotas): PUT /t/<name>.')
    .requiredOption('--url <url>', 'the router\'s (or a node\'s) base URL, e.g. http://127.0.0.1:8080')
    .option('--quotas <json>', 'its quotas, e.g. \'{"rate": 50, "burst": 100, "maxBytes": 1073741824, "maxCollections": 20, "maxRows": 100000}\' (default: the node\'s)')
    .action((name: string, options: TenantOptions) => run('PUT', options.url, tenantPath(name), options.quotas === undefined ? undefined : quotasJson(options.quotas)));
  tenant
    .command('delete <name>')
    .description('Delete a tenant and its data: DELETE /t/<name>.')
    .requiredOption('--url <url>', 'the router\'s (or a node\'s) base URL')
    .action((name: string, options: TenantOptions) => run('DELETE', options.url, tenantPath(name)));
  tenant
    .command('list')
    .description('List the tenants (through a router: of every node, each named with its node): GET /_tenants.')
    .requiredOption('--url <url>', 'the router\'s (or a node\'s) base URL')
    .action((options: TenantOptions) => run('GET', options.url, '/_tenants'));
}

function tenantPath(name: string): string {
  if (!isTenantName(name)) usageError(NAME, `${JSON.stringify(name)} is not a tenant name: a-z, 0-9 and -, 1 to 63 characters, not starting with -`);
  return `/t/${name}`;
}

function quotasJson(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) return text;
  } catch {
    // refused below
  }
  return usageError(NAME, `--quotas takes a JSON object such as '{"rate": 50}', not ${text}`);
}

async function run(method: string, base: string, path: string, body?: string): Promise<void> {
  const token = process.env.FENEC_TOKEN || undefined;
  if (token === undefined) usageError(NAME, 'tenant needs the server token in $FENEC_TOKEN');
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
