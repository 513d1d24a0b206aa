/**
 * A tenant node's stages between the front door and the body (node/http/handler.ts), for `/t/<tenant>/query`,
 * `/_mcp` and `/_revocations`: the tenant (it exists, it is not moving, its file is taken open for the request),
 * then its quotas (its rate, its worker time). A refusal reads no body, but for an MCP message: a tools/call past a
 * quota is answered as the tool's isError result, which a model reads as it reads any other refusal (the body is
 * read for its id, within --max-body).
 */
import * as fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { context } from '@opentelemetry/api';
import { scopedTools } from '../../shared/auth/oauth/scopes.js';
import { TOOL_NAMES } from '../../shared/mcp/tools.js';
import type { Audit } from '../../shared/audit.js';
import { EMPTY_POLICY, grantedTools, parsePolicy, type Policy } from '../../shared/auth/policy.js';
import { FenecError } from '../../shared/errors.js';
import type { McpEndpoint } from '../../shared/mcp/endpoint.js';
import type { Logger } from '../../shared/logger.js';
import { requestContext } from '../../shared/tracing.js';
import type { TenantNodeConfig } from '../config.js';
import type { ExecuteOptions } from '../database.js';
import type { TenantStages } from '../http/handler.js';
import type { HttpMetrics } from '../http/metrics.js';
import type { FenecRequest, Reply } from '../http/request.js';
import { mcpEndpoint } from '../mcp/serve-mcp.js';
import type { QuotaKind } from './quotas.js';
import type { OpenTenant, Tenant, TenantRegistry } from './tenant-registry.js';
import type { TenantTransfers } from './tenant-transfer.js';

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

interface Refuser {
  readonly endpoint: McpEndpoint<ExecuteOptions>;
  readonly policy: Policy;
}

export interface TenantStageParts<T extends OpenTenant> {
  readonly config: TenantNodeConfig;
  readonly registry: TenantRegistry<T>;
  readonly transfers: TenantTransfers<T>;
  readonly metrics: HttpMetrics;
  readonly audit: Audit;
  readonly logger: Logger;
  /** Counts a quota's refusal. */
  readonly refused: (quota: QuotaKind) => void;
  /** The refusal of a tenant another node serves (a replicated node, `--nats`), or undefined. */
  readonly elsewhere?: (tenant: string) => FenecError | undefined;
}

export class TenantNodeStages<T extends OpenTenant> implements TenantStages {
  readonly #parts: TenantStageParts<T>;
  /**
   * What answers the MCP calls of a tenant past its rate, without opening its file (its tools never run): made at
   * the tenant's first refusal, and gone with the tenant (or its quotas) it was made for.
   */
  readonly #refusers = new WeakMap<Tenant, Refuser>();
  /** The tenant each request under way is for, from the tenant stage to its quotas. */
  readonly #tenantOf = new WeakMap<FenecRequest, Tenant>();

  constructor(parts: TenantStageParts<T>) {
    this.#parts = parts;
  }

  tenant(req: FenecRequest, res: ServerResponse, reply: Reply): boolean {
    const name = req.state.tenant;
    const { registry, transfers } = this.#parts;
    const moving = transfers.refusal(name) ?? (registry.has(name) ? this.#parts.elsewhere?.(name) : undefined);
    if (moving !== undefined) {
      reply.fail(req, res, moving, { 'retry-after': '1' });
      return false;
    }
    try {
      this.#tenantOf.set(req, registry.get(name));
    } catch (err) {
      reply.fail(req, res, err);
      return false;
    }
    return true;
  }

  quota(req: FenecRequest, res: ServerResponse, reply: Reply): boolean {
    const tenant = this.#tenantOf.get(req)!;
    const name = tenant.name;
    const wait = tenant.bucket.take();
    if (wait > 0) {
      this.#parts.refused('rate');
      const why =
        tenant.quotas.rate === 0
          ? `tenant ${name} is paused (rate 0)`
          : `tenant ${name} is past its rate of ${tenant.quotas.rate} requests/s (burst ${tenant.quotas.burst})`;
      return this.#refuse(
        req,
        res,
        reply,
        new FenecError('quota_exceeded', why, { hint: `retry after ${wait} s` }),
        wait,
      );
    }
    const owed = tenant.cost.check();
    if (owed > 0) {
      this.#parts.refused('cost');
      const error = new FenecError(
        'quota_exceeded',
        `tenant ${name} is past its worker time of ${tenant.quotas.costMs} ms per second`,
        {
          hint: `retry after ${owed} s; cheaper statements (a filter on an indexed field, a limit) use less, or raise the tenant's costMs (PUT /t/<tenant>)`,
        },
      );
      return this.#refuse(req, res, reply, error, owed);
    }
    let opened: T;
    try {
      opened = this.#parts.registry.acquire(tenant);
    } catch (err) {
      reply.fail(req, res, err);
      return false;
    }
    res.once('close', () => this.#parts.registry.release(name, opened));
    return true;
  }

  /** A quota's refusal: an MCP message goes on to its body (refuseMcp); else the error with Retry-After. */
  #refuse(req: FenecRequest, res: ServerResponse, reply: Reply, error: FenecError, wait: number): boolean {
    if (req.state.route?.handler.label !== '/_mcp' || req.method !== 'POST') {
      reply.fail(req, res, error, { 'retry-after': String(wait) });
      return false;
    }
    req.state.refusal = { error, wait };
    return true;
  }

  refuseMcp(req: FenecRequest, res: ServerResponse, reply: Reply, body: Uint8Array): void {
    const { error, wait } = req.state.refusal!;
    const headers = { 'retry-after': String(wait) };
    const caller = req.state.caller!;
    let answer: ReturnType<McpEndpoint<ExecuteOptions>['refuse']>;
    try {
      const { endpoint, policy } = this.#refuserOf(this.#tenantOf.get(req)!);
      const granted = caller.kind === 'server' ? undefined : grantedTools(policy, caller.claims);
      // An OAuth token past its rate is refused only the tools its scopes open: the others stay unknown to it.
      const tools =
        caller.kind === 'jwt' && caller.scopes !== undefined
          ? scopedTools(caller.scopes, granted, TOOL_NAMES).tools
          : granted;
      // The tool's span is the request's child, though the body came in after the request's call.
      answer = context.with(requestContext(req), () =>
        endpoint.refuse(
          Buffer.from(body).toString('utf8'),
          { options: caller.kind === 'server' ? {} : { jwt: caller.claims }, scoped: caller.kind === 'jwt', tools },
          { error, details: { retry_after: wait } },
          headerReader(req),
        ),
      );
    } catch {
      // A tenant policy that does not parse: its requests fail when they run; this one stays a plain 429.
    }
    if (answer?.json === undefined) return reply.fail(req, res, error, headers);
    reply.send(req, res, answer.status, answer.json, headers);
  }

  #refuserOf(tenant: Tenant): Refuser {
    let refuser = this.#refusers.get(tenant);
    if (refuser === undefined) {
      const { config, audit, logger, metrics } = this.#parts;
      refuser = {
        endpoint: mcpEndpoint(NO_EXECUTOR, {
          write: config.mcp?.write ?? false,
          memory: config.mcp?.memory,
          readOnly: config.httpReadOnly,
          audit,
          logger,
          tenant: tenant.name,
          cursorSecret: config.cursorSecret,
          count: (tool: string, outcome: 'ok' | 'refused' | 'failed') => metrics.toolCall(tool, outcome),
        }),
        policy: tenantPolicy(config, tenant.name) ?? EMPTY_POLICY,
      };
      this.#refusers.set(tenant, refuser);
    }
    return refuser;
  }
}

/** The tenant's own policy (`D/<tenant>.policy`), else the node's. @throws FenecError for one that does not parse. */
function tenantPolicy(config: TenantNodeConfig, tenant: string): Policy | undefined {
  const policyFile = path.join(config.where.dataDir, `${tenant}.policy`);
  return fs.existsSync(policyFile) ? parsePolicy(fs.readFileSync(policyFile, 'utf8'), policyFile) : config.policy;
}

function headerReader(req: IncomingMessage): (name: string) => string | undefined {
  return (name) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
}
