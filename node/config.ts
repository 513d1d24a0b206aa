/**
 * The server's options, parsed once at the edge (the CLI) and passed down frozen. Nothing below
 * the CLI reads process.env or process.argv: whatever the server does differently is in here.
 */
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import type { AuditTarget } from '../shared/audit.js';
import type { JwtVerifier } from '../shared/auth/jwt.js';
import type { Policy } from '../shared/auth/policy.js';
import type { OAuthVerifier } from '../shared/auth/oauth/verifier.js';
import { invalidOption, jwtVerifier, oauthVerifier, type JwtInput, type OAuthInput } from '../shared/cli/options.js';
import { isName } from '../shared/fenecql/lexer.js';
import type { TracingConfig } from '../shared/tracing.js';

/** A tenant node's config: `where` is its data directory. */
export type TenantNodeConfig = ServerConfig & { readonly where: Extract<ServerWhere, { kind: 'dataDir' }> };

export function isTenantNode(config: ServerConfig): config is TenantNodeConfig {
  return config.where.kind === 'dataDir';
}

/** The MCP endpoint's options (`--mcp`, `--mcp-write`, `--mcp-memory NAME`). */
export interface McpConfig {
  /** Offer `write` (put, insert, set, del). Default `false`. */
  readonly write: boolean;
  /** Offer `remember`, `recall` and `forget` over this collection. Default: none. */
  readonly memory: string | undefined;
  /** `--mcp-memory-merge COSINE`: a remember this near one of the caller's memories refreshes it. Default: off. */
  readonly memoryMerge?: number;
}

/**
 * A tenant node's replication (`--nats`): its tenants' changes in a JetStream log, their snapshots in its object
 * store, the node's lease and the tenants' owners in its key-value store (node/replication).
 */
export interface NatsConfig {
  /** The NATS servers (`--nats URL[,URL…]`): any of a cluster's, the client finds the rest. */
  readonly servers: readonly string[];
  /** This node's name (`--node-name`): the name routers give it in `--nodes`, and the one its lease holds. */
  readonly nodeName: string;
  /** Copies JetStream keeps of the log, snapshots and leases (`--nats-replicas`). Default 3. */
  readonly replicas: number;
  /** How long a write waits for the log's ack before it is answered `log_unavailable` (`--nats-ack-timeout`). 2 s. */
  readonly ackTimeoutMs: number;
  /** How long a node's lease lasts unrenewed before its tenants are taken over (`--lease`). Default 3 s. */
  readonly leaseMs: number;
  /** A tenant's snapshot is taken after this many changes (`--snapshot-every`). Default 1000. */
  readonly snapshotEvery: number;
  /** …and at least this often while it changes, in ms (`--snapshot-interval`). Default 10 min. */
  readonly snapshotIntervalMs: number;
  /**
   * Keep a caught-up copy of each tenant this node would take if its owner's lease lapsed (`--standby`): failover
   * then applies the changes since, not the whole snapshot. Default off (a second copy of those tenants on disk).
   */
  readonly standby: boolean;
}

export const NATS_DEFAULTS = Object.freeze({
  replicas: 3,
  ackTimeoutMs: 2_000,
  leaseMs: 3_000,
  snapshotEvery: 1_000,
  snapshotIntervalMs: 10 * 60_000,
  standby: false,
});

/** What a server serves: one `.fenec` file (`--file`), or a tenant node's directory of them (`--data-dir`). */
export type ServerWhere =
  { readonly kind: 'file'; readonly file: string } | { readonly kind: 'dataDir'; readonly dataDir: string };

export interface ServerConfig {
  /** What is served. Required: a file, or a tenant node's data directory. */
  readonly where: ServerWhere;
  /** Address to listen on. Default `127.0.0.1`: nothing off this machine reaches it unless asked. */
  readonly host: string;
  /** Port to listen on. Default `8080`; `0` takes a free port (the startup log line names it). */
  readonly port: number;
  /**
   * Bearer token every request but `GET /_health` must carry. Default: none, and then only a Host
   * naming this machine is answered.
   */
  readonly httpToken: string | undefined;
  /** Refuse every write over HTTP with `read_only` (403). Default `false`. */
  readonly httpReadOnly: boolean;
  /** Open the file read-only: no lock, no writes, the file as it stood at start. Default `false`. */
  readonly readOnly: boolean;
  /** Largest request body in bytes; a larger one is refused with 413. Default 1 MiB. */
  readonly maxBodyBytes: number;
  /** A browser origin (`https://app.example.com`) served besides the server's own. Default: none. */
  readonly httpCors: string | undefined;
  /** How often rows past their `@ttl` are deleted, in ms; 0 never. Default 10 s. Reads leave them out either way. */
  readonly sweepIntervalMs: number;
  /**
   * The verifier of JSON Web Tokens, built from `jwtSecret` (HS256) or `jwtPublicKey` (RS256, ES256)
   * with `jwtIssuer` and `jwtAudience`. Default: none, and only the server's token is taken. The
   * secret itself is not kept here: only the key made of it, inside the verifier.
   */
  readonly jwt: JwtVerifier | undefined;
  /**
   * The verifier of OAuth access tokens (`--oauth-issuer`, `--public-url`, `--oauth-audience`,
   * `--oauth-tenant-claim`). Default: none.
   */
  readonly oauth: OAuthVerifier | undefined;
  /**
   * The policy every JWT is held to (`--policy FILE`, parsed). Default: none, and a JWT reaches no
   * collection (it is held to the empty policy). Needs `jwt`.
   */
  readonly policy: Policy | undefined;
  /** Where audit lines go (`--audit [FILE]`: a file, or stderr when no file is named). Default: no audit. */
  readonly audit: AuditTarget | undefined;
  /**
   * Serve MCP at `POST /_mcp` (`--mcp`; `--mcp-write` and `--mcp-memory` imply it). Default: none,
   * and `/_mcp` is as unknown as any other path.
   */
  readonly mcp: McpConfig | undefined;
  /**
   * The key cursors are signed with (HMAC-SHA256): 32 random bytes made when the config is, so a
   * cursor lives as long as the server that answered it. Passed down with the config (to every
   * tenant's handler, and to any thread that serves requests), never kept in a global.
   */
  readonly cursorSecret: Uint8Array;
  /**
   * Where spans are exported and how many (`--otel-endpoint`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
   * `OTEL_TRACES_SAMPLER`): each request a server span, child of the `traceparent` it carries.
   * Default: none, the no-op API.
   */
  readonly otel: TracingConfig | undefined;
  /**
   * Worker threads that run statements (`--workers`); each tenant's file belongs to one. Default: the machine's cores
   * on a tenant node; 0 on a one-file server, whose statements run on its serving thread (1: in a worker thread).
   */
  readonly workers: number;
  /** How long one statement may run, in ms, before it is stopped (`--statement-timeout`). Default 5 s. */
  readonly statementTimeoutMs: number;
  /**
   * How long a write waits in all, in ms, for a lock another program holds on a file before it is answered
   * `file_busy` (`--busy-timeout`); never past its statement's time limit. Default 5 s.
   */
  readonly busyTimeoutMs: number;
  /** Largest `/query` answer in bytes (`--max-answer`); a larger one is refused `answer_too_large`. Default 32 MiB. */
  readonly maxAnswerBytes: number;
  /** Replication on NATS JetStream (a tenant node's `--nats`). Default: none, each tenant on this node's disk alone. */
  readonly nats: NatsConfig | undefined;
}

/** What a caller gives: `file` or `dataDir`, and any option it does not leave to its default. */
export type ServerConfigInput = ({ readonly file: string } | { readonly dataDir: string }) &
  Partial<Omit<ServerConfig, 'where' | 'jwt' | 'oauth'>> &
  JwtInput &
  OAuthInput;

export const SERVER_DEFAULTS = Object.freeze({
  workers: os.availableParallelism(),
  statementTimeoutMs: 5_000,
  busyTimeoutMs: 5_000,
  maxAnswerBytes: 32 * 1024 * 1024,
  host: '127.0.0.1',
  port: 8080,
  httpReadOnly: false,
  readOnly: false,
  maxBodyBytes: 1024 * 1024,
  sweepIntervalMs: 10_000,
});

/**
 * Applies the defaults, validates every option, and freezes the result.
 *
 * @throws FenecError `invalid_option` naming the option and what it takes.
 */
export function serverConfig(input: ServerConfigInput): ServerConfig {
  const config: ServerConfig = {
    where: Object.freeze(
      'file' in input ? { kind: 'file', file: input.file } : { kind: 'dataDir', dataDir: input.dataDir },
    ),
    host: input.host ?? SERVER_DEFAULTS.host,
    port: input.port ?? SERVER_DEFAULTS.port,
    httpToken: input.httpToken,
    httpReadOnly: input.httpReadOnly ?? SERVER_DEFAULTS.httpReadOnly,
    readOnly: input.readOnly ?? SERVER_DEFAULTS.readOnly,
    maxBodyBytes: input.maxBodyBytes ?? SERVER_DEFAULTS.maxBodyBytes,
    httpCors: input.httpCors,
    sweepIntervalMs: input.sweepIntervalMs ?? SERVER_DEFAULTS.sweepIntervalMs,
    jwt: jwtVerifier(input),
    oauth: oauthVerifier(input),
    policy: input.policy,
    audit: input.audit,
    mcp: input.mcp === undefined ? undefined : Object.freeze({ ...input.mcp }),
    cursorSecret: input.cursorSecret ?? randomBytes(32),
    otel: input.otel,
    workers: input.workers ?? ('file' in input ? 0 : SERVER_DEFAULTS.workers),
    statementTimeoutMs: input.statementTimeoutMs ?? SERVER_DEFAULTS.statementTimeoutMs,
    busyTimeoutMs: input.busyTimeoutMs ?? SERVER_DEFAULTS.busyTimeoutMs,
    maxAnswerBytes: input.maxAnswerBytes ?? SERVER_DEFAULTS.maxAnswerBytes,
    nats:
      input.nats === undefined
        ? undefined
        : Object.freeze({ ...input.nats, servers: Object.freeze([...input.nats.servers]) }),
  };
  if (config.where.kind === 'file') {
    if (config.workers !== 0 && config.workers !== 1)
      throw invalidOption(
        '--workers',
        `on a one-file server takes 0 (statements on the serving thread) or 1 (in a worker thread), not ${config.workers}: one file is one tenant`,
      );
  } else if (!Number.isSafeInteger(config.workers) || config.workers < 1 || config.workers > 256) {
    throw invalidOption('--workers', `takes a whole number from 1 to 256 on a tenant node, not ${config.workers}`);
  }
  if (!Number.isSafeInteger(config.statementTimeoutMs) || config.statementTimeoutMs < 1) {
    throw invalidOption(
      '--statement-timeout',
      `takes a duration such as 500ms, 5s or 1m, not ${config.statementTimeoutMs}`,
    );
  }
  if (!Number.isSafeInteger(config.busyTimeoutMs) || config.busyTimeoutMs < 0 || config.busyTimeoutMs > 2 ** 31 - 1) {
    throw invalidOption(
      '--busy-timeout',
      `takes a duration such as 500ms, 5s or 1m (0: no wait), not ${config.busyTimeoutMs}`,
    );
  }
  if (!Number.isSafeInteger(config.maxAnswerBytes) || config.maxAnswerBytes < 1) {
    throw invalidOption('--max-answer', `takes a positive number of bytes, not ${config.maxAnswerBytes}`);
  }
  if (config.where.kind === 'file' && config.where.file === '') throw invalidOption('--file', 'must name a file');
  if (config.where.kind === 'dataDir') {
    if (config.where.dataDir === '') throw invalidOption('--data-dir', 'must name a directory');
    // A read-only tenant node would have to refuse creating, restoring and moving tenants too: the
    // operator's way to a node that changes no data is --http-read-only, which refuses every write.
    if (config.readOnly) {
      throw invalidOption(
        '--read-only',
        'opens one file (--file) read-only; a tenant node (--data-dir) takes --http-read-only to refuse every write on every tenant',
      );
    }
  }
  if (config.nats !== undefined) checkNats(config);
  if (config.host === '') throw invalidOption('--host', 'must name an address, e.g. 127.0.0.1 or 0.0.0.0');
  if (!Number.isInteger(config.port) || config.port < 0 || config.port > 65535) {
    throw invalidOption('--port', `takes 0…65535, not ${config.port}`);
  }
  if (config.httpToken === '') throw invalidOption('--http-token', 'must not be empty');
  if (!Number.isSafeInteger(config.maxBodyBytes) || config.maxBodyBytes < 1) {
    throw invalidOption('--max-body', `takes a positive number of bytes, not ${config.maxBodyBytes}`);
  }
  if (config.httpCors !== undefined) checkOrigin(config.httpCors);
  if (!Number.isSafeInteger(config.sweepIntervalMs) || config.sweepIntervalMs < 0) {
    throw invalidOption(
      '--sweep-interval',
      `takes a duration such as 500ms, 10s or 1m (0: never), not ${config.sweepIntervalMs}`,
    );
  }
  if (config.policy !== undefined && config.jwt === undefined && config.oauth === undefined) {
    throw invalidOption(
      '--policy',
      'holds JSON Web Tokens to a policy: give --jwt-secret, --jwt-public-key or --oauth-issuer too',
    );
  }
  if (config.cursorSecret.length < 32)
    throw invalidOption('cursorSecret', `takes at least 32 bytes, not ${config.cursorSecret.length}`);
  if (config.audit?.kind === 'file' && config.audit.path === '')
    throw invalidOption('--audit', 'must name a file, or nothing for stderr');
  const memory = config.mcp?.memory;
  if (memory !== undefined && (!isName(memory) || memory.startsWith('_'))) {
    throw invalidOption(
      '--mcp-memory',
      `takes a collection name (a letter, then letters, digits or _, at most 64), not "${memory}"`,
    );
  }
  const merge = config.mcp?.memoryMerge;
  if (merge !== undefined && (!Number.isFinite(merge) || merge <= 0 || merge > 1))
    throw invalidOption('--mcp-memory-merge', `takes a cosine above 0 and at most 1, such as 0.92, not ${merge}`);
  if (merge !== undefined && memory === undefined)
    throw invalidOption('--mcp-memory-merge', 'merges memories of --mcp-memory: give --mcp-memory too');
  return Object.freeze(config);
}

function checkNats(config: ServerConfig): void {
  const nats = config.nats!;
  if (config.where.kind !== 'dataDir')
    throw invalidOption(
      '--nats',
      'replicates a tenant node (--data-dir); a one-file server (--file) is not replicated',
    );
  if (nats.servers.length === 0 || nats.servers.some((url) => !/^(nats|tls):\/\/[^\s,]+$|^[^\s/,:]+:\d+$/.test(url)))
    throw invalidOption(
      '--nats',
      `takes NATS URLs such as nats://10.0.0.7:4222,nats://10.0.0.8:4222, not ${nats.servers.join(',')}`,
    );
  if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(nats.nodeName))
    throw invalidOption(
      '--node-name',
      `takes the node's name in the routers' --nodes ([a-z0-9][a-z0-9-]*), not "${nats.nodeName}"`,
    );
  if (!Number.isSafeInteger(nats.replicas) || nats.replicas < 1 || nats.replicas > 5)
    throw invalidOption('--nats-replicas', `takes 1 to 5, not ${nats.replicas}`);
  for (const [flag, value] of [
    ['--nats-ack-timeout', nats.ackTimeoutMs],
    ['--lease', nats.leaseMs],
    ['--snapshot-interval', nats.snapshotIntervalMs],
  ] as const) {
    if (!Number.isSafeInteger(value) || value < 100)
      throw invalidOption(flag, `takes a duration of at least 100ms, not ${value}`);
  }
  if (!Number.isSafeInteger(nats.snapshotEvery) || nats.snapshotEvery < 1)
    throw invalidOption('--snapshot-every', `takes a whole number ≥ 1, not ${nats.snapshotEvery}`);
}

/** An origin is scheme://host[:port] with nothing after it, as browsers send it in `Origin`. */
function checkOrigin(text: string): void {
  let origin: string | undefined;
  try {
    origin = new URL(text).origin;
  } catch {
    origin = undefined;
  }
  if (origin !== text) {
    const hint = origin === undefined || origin === 'null' ? '' : ` (did you mean ${origin}?)`;
    throw invalidOption('--http-cors', `takes an origin such as https://app.example.com, not "${text}"${hint}`);
  }
}
