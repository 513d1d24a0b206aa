/**
 * A tenant node (`fenec-server --data-dir D`): one handler for every tenant, behind a dispatcher
 * that owns what is per tenant — the path `/t/<tenant>/…`, the token's tenant claim, the quotas —
 * and the admin routes `PUT`/`DELETE /t/<tenant>` and `GET /_tenants`. Each tenant's file belongs
 * to one worker thread (WorkerPool), which runs its statements.
 *
 * Order per request: the front door (Origin, the token, its tenant claim: asked once), the tenant's existence,
 * its rate, its worker time; only then is its file opened and the request handed on. A refusal reads
 * no body, but for an MCP message past the rate or the worker time: a tools/call is answered as the
 * tool's isError result, which a model reads as it reads any other refusal (the body is read for its
 * id, within --max-body).
 */
import * as fs from 'node:fs';
import type * as http from 'node:http';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { context } from '@opentelemetry/api';
import { Gauge } from 'prom-client';
import { Audit } from '../../shared/audit.js';
import { EMPTY_POLICY, grantedTools, parsePolicy, type Policy } from '../../shared/auth/policy.js';
import { METADATA_PREFIX, metadataRequest } from '../../shared/auth/oauth/resource.js';
import { FenecError } from '../../shared/errors.js';
import { isConsolePath, serveConsole } from '../../shared/console.js';
import { readBody, readJson } from '../../shared/http/body.js';
import { FrontDoor, type Caller } from '../../shared/http/front-door.js';
import { closeServer, listen, type RunningServer } from '../../shared/http/listen.js';
import type { Logger } from '../../shared/logger.js';
import { requestContext } from '../../shared/tracing.js';
import { invalidTenant, isTenantName } from '../../shared/tenant-name.js';
import type { TenantNodeConfig } from '../config.js';
import type { McpEndpoint, McpReply } from '../../shared/mcp/endpoint.js';
import type { ExecuteOptions } from '../database.js';
import { FenecRequest, HttpHandler } from '../http/handler.js';
import { HttpMetrics } from '../http/metrics.js';
import { CLOSE_GRACE_MS, createServer } from '../http/server.js';
import { mcpEndpoint } from '../mcp/serve-mcp.js';
import { acquireLock, type FileLock } from '../storage/lock.js';
import type { TenantLimits } from '../workers/protocol.js';
import { replyError, WorkerPool, workerSetup } from '../workers/worker-pool.js';
import { quotasOf, type QuotaKind, type Quotas } from './quotas.js';
import { TenantRegistry, type Tenant } from './tenant-registry.js';
import { QUOTAS_HEADER, TenantTransfers } from './tenant-transfer.js';

export interface TenantNodeOptions {
  /** How many tenants' files are open at once (`--max-open-tenants`); the least recently used is closed past it. */
  readonly maxOpenTenants: number;
  /** The quotas of a tenant created without its own (`--tenant-rate`, `--tenant-burst`, `--tenant-max-bytes`, …). */
  readonly quotas: Quotas;
}

interface OpenedTenant {
  close(): Promise<void>;
}

const MAX_ADMIN_BODY = 64 * 1024;
/** How long a pause (a move, a restore over a live tenant) waits for the tenant's requests under way. */
const PAUSE_TIMEOUT_MS = 10_000;
/** The tenant's routes that move its file (the server's token only). */
const TRANSFER_ROUTES: ReadonlySet<string> = new Set(['_backup', '_policy', '_pause', '_resume', '_moved']);

/** The options a caller's statements run under, as the handler gives them (no policy: a refused call runs nothing). */
function optionsOf(caller: Caller): ExecuteOptions {
  return caller.kind === 'server' ? {} : { jwt: caller.claims };
}

function headerReader(req: http.IncomingMessage): (name: string) => string | undefined {
  return (name) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}

/** Nothing runs here: the MCP endpoint that answers a refused call runs no tool. */
const NO_EXECUTOR = {
  execute: () => {
    throw new FenecError('internal', 'a refused MCP call runs no statement');
  },
  executeStatement: () => {
    throw new FenecError('internal', 'a refused MCP call runs no statement');
  },
  statementOf: () => {
    throw new FenecError('internal', 'a refused MCP call runs no statement');
  },
};

/** What a tenant's worker holds its file and statements to. */
function limitsOf(quotas: Quotas): TenantLimits {
  return {
    maxBytes: quotas.maxBytes,
    maxCollections: quotas.maxCollections,
    maxRows: quotas.maxRows,
    maxAnswerBytes: quotas.maxAnswerBytes,
    statementTimeoutMs: quotas.statementTimeoutMs,
  };
}

export function startTenantNode(
  config: TenantNodeConfig,
  node: TenantNodeOptions,
  logger: Logger,
  audit: Audit = Audit.off,
): Promise<RunningServer & { registry: TenantRegistry<OpenedTenant> }> {
  const metrics = new HttpMetrics();
  const refusals = metrics.counter(
    'fenec_tenant_quota_refusals_total',
    'Requests and MCP tool calls refused for a tenant quota, by quota (rate, cost: worker time, bytes, collections, rows). No tenant is a label.',
    ['quota'],
  );
  const refused = (quota: QuotaKind): void => refusals.inc({ quota });
  const dataDir = config.where.dataDir;
  const door = new FrontDoor(config, audit, metrics.authRefused);
  const root = new HttpHandler(config, undefined, door, metrics, logger);
  const pool = new WorkerPool({ workers: config.workers, logger, setup: workerSetup(config) });
  const mcpOptions = (tenant: string) => ({
    write: config.mcp?.write ?? false,
    memory: config.mcp?.memory,
    readOnly: config.httpReadOnly,
    audit,
    logger,
    tenant,
    cursorSecret: config.cursorSecret,
    count: (tool: string, outcome: 'ok' | 'refused' | 'failed') => metrics.toolCall(tool, outcome),
  });
  /**
   * What answers the MCP calls of a tenant past its rate, without opening its file (its tools never
   * run): made at the tenant's first refusal, and gone with the tenant (or its quotas) it was made for.
   */
  const refusers = new WeakMap<Tenant, { endpoint: McpEndpoint<ExecuteOptions>; policy: Policy }>();
  const refuserOf = (tenant: Tenant): { endpoint: McpEndpoint<ExecuteOptions>; policy: Policy } => {
    let refuser = refusers.get(tenant);
    if (refuser === undefined)
      refusers.set(
        tenant,
        (refuser = {
          endpoint: mcpEndpoint(NO_EXECUTOR, mcpOptions(tenant.name)),
          policy: policyOf(tenant.name) ?? EMPTY_POLICY,
        }),
      );
    return refuser;
  };
  /**
   * The tenant's own policy (`D/<tenant>.policy`), else the node's. @throws FenecError for a policy that does not
   * parse.
   */
  const policyOf = (tenant: string): Policy | undefined => {
    const policyFile = path.join(dataDir, `${tenant}.policy`);
    return fs.existsSync(policyFile) ? parsePolicy(fs.readFileSync(policyFile, 'utf8'), policyFile) : config.policy;
  };

  const tenants = new HttpHandler(
    config,
    async (req, work) => {
      const tenant = registry.get(req.tenant);
      // Quotas set with PUT apply from the next request on.
      return pool.run(tenant.name, limitsOf(tenant.quotas), work).then((reply) => {
        tenant.cost.charge(reply.ms);
        if (reply.quotas !== undefined) for (const quota of reply.quotas) refused(quota);
        return reply;
      });
    },
    door,
    metrics,
    logger,
    config.mcp !== undefined,
  );

  // The serving thread holds each open file's lock for the worker that opens it: a worker replaced
  // after a time limit opens the file again under the same lock. A file reopened before its worker
  // closed it (new quotas) keeps its lock: it is released when its last opening is closed.
  const locks = new Map<string, { lock: FileLock; opened: number }>();
  const registry: TenantRegistry<OpenedTenant> = new TenantRegistry<OpenedTenant>(
    dataDir,
    node.quotas,
    node.maxOpenTenants,
    (tenant: Tenant, file: string): OpenedTenant => {
      let held = locks.get(tenant.name);
      if (held === undefined) locks.set(tenant.name, (held = { lock: acquireLock(file, 'fenec-server'), opened: 0 }));
      held.opened += 1;
      const lock = held;
      return {
        close: () =>
          pool.close(tenant.name).finally(() => {
            lock.opened -= 1;
            if (lock.opened > 0) return;
            lock.lock.release();
            locks.delete(tenant.name);
          }),
      };
    },
  );
  const transfers = new TenantTransfers(dataDir, registry, async (tenant) => {
    // Its worker makes the file, with the catalogue, as at a tenant's first request.
    const opened = registry.acquire(tenant);
    try {
      const reply = await pool.open(tenant.name, limitsOf(tenant.quotas));
      if (reply.status !== 200) throw replyError(reply);
    } finally {
      registry.release(tenant.name, opened);
    }
  });
  new Gauge({
    name: 'fenec_tenants_open',
    help: 'Tenants whose file is open now.',
    registers: [metrics.registry],
    collect() {
      this.set(registry.openCount);
    },
  });
  new Gauge({
    name: 'fenec_tenants',
    help: 'Tenants on this node.',
    registers: [metrics.registry],
    collect() {
      this.set(registry.list().length);
    },
  });

  const handle = (request: http.IncomingMessage, res: http.ServerResponse): void => {
    const req = request as FenecRequest;
    req.started = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    const send = (status: number, body: unknown): void => tenants.send(req, res, status, JSON.stringify(body));
    const fail = (err: unknown, headers?: http.OutgoingHttpHeaders): void => tenants.fail(req, res, err, headers);

    if (pathname === '/_tenants') {
      if (req.method !== 'GET') return fail(new FenecError('method_not_allowed', '/_tenants takes GET'));
      const caller = door.caller(req, '/_tenants', 'server');
      if (caller instanceof FenecError) return fail(caller);
      return send(200, { tenants: registry.list().map((tenant) => ({ name: tenant.name, quotas: tenant.quotas })) });
    }
    if (pathname === '/_moved') {
      if (req.method !== 'GET') return fail(new FenecError('method_not_allowed', '/_moved takes GET'));
      const caller = door.caller(req, '/_moved', 'server');
      if (caller instanceof FenecError) return fail(caller);
      return send(200, { moved: transfers.moved() });
    }
    if (isConsolePath(pathname)) return serveConsole(req, res, pathname, 'tenant-node');
    const metadata = metadataRequest(pathname);
    if (metadata?.tenant !== undefined && door.metadata(metadata.tenant) !== undefined)
      return resourceMetadata(req, res, metadata.tenant, fail);
    if (!pathname.startsWith('/t/')) {
      if (pathname === '/query' || pathname === '/_mcp') {
        return fail(new FenecError('not_found', `a tenant node serves ${pathname} under /t/<tenant>${pathname}`));
      }
      return root.handle(req, res);
    }
    const [, , name = '', route, ...more] = pathname.split('/');
    if (!isTenantName(name)) return fail(invalidTenant(name));
    if (route === undefined) return admin(req, name, send, fail);
    if (more.length === 0 && TRANSFER_ROUTES.has(route))
      return transfer(req, res, name, route, url.slice(q === -1 ? url.length : q), send, fail);
    if (more.length > 0 || (route !== 'query' && route !== '_mcp' && route !== '_revocations')) {
      return fail(
        new FenecError(
          'not_found',
          `a tenant's routes are /t/${name}/query, /t/${name}/_mcp and /t/${name}/_revocations`,
        ),
      );
    }
    const checked = door.tenantCaller(req, name, `/t/<tenant>/${route}`, route === '_revocations' ? 'server' : 'any');
    // An OAuth token not seen before is verified asynchronously; the body waits in the socket meanwhile.
    if (checked instanceof Promise) {
      checked.then((caller) => admitted(req, res, name, route, url, q, caller, fail), fail);
      return;
    }
    admitted(req, res, name, route, url, q, checked, fail);
  };

  /** A tenant's route once the front door answered: its refusal, or the tenant's checks and the request handed on. */
  function admitted(
    req: FenecRequest,
    res: http.ServerResponse,
    name: string,
    route: string,
    url: string,
    q: number,
    caller: Caller | FenecError,
    fail: (err: unknown, headers?: http.OutgoingHttpHeaders) => void,
  ): void {
    if (caller instanceof FenecError) return fail(caller);
    const moving = transfers.refusal(name);
    if (moving !== undefined) return fail(moving, { 'retry-after': '1' });
    let tenant: Tenant;
    try {
      tenant = registry.get(name);
    } catch (err) {
      return fail(err);
    }
    /** A quota's refusal: over MCP, a tools/call's isError result; else the error with Retry-After. */
    function refuse(error: FenecError, wait: number): void {
      const headers = { 'retry-after': String(wait) };
      if (route !== '_mcp' || req.method !== 'POST' || config.mcp === undefined) return fail(error, headers);
      const asking = caller as Caller;
      req.route = '/_mcp';
      // A body past the limit, or a request that failed before its end, is answered the plain refusal.
      void readBody(req, config.maxBodyBytes)
        .catch(() => undefined)
        .then((body) => {
          let reply: McpReply | undefined;
          try {
            const { endpoint, policy } = refuserOf(tenant);
            const tools = asking.kind === 'server' ? undefined : grantedTools(policy, asking.claims);
            // The tool's span is the request's child, though the body came in after the request's call.
            if (body !== undefined)
              reply = context.with(requestContext(req), () =>
                endpoint.refuse(
                  body,
                  { options: optionsOf(asking), scoped: asking.kind === 'jwt', tools },
                  { error, details: { retry_after: wait } },
                  headerReader(req),
                ),
              );
          } catch {
            // A tenant policy that does not parse: its requests fail when they run; this one stays a plain 429.
          }
          if (reply?.json === undefined) return fail(error, headers);
          tenants.send(req, res, reply.status, reply.json, headers);
        });
    }
    const wait = tenant.bucket.take();
    if (wait > 0) {
      refused('rate');
      const why =
        tenant.quotas.rate === 0
          ? `tenant ${name} is paused (rate 0)`
          : `tenant ${name} is past its rate of ${tenant.quotas.rate} requests/s (burst ${tenant.quotas.burst})`;
      return refuse(new FenecError('quota_exceeded', why, { hint: `retry after ${wait} s` }), wait);
    }
    const owed = tenant.cost.check();
    if (owed > 0) {
      refused('cost');
      return refuse(
        new FenecError(
          'quota_exceeded',
          `tenant ${name} is past its worker time of ${tenant.quotas.costMs} ms per second`,
          {
            hint: `retry after ${owed} s; cheaper statements (a filter on an indexed field, a limit) use less, or raise the tenant's costMs (PUT /t/<tenant>)`,
          },
        ),
        owed,
      );
    }
    let opened: OpenedTenant;
    try {
      opened = registry.acquire(tenant);
    } catch (err) {
      return fail(err);
    }
    res.once('close', () => registry.release(name, opened));
    req.url = q === -1 ? `/${route}` : `/${route}${url.slice(q)}`;
    req.tenant = name;
    req.caller = caller;
    tenants.handle(req, res);
  }

  /**
   * A tenant's protected resource metadata (RFC 9728): public, as the 401 that points to it. A name that is no
   * tenant here is a 404 that tells nothing of the others.
   */
  function resourceMetadata(
    req: FenecRequest,
    res: http.ServerResponse,
    name: string,
    fail: (err: unknown, headers?: http.OutgoingHttpHeaders) => void,
  ): void {
    req.route = METADATA_PREFIX;
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return fail(new FenecError('method_not_allowed', `${METADATA_PREFIX}/t/<tenant>/_mcp takes GET`));
    if (!isTenantName(name) || !registry.has(name))
      return fail(new FenecError('unknown_tenant', 'no such tenant on this server'));
    tenants.sendMetadata(req, res, door.metadata(name)!);
  }

  /** PUT (create, or set quotas) and DELETE /t/<tenant>: the server's token only. */
  function admin(
    req: FenecRequest,
    name: string,
    send: (status: number, body: unknown) => void,
    fail: (err: unknown) => void,
  ): void {
    if (req.method !== 'PUT' && req.method !== 'DELETE')
      return fail(new FenecError('method_not_allowed', `/t/${name} takes PUT (create, with quotas) and DELETE`));
    const caller = door.caller(req, `${req.method} /t/<tenant>`, 'server');
    if (caller instanceof FenecError) return fail(caller);
    if (req.method === 'DELETE') {
      registry.delete(name).then(() => send(200, { deleted: name }), fail);
      return;
    }
    readJson(req, MAX_ADMIN_BODY, {
      tooLarge: `a tenant's quotas fit in ${MAX_ADMIN_BODY} bytes`,
      notJson: 'the body of PUT /t/<tenant> is not JSON; send its quotas, e.g. {"rate": 50}',
    })
      .then((body) => {
        const { tenant, created } = registry.put(name, body);
        send(created ? 201 : 200, { name: tenant.name, quotas: tenant.quotas, created });
      })
      .catch(fail);
  }

  /**
   * The server's token only: `GET|PUT /t/<tenant>/_backup` (a copy out; a copy in, `?replace=true` over a tenant that
   * exists), `GET|PUT /t/<tenant>/_policy` (its own policy file, as JSON), `POST /t/<tenant>/_pause|_resume`, and `POST
   * /t/<tenant>/_moved?to=NODE` (the tenant now lives on NODE: its data here is deleted). The router's tenant move
   * calls them.
   */
  function transfer(
    req: FenecRequest,
    res: http.ServerResponse,
    name: string,
    route: string,
    search: string,
    send: (status: number, body: unknown) => void,
    fail: (err: unknown) => void,
  ): void {
    const expected = route === '_backup' || route === '_policy' ? ['GET', 'PUT'] : ['POST'];
    if (!expected.includes(req.method ?? ''))
      return fail(new FenecError('method_not_allowed', `/t/${name}/${route} takes ${expected.join(' or ')}`));
    const caller = door.caller(req, `/t/<tenant>/${route}`, 'server');
    if (caller instanceof FenecError) return fail(caller);
    const params = new URLSearchParams(search);
    const done = (work: Promise<unknown>): void => {
      work.then(
        (body) => {
          if (body !== undefined) send(200, body);
        },
        (err) => {
          if (res.headersSent) res.destroy();
          else fail(err);
        },
      );
    };
    switch (route) {
      case '_backup':
        if (req.method === 'GET') return done(transfers.backup(name, res).then(() => undefined));
        return done(
          Promise.resolve()
            .then(() =>
              transfers.restore(name, req, {
                replace: params.get('replace') === 'true',
                quotas: quotasHeader(req.headers[QUOTAS_HEADER], registry.defaults),
                pauseTimeoutMs: PAUSE_TIMEOUT_MS,
              }),
            )
            .then(({ created, bytes }) => {
              send(created ? 201 : 200, { restored: name, created, bytes });
            }),
        );
      case '_policy':
        if (req.method === 'GET') {
          let text: string | undefined;
          try {
            text = transfers.policy(name);
          } catch (err) {
            return fail(err);
          }
          return send(200, { policy: text ?? null });
        }
        return done(
          readJson(req, MAX_ADMIN_BODY, {
            tooLarge: `a tenant's policy fits in ${MAX_ADMIN_BODY} bytes`,
            notJson: `the body of PUT /t/${name}/_policy is not JSON`,
          }).then((body) => {
            const policy = (body as { policy?: unknown } | null | undefined)?.policy;
            if (typeof policy !== 'string')
              throw new FenecError('bad_request', `PUT /t/${name}/_policy takes {"policy": TEXT}`);
            return transfers.setPolicy(name, policy).then(() => ({ policy: name }));
          }),
        );
      case '_pause':
        return done(transfers.pause(name, PAUSE_TIMEOUT_MS).then(() => ({ paused: name })));
      case '_resume':
        transfers.resume(name);
        return send(200, { resumed: name });
      default: {
        const to = params.get('to');
        if (to === null || to === '')
          return fail(
            new FenecError('bad_request', `POST /t/${name}/_moved takes ?to=NODE, the node the tenant moved to`),
          );
        return done(transfers.markMoved(name, to).then(() => ({ moved: name, to })));
      }
    }
  }

  const server = createServer(config, handle);
  return listen(server, config, logger, async () => {
    tenants.stop();
    await closeServer(server, config.statementTimeoutMs + CLOSE_GRACE_MS);
    await registry.closeAll();
    await pool.stop();
  }).then((running) => ({ ...running, registry }));
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
