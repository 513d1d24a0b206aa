/**
 * fenec-router's routes, each declared once (shared/http/route-table.ts). A tenant's routes are forwarded to its
 * node, streamed both ways, once the front door let them through: the node answers for their methods and bodies.
 * `POST /t/<tenant>/_move` is done here, node to node; `GET /_tenants` asks every node; `/_health`, `/_metrics` and
 * the console are the router's own. Adding a route is one entry here.
 */
import type * as http from 'node:http';
import type { ConsoleKind } from '../shared/console.js';
import { METADATA_PREFIX } from '../shared/auth/oauth/resource.js';
import { serveConsole } from '../shared/console.js';
import type { BodyRefusals } from '../shared/http/body.js';
import { pathOf, type Route } from '../shared/http/route-table.js';

/** How the router answers a route of its own: JSON, counted under no node; an error as a node writes it. */
export interface RouterReply {
  send(req: http.IncomingMessage, res: http.ServerResponse, status: number, body: unknown): void;
  fail(req: http.IncomingMessage, res: http.ServerResponse, err: unknown): void;
}

/**
 * `forward` sends the request on to the tenant's node; `json` is given its small body parsed; `plain` answers
 * from the router itself.
 */
export type RouterHandler =
  | { readonly kind: 'forward' }
  | {
      readonly kind: 'json';
      readonly refusals?: BodyRefusals;
      run(req: http.IncomingMessage, res: http.ServerResponse, tenant: string, body: unknown): void;
    }
  | { readonly kind: 'plain'; run(req: http.IncomingMessage, res: http.ServerResponse): void };

export type RouterRoute = Route<RouterHandler>;

/** What the router's own routes do, given by router-app.ts. */
export interface RouterParts {
  readonly health: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  readonly metrics: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  readonly tenants: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  readonly move: (req: http.IncomingMessage, res: http.ServerResponse, tenant: string, body: unknown) => void;
  readonly console: ConsoleKind;
}

const FORWARD: RouterHandler = { kind: 'forward' };
/** `{"to": NODE}` */
const MAX_MOVE_BODY = 4096;

/** `oauth`: the router takes OAuth tokens, and forwards a tenant's protected resource metadata to its node. */
export function routerRoutes(parts: RouterParts, oauth = false): RouterRoute[] {
  const forward = (methods: string[], path: string, access: 'any' | 'server'): RouterRoute => ({
    methods,
    path,
    access,
    body: 'stream',
    handler: FORWARD,
  });
  const own = (
    methods: string[],
    path: string,
    access: RouterRoute['access'],
    run: typeof parts.health,
  ): RouterRoute => ({
    methods,
    path,
    access,
    body: 'none',
    handler: { kind: 'plain', run },
  });
  return [
    // The hot routes: any method, as the node answers for it.
    forward(['*'], '/t/<tenant>/query', 'any'),
    forward(['*'], '/t/<tenant>/_mcp', 'any'),
    forward(['*'], '/t/<tenant>/_revocations', 'server'),
    // Create (with quotas) or delete: not the JWT's own tenant that it would create or delete.
    forward(['PUT', 'DELETE'], '/t/<tenant>', 'server'),
    forward(['GET', 'PUT'], '/t/<tenant>/_backup', 'server'),
    {
      methods: ['POST'],
      path: '/t/<tenant>/_move',
      access: 'server',
      body: MAX_MOVE_BODY,
      handler: { kind: 'json', run: parts.move },
    },
    own(['GET'], '/_tenants', 'server', parts.tenants),
    own(['GET', 'HEAD'], '/_health', 'public', parts.health),
    own(['GET'], '/_metrics', 'server', parts.metrics),
    own(['GET', 'HEAD'], '/_console/*', 'public', (req, res) =>
      serveConsole(req, res, pathOf(req.url ?? '/'), parts.console),
    ),
    // The node that holds the tenant answers its metadata (RFC 9728), or says no such tenant is there.
    ...(oauth
      ? [
          {
            methods: ['GET', 'HEAD'],
            path: `${METADATA_PREFIX}/t/<tenant>/_mcp`,
            access: 'public',
            body: 'stream',
            handler: FORWARD,
          } as const,
        ]
      : []),
  ];
}
