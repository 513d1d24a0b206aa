/**
 * A tenant node (`fenec-server --data-dir D`): the one-file server's handler once per open tenant,
 * behind a dispatcher that owns what is per tenant — the path `/t/<tenant>/…`, the token's tenant
 * claim, the quotas — and the admin routes `PUT`/`DELETE /t/<tenant>` and `GET /_tenants`.
 *
 * Order per request: the guard (Origin, then the token), the tenant claim, the tenant's existence,
 * its rate; only then is its file opened and the request handed on. A refusal reads no body, but for
 * an MCP message past the rate: a tools/call is answered as the tool's isError result, which a model
 * reads as it reads any other refusal (the body is read for its id, within --max-body).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Counter, Gauge } from 'prom-client';
import { Audit } from '../../shared/audit.js';
import { EMPTY_POLICY, grantedTools, parsePolicy, type Policy } from '../../shared/auth/policy.js';
import { asFenecError, FenecError } from '../../shared/errors.js';
import { isConsolePath, serveConsole } from '../../shared/console.js';
import type { Logger } from '../../shared/logger.js';
import { tracedListener } from '../../shared/tracing.js';
import { isTenantName } from '../../router/tenant-name.js';
import type { ServerConfig } from '../config.js';
import { FenecDatabase, type ExecuteOptions } from '../database.js';
import { RequestGuard, type Caller } from '../http/guard.js';
import { FenecRequest, HttpHandler, type Executor } from '../http/handler.js';
import { HttpMetrics } from '../http/metrics.js';
import { QUOTAS_HEADER, TenantTransfers } from './tenant-transfer.js';
import type { RunningServer } from '../http/server.js';
import { mcpEndpoint } from '../mcp/serve-mcp.js';
import type { McpEndpoint, McpReply } from '../../shared/mcp/endpoint.js';
import { Revocations } from '../storage/revocations.js';
import { QuotaExecutor } from './quota-executor.js';
import { quotasOf, type QuotaKind, type Quotas } from './quotas.js';
import { TenantRegistry, type Tenant } from './tenant-registry.js';

export interface TenantNodeOptions {
  /** Where tenants' files are (`--data-dir`). */
  readonly dataDir: string;
  /** How many tenants' files are open at once (`--max-open-tenants`); the least recently used is closed past it. */
  readonly maxOpenTenants: number;
  /** The quotas of a tenant created without its own (`--tenant-rate`, `--tenant-burst`, `--tenant-max-bytes`, …). */
  readonly quotas: Quotas;
}

interface OpenedTenant {
  readonly handler: HttpHandler;
  close(): void;
}

const MAX_ADMIN_BODY = 64 * 1024;
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** How long a pause (a move, a restore over a live tenant) waits for the tenant's requests under way. */
const PAUSE_TIMEOUT_MS = 10_000;
/** The tenant's routes that move its file (the server's token only). */
const TRANSFER_ROUTES: ReadonlySet<string> = new Set(['_backup', '_policy', '_pause', '_resume', '_moved']);

/** Nothing runs at the node's root: /query and /_mcp live under /t/<tenant>/. */
const NO_EXECUTOR: Executor = {
  execute: () => { throw new FenecError('not_found', 'a tenant node runs statements under /t/<tenant>/query'); },
  executeStatement: () => { throw new FenecError('not_found', 'a tenant node runs statements under /t/<tenant>/_mcp'); },
  statementOf: () => { throw new FenecError('not_found', 'a tenant node runs statements under /t/<tenant>/query'); },
};

/** Reads a request's body as text, or undefined past `limit` bytes (the rest is read and dropped). */
function readBody(req: http.IncomingMessage, limit: number, done: (body: string | undefined) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size <= limit) chunks.push(chunk);
  });
  req.on('end', () => done(size > limit ? undefined : Buffer.concat(chunks).toString('utf8')));
}

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

export function startTenantNode(config: ServerConfig, node: TenantNodeOptions, logger: Logger, audit: Audit = Audit.off): Promise<RunningServer & { registry: TenantRegistry<OpenedTenant> }> {
  const metrics = new HttpMetrics();
  const refusals = new Counter({
    name: 'fenec_tenant_quota_refusals_total',
    help: 'Requests and MCP tool calls refused for a tenant quota, by quota (rate, bytes, collections, rows). No tenant is a label.',
    labelNames: ['quota'],
    registers: [metrics.registry],
  });
  const refused = (quota: QuotaKind): void => refusals.inc({ quota });
  const guard = new RequestGuard(config, audit);
  const root = new HttpHandler(config, NO_EXECUTOR, guard, metrics, logger, audit);
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
    if (refuser === undefined) refusers.set(tenant, refuser = { endpoint: mcpEndpoint(NO_EXECUTOR, mcpOptions(tenant.name)), policy: policyOf(tenant.name) ?? EMPTY_POLICY });
    return refuser;
  };
  /** The tenant's own policy (`D/<tenant>.policy`), else the node's. @throws FenecError for a policy that does not parse. */
  const policyOf = (tenant: string): Policy | undefined => {
    const policyFile = path.join(node.dataDir, `${tenant}.policy`);
    return fs.existsSync(policyFile) ? parsePolicy(fs.readFileSync(policyFile, 'utf8'), policyFile) : config.policy;
  };

  const registry: TenantRegistry<OpenedTenant> = new TenantRegistry<OpenedTenant>(node.dataDir, node.quotas, node.maxOpenTenants, (tenant: Tenant, file: string): OpenedTenant => {
    const db = FenecDatabase.open({ file, readOnly: false, program: 'fenec-server', sweepIntervalMs: config.sweepIntervalMs, maxBytes: tenant.quotas.maxBytes });
    try {
      const policy = policyOf(tenant.name);
      const held = new QuotaExecutor(db, tenant.quotas, refused);
      const mcp = config.mcp === undefined ? undefined : mcpEndpoint(held, mcpOptions(tenant.name));
      const revocations = Revocations.open(file, false);
      const handler = new HttpHandler({ ...config, policy }, held, guard, metrics, logger, audit, mcp, { list: revocations, tenant: tenant.name });
      return {
        handler,
        close: () => {
          revocations.close();
          db.close();
        },
      };
    } catch (err) {
      db.close();
      throw err;
    }
  });
  const transfers = new TenantTransfers(node.dataDir, registry);
  new Gauge({
    name: 'fenec_tenants_open',
    help: 'Tenants whose file is open now.',
    registers: [metrics.registry],
    collect() { this.set(registry.openCount); },
  });
  new Gauge({
    name: 'fenec_tenants',
    help: 'Tenants on this node.',
    registers: [metrics.registry],
    collect() { this.set(registry.list().length); },
  });

  const handle = (request: http.IncomingMessage, res: http.ServerResponse): void => {
    const req = request as FenecRequest;
    const started = performance.now();
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const pathname = q === -1 ? url : url.slice(0, q);
    const send = (status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
      res.end(text);
      metrics.observe('other', status, (performance.now() - started) / 1000);
    };
    const fail = (err: unknown, headers?: http.OutgoingHttpHeaders): void => {
      const error = asFenecError(err);
      if (error.status >= 500) logger.error({ err: error.cause ?? error, code: error.code }, 'request failed');
      send(error.status, error.toJSON(), error.status === 401 ? { 'www-authenticate': 'Bearer', ...headers } : headers);
    };

    if (pathname === '/_moved') {
      if (req.method !== 'GET') return fail(new FenecError('method_not_allowed', '/_moved takes GET'));
      const caller = guard.caller(req, '/_moved', false);
      if (caller instanceof FenecError) return fail(caller);
      return send(200, { moved: transfers.moved() });
    }
    if (pathname === '/_tenants') {
      if (req.method !== 'GET') return fail(new FenecError('method_not_allowed', '/_tenants takes GET'));
      const caller = guard.caller(req, '/_tenants', false);
      if (caller instanceof FenecError) return fail(caller);
      return send(200, { tenants: registry.list().map((tenant) => ({ name: tenant.name, quotas: tenant.quotas })) });
    }
    if (isConsolePath(pathname)) return serveConsole(req, res, pathname, 'tenant-node');
    if (!pathname.startsWith('/t/')) {
      if (pathname === '/query' || pathname === '/_mcp') {
        return fail(new FenecError('not_found', `a tenant node serves ${pathname} under /t/<tenant>${pathname}`));
      }
      return root.handle(req, res);
    }
    const [, , name = '', route, ...more] = pathname.split('/');
    if (!isTenantName(name)) {
      return fail(new FenecError('invalid_tenant', `${JSON.stringify(name.slice(0, 80))} is not a tenant name: a-z, 0-9 and -, 1 to 63 characters, not starting with -`));
    }
    if (route === undefined) return admin(req, res, name, send, fail);
    if (more.length === 0 && TRANSFER_ROUTES.has(route)) return transfer(req, res, name, route, url.slice(q === -1 ? url.length : q), send, fail);
    if (more.length > 0 || (route !== 'query' && route !== '_mcp' && route !== '_revocations')) {
      return fail(new FenecError('not_found', `a tenant's routes are /t/${name}/query, /t/${name}/_mcp and /t/${name}/_revocations`));
    }
    const auditRoute = `/t/<tenant>/${route}`;
    const caller = guard.caller(req, auditRoute);
    if (caller instanceof FenecError) return fail(caller);
    if (caller.kind === 'jwt' && caller.claims.tenant !== name) {
      const claimed = typeof caller.claims.tenant === 'string' ? `tenant ${caller.claims.tenant}` : 'no tenant';
      audit.auth('wrong_tenant', req.socket.remoteAddress, auditRoute);
      return fail(new FenecError('wrong_tenant', `the token reaches ${claimed}, not ${name}`, { hint: `use a token minted with fenec token --tenant ${name}` }));
    }
    const moving = transfers.refusal(name);
    if (moving !== undefined) return fail(moving, { 'retry-after': '1' });
    let tenant: Tenant;
    try {
      tenant = registry.get(name);
    } catch (err) {
      return fail(err);
    }
    const wait = tenant.bucket.take();
    if (wait > 0) {
      refused('rate');
      const why = tenant.quotas.rate === 0 ? `tenant ${name} is paused (rate 0)` : `tenant ${name} is past its rate of ${tenant.quotas.rate} requests/s (burst ${tenant.quotas.burst})`;
      const error = new FenecError('quota_exceeded', why, { hint: `retry after ${wait} s` });
      const headers = { 'retry-after': String(wait) };
      if (route !== '_mcp' || req.method !== 'POST' || config.mcp === undefined) return fail(error, headers);
      return readBody(req, config.maxBodyBytes, (body) => {
        let reply: McpReply | undefined;
        try {
          const { endpoint, policy } = refuserOf(tenant);
          const tools = caller.kind === 'server' ? undefined : grantedTools(policy, caller.claims);
          if (body !== undefined) reply = endpoint.refuse(body, { options: optionsOf(caller), scoped: caller.kind === 'jwt', tools }, { error, details: { retry_after: wait } }, headerReader(req));
        } catch {
          // A tenant policy that does not parse: its requests fail when they run; this one stays a plain 429.
        }
        if (reply?.json === undefined) return fail(error, headers);
        res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply.json), ...headers });
        res.end(reply.json);
        metrics.observe('/_mcp', reply.status, (performance.now() - started) / 1000);
      });
    }
    let opened: OpenedTenant;
    try {
      opened = registry.acquire(tenant);
    } catch (err) {
      return fail(err);
    }
    res.once('close', () => registry.release(name, opened));
    req.url = q === -1 ? `/${route}` : `/${route}${url.slice(q)}`;
    opened.handler.handle(req, res);
  };

  /** PUT (create, or set quotas) and DELETE /t/<tenant>: the server's token only. */
  function admin(req: FenecRequest, res: http.ServerResponse, name: string, send: (status: number, body: unknown) => void, fail: (err: unknown) => void): void {
    const caller = guard.caller(req, '/t/<tenant>', false);
    if (caller instanceof FenecError) return fail(caller);
    if (req.method === 'DELETE') {
      try {
        registry.delete(name);
      } catch (err) {
        return fail(err);
      }
      return send(200, { deleted: name });
    }
    if (req.method !== 'PUT') return fail(new FenecError('method_not_allowed', `/t/${name} takes PUT (create, with quotas) and DELETE`));
    readBody(req, MAX_ADMIN_BODY, (read) => {
      if (read === undefined) return fail(new FenecError('payload_too_large', `a tenant's quotas fit in ${MAX_ADMIN_BODY} bytes`));
      const text = read.trim();
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        return fail(new FenecError('bad_json', 'the body of PUT /t/<tenant> is not JSON; send its quotas, e.g. {"rate": 50}'));
      }
      try {
        const { tenant, created } = registry.put(name, body);
        send(created ? 201 : 200, { name: tenant.name, quotas: tenant.quotas, created });
      } catch (err) {
        fail(err);
      }
    });
    void res;
  }

  /**
   * The server's token only: `GET|PUT /t/<tenant>/_backup` (a copy out; a copy in, `?replace=true`
   * over a tenant that exists), `GET|PUT /t/<tenant>/_policy` (its own policy file, as JSON), `POST /t/<tenant>/_pause|_resume`, and `POST /t/<tenant>/_moved?to=NODE`
   * (the tenant now lives on NODE: its data here is deleted). The router's tenant move calls them.
   */
  function transfer(req: FenecRequest, res: http.ServerResponse, name: string, route: string, search: string, send: (status: number, body: unknown) => void, fail: (err: unknown) => void): void {
    const caller = guard.caller(req, `/t/<tenant>/${route}`, false);
    if (caller instanceof FenecError) return fail(caller);
    const params = new URLSearchParams(search);
    const expected = route === '_backup' || route === '_policy' ? ['GET', 'PUT'] : ['POST'];
    if (!expected.includes(req.method ?? '')) return fail(new FenecError('method_not_allowed', `/t/${name}/${route} takes ${expected.join(' or ')}`));
    const done = (work: Promise<unknown>): void => {
      work.then((body) => { if (body !== undefined) send(200, body); }, (err) => {
        if (res.headersSent) res.destroy();
        else fail(err);
      });
    };
    switch (route) {
      case '_backup':
        if (req.method === 'GET') return done(transfers.backup(name, res).then(() => undefined));
        return done(Promise.resolve().then(() => transfers.restore(name, req, {
          replace: params.get('replace') === 'true',
          quotas: quotasHeader(req.headers[QUOTAS_HEADER], registry.defaults),
          pauseTimeoutMs: PAUSE_TIMEOUT_MS,
        })).then(({ created, bytes }) => { send(created ? 201 : 200, { restored: name, created, bytes }); }));
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
        return readBody(req, MAX_ADMIN_BODY, (body) => {
          if (body === undefined) return fail(new FenecError('payload_too_large', `a tenant's policy fits in ${MAX_ADMIN_BODY} bytes`));
          let policy: unknown;
          try {
            policy = (JSON.parse(body) as { policy?: unknown } | null)?.policy;
          } catch {
            return fail(new FenecError('bad_json', `the body of PUT /t/${name}/_policy is not JSON`));
          }
          if (typeof policy !== 'string') return fail(new FenecError('bad_request', `PUT /t/${name}/_policy takes {"policy": TEXT}`));
          try {
            transfers.setPolicy(name, policy);
          } catch (err) {
            return fail(err);
          }
          send(200, { policy: name });
        });
      case '_pause':
        return done(transfers.pause(name, PAUSE_TIMEOUT_MS).then(() => ({ paused: name })));
      case '_resume':
        transfers.resume(name);
        return send(200, { resumed: name });
      default: {
        const to = params.get('to');
        if (to === null || to === '') return fail(new FenecError('bad_request', `POST /t/${name}/_moved takes ?to=NODE, the node the tenant moved to`));
        try {
          transfers.markMoved(name, to);
        } catch (err) {
          return fail(err);
        }
        return send(200, { moved: name, to });
      }
    }
  }

  const listener = config.otel === undefined ? handle : tracedListener(handle, 'fenec-server');
  const server = http.createServer({ IncomingMessage: FenecRequest }, listener);
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.on('checkContinue', listener);
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new FenecError('invalid_option', `cannot listen on ${config.host}:${config.port}: ${(err as NodeJS.ErrnoException).code ?? err.message}`, { cause: err })));
    server.listen(config.port, config.host, () => {
      server.removeAllListeners('error');
      server.on('error', (err) => logger.error({ err }, 'server error'));
      const { port } = server.address() as AddressInfo;
      const host = config.host.includes(':') ? `[${config.host}]` : config.host;
      resolve({
        url: `http://${host}:${port}`,
        port,
        registry,
        close: () => new Promise<void>((done, failed) => {
          server.close((err) => {
            registry.closeAll();
            if (err === undefined) done();
            else failed(err);
          });
          server.closeIdleConnections();
          setTimeout(() => server.closeAllConnections(), 5000).unref();
        }),
      });
    });
  });
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
