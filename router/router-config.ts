/**
 * The router's options, parsed once at the edge (router/cli.ts) and passed down frozen.
 */
import type { AuditTarget } from '../shared/audit.js';
import type { JwtVerifier } from '../shared/auth/jwt.js';
import type { OAuthVerifier } from '../shared/auth/oauth/verifier.js';
import { jwtVerifier, oauthVerifier, type JwtInput, type OAuthInput } from '../shared/cli/options.js';
import { FenecError } from '../shared/errors.js';
import type { TracingConfig } from '../shared/tracing.js';
import type { NodeTarget } from './placement.js';

export interface RouterOptions {
  /** The tenant nodes (`--nodes name=url,…`). Required, at least one. */
  readonly nodes: readonly NodeTarget[];
  /** Tenants pinned to a node (`--placement FILE`). Default: none, every tenant placed by rendezvous hashing. */
  readonly pins: ReadonlyMap<string, string>;
  /** Address to listen on. Default `127.0.0.1`. */
  readonly host: string;
  /** Port to listen on. Default `8080`; `0` takes a free port (the startup log line names it). */
  readonly port: number;
  /** The server token (`--http-token`, `FENEC_TOKEN`): every tenant and the admin routes. Default: none. */
  readonly httpToken: string | undefined;
  /** The JWT verifier (`--jwt-secret`/`--jwt-public-key`, issuer, audience). Default: none. */
  readonly jwt: JwtVerifier | undefined;
  /** The OAuth verifier (`--oauth-issuer`, `--public-url`, audience, tenant claim). Default: none. */
  readonly oauth: OAuthVerifier | undefined;
  /** How long a node may take to start answering before the router answers 503. Default 10 s. */
  readonly nodeTimeoutMs: number;
  /** Keep-alive connections per node. Default 64. */
  readonly maxSocketsPerNode: number;
  /** Where audit lines go (`--audit [FILE]`: a file, or stderr when no file is named). Default: no audit. */
  readonly audit: AuditTarget | undefined;
  /**
   * Processes serving the port (`--workers`, node:cluster). Default 1 here; the CLI's default is the machine's cores.
   */
  readonly workers: number;
  /**
   * Where spans are exported and how many (`--otel-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_TRACES_SAMPLER`).
   * Default: none, the no-op API.
   */
  readonly otel: TracingConfig | undefined;
  /**
   * The NATS servers of replicated nodes (`--nats`): tenants are routed to their owners as the directory says,
   * watched, else by rendezvous over the live nodes; a move is a compare-and-set there. Default: none.
   */
  readonly nats: readonly string[] | undefined;
}

export const ROUTER_DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8080,
  nodeTimeoutMs: 10_000,
  maxSocketsPerNode: 64,
});

export interface RouterOptionsInput
  extends Partial<Omit<RouterOptions, 'nodes' | 'jwt' | 'oauth'>>, JwtInput, OAuthInput {
  readonly nodes: readonly NodeTarget[];
}

/**
 * Defaults applied, values checked, the JWT key built, frozen.
 *
 * @throws FenecError `invalid_option` naming the flag: no token and no JWT key (the router forwards
 *   nothing it cannot attribute), an empty token, a bad key, a timeout that is not positive.
 */
export function routerOptions(input: RouterOptionsInput): RouterOptions {
  if (input.nodes.length === 0) throw new FenecError('invalid_option', '--nodes names no node');
  if (input.httpToken === '') throw new FenecError('invalid_option', '--http-token must not be empty');
  const jwt = jwtVerifier(input);
  const oauth = oauthVerifier(input);
  if (input.httpToken === undefined && jwt === undefined && oauth === undefined) {
    throw new FenecError(
      'invalid_option',
      '--http-token (or FENEC_TOKEN), a JWT key (--jwt-secret, FENEC_JWT_SECRET, --jwt-public-key) or --oauth-issuer is required: the router forwards only requests it can attribute to a tenant',
    );
  }
  if (input.audit?.kind === 'file' && input.audit.path === '')
    throw new FenecError('invalid_option', '--audit must name a file, or nothing for stderr');
  const nodeTimeoutMs = input.nodeTimeoutMs ?? ROUTER_DEFAULTS.nodeTimeoutMs;
  if (!Number.isSafeInteger(nodeTimeoutMs) || nodeTimeoutMs <= 0)
    throw new FenecError('invalid_option', `--node-timeout takes a positive duration, not ${nodeTimeoutMs} ms`);
  const maxSocketsPerNode = input.maxSocketsPerNode ?? ROUTER_DEFAULTS.maxSocketsPerNode;
  if (!Number.isSafeInteger(maxSocketsPerNode) || maxSocketsPerNode < 1)
    throw new FenecError('invalid_option', `--max-sockets takes a positive integer, not ${maxSocketsPerNode}`);
  return Object.freeze({
    nodes: input.nodes,
    pins: input.pins ?? new Map(),
    host: input.host ?? ROUTER_DEFAULTS.host,
    port: input.port ?? ROUTER_DEFAULTS.port,
    httpToken: input.httpToken,
    jwt,
    oauth,
    nodeTimeoutMs,
    maxSocketsPerNode,
    audit: input.audit,
    workers: input.workers ?? 1,
    otel: input.otel,
    nats: input.nats,
  });
}
