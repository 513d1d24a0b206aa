/**
 * `fenec tenant create|delete NAME --url URL` and `fenec tenant list --url URL`: provisioning
 * through the router (or a node) with the server token from $FENEC_TOKEN. The answer's JSON goes
 * to stdout; a refusal's to stderr with exit status 1.
 */
import type { Command } from 'commander';
import { isTenantName } from '../../router/tenant-name.js';
import { adminRequest } from './admin-request.js';
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
    .action((name: string, options: TenantOptions) => adminRequest('PUT', options.url, tenantPath(name), options.quotas === undefined ? undefined : quotasJson(options.quotas)));
  tenant
    .command('delete <name>')
    .description('Delete a tenant and its data: DELETE /t/<name>.')
    .requiredOption('--url <url>', 'the router\'s (or a node\'s) base URL')
    .action((name: string, options: TenantOptions) => adminRequest('DELETE', options.url, tenantPath(name)));
  tenant
    .command('list')
    .description('List the tenants (through a router: of every node, each named with its node): GET /_tenants.')
    .requiredOption('--url <url>', 'the router\'s (or a node\'s) base URL')
    .action((options: TenantOptions) => adminRequest('GET', options.url, '/_tenants'));
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
