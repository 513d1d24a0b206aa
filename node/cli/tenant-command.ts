/**
 * `fenec tenant create|delete|backup|restore|move NAME --url URL` and `fenec tenant list --url URL`: provisioning
 * through the router (or a node) with the server token from $FENEC_TOKEN. The answer's JSON goes
 * to stdout; a refusal's to stderr with exit status 1.
 */
import * as fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { isTenantName } from '../../shared/tenant-name.js';
import { adminRequest, adminSend, refused } from './admin-request.js';
import { usageError } from '../../shared/cli/command-line.js';

const NAME = 'fenec';

interface TenantOptions {
  url: string;
  quotas?: string;
}

export function addTenantCommand(program: Command): void {
  const tenant = program
    .command('tenant')
    .description('Create, delete and list tenants of a router or a tenant node (server token: $FENEC_TOKEN).');
  tenant
    .command('create <name>')
    .description('Create a tenant (or set its quotas): PUT /t/<name>.')
    .requiredOption('--url <url>', "the router's (or a node's) base URL, e.g. http://127.0.0.1:8080")
    .option(
      '--quotas <json>',
      'its quotas, e.g. \'{"rate": 50, "burst": 100, "maxBytes": 1073741824, "maxCollections": 20, "maxRows": 100000}\' (default: the node\'s)',
    )
    .action((name: string, options: TenantOptions) =>
      adminRequest(
        'PUT',
        options.url,
        tenantPath(name),
        options.quotas === undefined ? undefined : quotasJson(options.quotas),
      ),
    );
  tenant
    .command('delete <name>')
    .description('Delete a tenant and its data: DELETE /t/<name>.')
    .requiredOption('--url <url>', "the router's (or a node's) base URL")
    .action((name: string, options: TenantOptions) => adminRequest('DELETE', options.url, tenantPath(name)));
  tenant
    .command('backup <name>')
    .description(
      'Write a consistent copy of a tenant (its file, indexes included) to stdout while it keeps serving: GET /t/<name>/_backup.',
    )
    .requiredOption('--url <url>', "the router's (or the tenant's node's) base URL")
    .action((name: string, options: TenantOptions) => backup(options.url, tenantPath(name)));
  tenant
    .command('restore <name> <file>')
    .description("Make FILE (from fenec tenant backup) the tenant's data, creating the tenant: PUT /t/<name>/_backup.")
    .requiredOption('--url <url>', "the router's (or a node's) base URL")
    .option('--replace', 'replace the tenant if it exists (its requests wait while the file is swapped)')
    .action((name: string, file: string, options: TenantOptions & { replace?: boolean }) =>
      restore(options.url, tenantPath(name), file, options.replace === true),
    );
  tenant
    .command('move <name>')
    .description(
      'Move a tenant to another node, node to node over HTTP, while its clients wait (429 + Retry-After) a moment: POST /t/<name>/_move.',
    )
    .requiredOption('--to <node>', "the node to move it to, by its name in the router's --nodes")
    .requiredOption('--url <url>', "the router's base URL")
    .action((name: string, options: TenantOptions & { to: string }) =>
      adminRequest('POST', options.url, `${tenantPath(name)}/_move`, JSON.stringify({ to: options.to })),
    );
  tenant
    .command('list')
    .description('List the tenants (through a router: of every node, each named with its node): GET /_tenants.')
    .requiredOption('--url <url>', "the router's (or a node's) base URL")
    .action((options: TenantOptions) => adminRequest('GET', options.url, '/_tenants'));
}

function tenantPath(name: string): string {
  if (!isTenantName(name))
    usageError(
      NAME,
      `${JSON.stringify(name)} is not a tenant name: a-z, 0-9 and -, 1 to 63 characters, not starting with -`,
    );
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

/** The backup's bytes to stdout as they arrive (a refusal's JSON to stderr, exit 1). */
async function backup(base: string, path: string): Promise<void> {
  if (process.stdout.isTTY)
    usageError(NAME, "tenant backup writes the tenant's file to stdout: redirect it, e.g. > acme.fenec");
  const response = await adminSend('GET', base, `${path}/_backup`, {});
  if (response === undefined) return;
  if (response.status >= 400 || response.body === null) return refused(await response.text());
  await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream), process.stdout);
  process.stderr.write(`fenec: tenant ${path.slice(3)}: ${response.headers.get('content-length')} bytes written\n`);
}

async function restore(base: string, path: string, file: string, replace: boolean): Promise<void> {
  let size: number;
  try {
    size = fs.statSync(file).size;
  } catch (err) {
    return usageError(NAME, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const body = Readable.toWeb(fs.createReadStream(file)) as unknown as NonNullable<RequestInit['body']>;
  const response = await adminSend(
    'PUT',
    base,
    `${path}/_backup${replace ? '?replace=true' : ''}`,
    { 'content-type': 'application/vnd.sqlite3', 'content-length': String(size) },
    body,
  );
  if (response === undefined) return;
  const text = await response.text();
  if (response.status >= 400) return refused(text);
  process.stdout.write(`${text.trim()}\n`);
}
