/**
 * A tenant node's routes of its own, beside its tenants' work routes (node/http/routes.ts): the tenant's admin
 * (`PUT`/`DELETE /t/<tenant>`), the moves of its file (`_backup`, `_policy`, `_pause`, `_resume`, `_moved`: the
 * router's tenant move calls them), and the node's lists (`GET /_tenants`, `GET /_moved`). All take the server's
 * token only: it is not a JWT's own tenant that they create, delete or move.
 */
import type { ServerResponse } from 'node:http';
import { FenecError } from '../../shared/errors.js';
import type { FenecRequest, NodeHandler, NodeRoute, Reply } from '../http/request.js';
import { quotasOf, type Quotas } from './quotas.js';
import type { TenantAdmin } from './replicated-tenants.js';
import type { OpenTenant, TenantRegistry } from './tenant-registry.js';
import { QUOTAS_HEADER, type TenantTransfers } from './tenant-transfer.js';

const MAX_ADMIN_BODY = 64 * 1024;
/** How long a pause (a move, a restore over a live tenant) waits for the tenant's requests under way. */
const PAUSE_TIMEOUT_MS = 10_000;

export function tenantRoutes<T extends OpenTenant>(
  registry: TenantRegistry<T>,
  transfers: TenantTransfers<T>,
  admin?: TenantAdmin,
): NodeRoute[] {
  const route = (method: string, path: string, body: NodeRoute['body'], handler: NodeHandler): NodeRoute => ({
    methods: [method],
    path,
    access: 'server',
    body,
    handler,
  });
  const plain = (run: (req: FenecRequest, res: ServerResponse, reply: Reply, name: string) => void): NodeHandler => ({
    kind: 'plain',
    label: 'other',
    run: (req, res, reply) => run(req, res, reply, req.state.tenant),
  });
  const send = (req: FenecRequest, res: ServerResponse, reply: Reply, status: number, body: unknown): void =>
    reply.send(req, res, status, JSON.stringify(body));
  /** Answers with what `work` resolves to (nothing: it answered itself, a backup's stream). */
  const done = (req: FenecRequest, res: ServerResponse, reply: Reply, work: Promise<unknown>): void => {
    work.then(
      (body) => {
        if (body !== undefined) send(req, res, reply, 200, body);
      },
      (err: unknown) => {
        if (res.headersSent) res.destroy();
        else reply.fail(req, res, err);
      },
    );
  };
  const query = (req: FenecRequest): URLSearchParams => {
    const url = req.url ?? '/';
    const at = url.indexOf('?');
    return new URLSearchParams(at === -1 ? '' : url.slice(at));
  };

  return [
    route('PUT', '/t/<tenant>', MAX_ADMIN_BODY, {
      kind: 'json',
      label: 'other',
      refusals: {
        tooLarge: `a tenant's quotas fit in ${MAX_ADMIN_BODY} bytes`,
        notJson: 'the body of PUT /t/<tenant> is not JSON; send its quotas, e.g. {"rate": 50}',
      },
      run: (req, res, reply, body) => {
        const name = req.state.tenant;
        if (admin !== undefined) {
          return done(
            req,
            res,
            reply,
            admin.put(name, body).then(({ created }) => {
              send(req, res, reply, created ? 201 : 200, { name, quotas: registry.get(name).quotas, created });
              return undefined;
            }),
          );
        }
        let put: ReturnType<TenantRegistry<T>['put']>;
        try {
          put = registry.put(req.state.tenant, body);
        } catch (err) {
          return reply.fail(req, res, err);
        }
        const { tenant, created } = put;
        send(req, res, reply, created ? 201 : 200, { name: tenant.name, quotas: tenant.quotas, created });
      },
    }),
    route(
      'DELETE',
      '/t/<tenant>',
      'none',
      plain((req, res, reply, name) =>
        done(
          req,
          res,
          reply,
          (admin?.delete(name) ?? registry.delete(name)).then(() => ({ deleted: name })),
        ),
      ),
    ),
    // A copy out; a copy in (`?replace=true` over a tenant that exists), with the quotas it carried.
    route(
      'GET',
      '/t/<tenant>/_backup',
      'none',
      plain((req, res, reply, name) =>
        done(
          req,
          res,
          reply,
          (query(req).has('at') && admin !== undefined
            ? admin.backupAt(name, query(req).get('at')!, res)
            : transfers.backup(name, res)
          ).then(() => undefined),
        ),
      ),
    ),
    route(
      'PUT',
      '/t/<tenant>/_backup',
      'stream',
      plain((req, res, reply, name) =>
        done(
          req,
          res,
          reply,
          Promise.resolve()
            .then(() =>
              transfers.restore(name, req, {
                replace: query(req).get('replace') === 'true',
                quotas: quotasHeader(req.headers[QUOTAS_HEADER], registry.defaults),
                pauseTimeoutMs: PAUSE_TIMEOUT_MS,
              }),
            )
            .then(async ({ created, bytes }) => {
              await admin?.restored(name);
              send(req, res, reply, created ? 201 : 200, { restored: name, created, bytes });
              return undefined;
            }),
        ),
      ),
    ),
    // The tenant's own policy file, as JSON.
    route(
      'GET',
      '/t/<tenant>/_policy',
      'none',
      plain((req, res, reply, name) => {
        let text: string | undefined;
        try {
          text = transfers.policy(name);
        } catch (err) {
          return reply.fail(req, res, err);
        }
        send(req, res, reply, 200, { policy: text ?? null });
      }),
    ),
    route('PUT', '/t/<tenant>/_policy', MAX_ADMIN_BODY, {
      kind: 'json',
      label: 'other',
      refusals: {
        tooLarge: `a tenant's policy fits in ${MAX_ADMIN_BODY} bytes`,
        notJson: 'the body of PUT /t/<tenant>/_policy is not JSON',
      },
      run: (req, res, reply, body) => {
        const name = req.state.tenant;
        const policy = (body as { policy?: unknown } | null | undefined)?.policy;
        if (typeof policy !== 'string')
          return reply.fail(req, res, new FenecError('bad_request', `PUT /t/${name}/_policy takes {"policy": TEXT}`));
        done(
          req,
          res,
          reply,
          (admin?.setPolicy(name, policy) ?? transfers.setPolicy(name, policy)).then(() => ({ policy: name })),
        );
      },
    }),
    route(
      'POST',
      '/t/<tenant>/_pause',
      'none',
      plain((req, res, reply, name) =>
        done(
          req,
          res,
          reply,
          transfers.pause(name, PAUSE_TIMEOUT_MS).then(() => ({ paused: name })),
        ),
      ),
    ),
    route(
      'POST',
      '/t/<tenant>/_resume',
      'none',
      plain((req, res, reply, name) => {
        transfers.resume(name);
        send(req, res, reply, 200, { resumed: name });
      }),
    ),
    // The tenant now lives on NODE: its data here is deleted.
    route(
      'POST',
      '/t/<tenant>/_moved',
      'none',
      plain((req, res, reply, name) => {
        const to = query(req).get('to');
        if (to === null || to === '') {
          return reply.fail(
            req,
            res,
            new FenecError('bad_request', `POST /t/${name}/_moved takes ?to=NODE, the node the tenant moved to`),
          );
        }
        done(
          req,
          res,
          reply,
          transfers.markMoved(name, to).then(() => ({ moved: name, to })),
        );
      }),
    ),
    route(
      'GET',
      '/_tenants',
      'none',
      plain((req, res, reply) =>
        send(req, res, reply, 200, {
          tenants: registry.list().map((tenant) => ({ name: tenant.name, quotas: tenant.quotas })),
        }),
      ),
    ),
    route(
      'GET',
      '/_moved',
      'none',
      plain((req, res, reply) => send(req, res, reply, 200, { moved: transfers.moved() })),
    ),
  ];
}

/** The quotas a backup carried (its `fenec-quotas` header), or undefined when it carried none. */
function quotasHeader(value: string | string[] | undefined, defaults: Quotas): Quotas | undefined {
  if (typeof value !== 'string' || value === '') return undefined;
  try {
    return quotasOf(JSON.parse(value), defaults);
  } catch (err) {
    if (err instanceof FenecError) throw err;
    throw new FenecError('bad_request', `the ${QUOTAS_HEADER} header is not JSON quotas`);
  }
}
