/**
 * One OAuth stack for the tests: the development authorization server in this process, a tenant node
 * and a router as real processes, both with `--public-url` (the router's) and `--oauth-issuer`, the
 * router auditing to a file; tenants `a` and `b`, each with a memory collection and a row policy.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { printStatement } from '../../../shared/fenecql/print.js';
import { createMemories } from '../../../shared/mcp/memory.js';
import { startDevIssuer, type DevIssuer } from '../../../scripts/dev-oidc.js';
import { FENEC_ROUTER, request, Sandbox, type Reply, type ServerProcess } from '../processes.js';
import { freePort } from './sign-in.js';

export const TOKEN = 'oauth-test-server-token';
export const POLICY = 'memories read,write where owner = $jwt.sub\nnotes read,write where owner = $jwt.sub\n';

export interface Stack {
  readonly issuer: DevIssuer;
  readonly node: ServerProcess;
  readonly router: ServerProcess;
  readonly audit: string;
  readonly nodeAudit: string;
}

export async function startStack(sandbox: Sandbox, issuerPort = 0): Promise<Stack> {
  const issuer = await startDevIssuer({ port: issuerPort });
  const dir = sandbox.dir();
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const oauth = ['--public-url', publicUrl, '--oauth-issuer', issuer.issuer];
  const nodeAudit = path.join(dir, 'node-audit.log');
  const node = await sandbox.startServer([
    '--data-dir',
    path.join(dir, 'data'),
    '--http-token',
    TOKEN,
    '--mcp-write',
    '--mcp-memory',
    'memories',
    '--workers',
    '1',
    '--audit',
    nodeAudit,
    ...oauth,
  ]);
  const audit = path.join(dir, 'router-audit.log');
  const router = await sandbox.startProgram(FENEC_ROUTER, [
    '--port',
    String(port),
    '--workers',
    '1',
    '--nodes',
    `n1=${node.url}`,
    '--http-token',
    TOKEN,
    '--audit',
    audit,
    ...oauth,
  ]);
  for (const tenant of ['a', 'b']) {
    await admin(router, 'PUT', `/t/${tenant}`, '{}');
    await admin(node, 'PUT', `/t/${tenant}/_policy`, JSON.stringify({ policy: POLICY }));
    await admin(
      router,
      'POST',
      `/t/${tenant}/query`,
      JSON.stringify({ statement: printStatement(createMemories('memories', undefined)) }),
    );
  }
  return { issuer, node, router, audit, nodeAudit };
}

export async function admin(server: ServerProcess, method: string, route: string, body?: string): Promise<Reply> {
  const reply = await request(server.url, {
    method,
    path: route,
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body }),
  });
  if (reply.status >= 300) throw new Error(`${method} ${route}: ${reply.status} ${reply.text}`);
  return reply;
}

/** A tools/call or tools/list over MCP with a bearer token. */
export function mcp(
  server: ServerProcess,
  route: string,
  token: string,
  method: string,
  params: unknown = {},
): Promise<Reply> {
  return request(server.url, {
    method: 'POST',
    path: route,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
}

/** The audit's auth lines so far. */
export function authLines(file: string): Record<string, unknown>[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.event === 'auth');
}

/** A counter's value on /_metrics. */
export async function counter(server: ServerProcess, name: string, labels: string): Promise<number> {
  const reply = await request(server.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  const line = reply.text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}
