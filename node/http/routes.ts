/**
 * fenec-server's routes, each declared once (shared/http/route-table.ts): the work routes that run in a worker
 * (`/query`, `/_mcp`, `/_revocations`), and the node's own (`/_health`, `/_metrics`, the console). A tenant node
 * adds its tenants' routes (node/tenants/tenant-routes.ts). Adding a route is one entry here or there.
 */
import { METADATA_PREFIX } from '../../shared/auth/oauth/resource.js';
import { serveConsole, type ConsoleKind } from '../../shared/console.js';
import { FenecError } from '../../shared/errors.js';
import { pathOf } from '../../shared/http/route-table.js';
import type { NodeHandler, NodeRoute } from './request.js';

const HEALTH_BODY = '{"status":"ok"}';

/**
 * The protected resource metadata (RFC 9728) of the resource `<prefix>/_mcp`, when OAuth is on: public, as the 401
 * that points to it, and readable by any page (an MCP client in a browser finds it). `exists` says whether a
 * tenant is here: one that is not is a 404 that tells nothing of the others.
 */
export function metadataRoutes(
  prefix: string,
  document: ((tenant: string) => string) | undefined,
  exists: (tenant: string) => boolean = () => true,
): NodeRoute[] {
  if (document === undefined) return [];
  return [
    {
      methods: ['GET', 'HEAD'],
      path: `${METADATA_PREFIX}${prefix}/_mcp`,
      access: 'public',
      body: 'none',
      handler: {
        kind: 'plain',
        label: METADATA_PREFIX,
        run: (req, res, reply) => {
          const tenant = req.state.tenant;
          if (!exists(tenant))
            return reply.fail(req, res, new FenecError('unknown_tenant', 'no such tenant on this server'));
          reply.send(req, res, 200, document(tenant), {
            'access-control-allow-origin': '*',
            'cache-control': 'max-age=300',
          });
        },
      },
    },
  ];
}

/**
 * The work routes under `prefix` ('' on a one-file server, `/t/<tenant>` on a tenant node): `/_mcp` only with --mcp.
 * No MCP stream is offered (GET), and no session is ever made to end (DELETE): they are 405.
 */
export function workRoutes(prefix: string, maxBody: number, mcp: boolean): NodeRoute[] {
  const routes: NodeRoute[] = [
    { methods: ['POST'], path: `${prefix}/query`, access: 'any', body: maxBody, handler: WORK_QUERY },
  ];
  if (mcp) routes.push({ methods: ['POST'], path: `${prefix}/_mcp`, access: 'any', body: maxBody, handler: WORK_MCP });
  routes.push({
    methods: ['GET', 'POST'],
    path: `${prefix}/_revocations`,
    access: 'server',
    body: maxBody,
    handler: WORK_REVOCATIONS,
  });
  return routes;
}

const WORK_QUERY: NodeHandler = { kind: 'work', label: '/query', work: '/query' };
const WORK_MCP: NodeHandler = { kind: 'work', label: '/_mcp', work: '/_mcp' };
const WORK_REVOCATIONS: NodeHandler = { kind: 'work', label: '/_revocations', work: '/_revocations' };

/**
 * The node's own routes: `/_health` for load balancers (no token, Host or Origin asked, and nothing told but that
 * it runs), `/_metrics` (the operator's: a JWT, whatever its policy, is not taken), and the console's files.
 */
export function ownRoutes(
  metrics: { text(): Promise<string>; readonly contentType: string },
  console: ConsoleKind,
): NodeRoute[] {
  return [
    {
      methods: ['GET', 'HEAD'],
      path: '/_health',
      access: 'public',
      body: 'none',
      handler: { kind: 'plain', label: '/_health', run: (req, res, reply) => reply.send(req, res, 200, HEALTH_BODY) },
    },
    {
      methods: ['GET', 'HEAD'],
      path: '/_metrics',
      access: 'server',
      body: 'none',
      handler: {
        kind: 'plain',
        label: '/_metrics',
        run: (req, res, reply) =>
          void metrics.text().then(
            (text) => reply.send(req, res, 200, text, { 'content-type': metrics.contentType }),
            (err: unknown) => reply.fail(req, res, err),
          ),
      },
    },
    {
      methods: ['GET', 'HEAD'],
      path: '/_console/*',
      access: 'public',
      body: 'none',
      handler: {
        kind: 'plain',
        label: 'other',
        run: (req, res) => serveConsole(req, res, pathOf(req.url ?? '/'), console),
      },
    },
  ];
}
