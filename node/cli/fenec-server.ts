#!/usr/bin/env -S node --expose-gc --max-semi-space-size=32
/**
 * fenec-server: one `.fenec` file over HTTP. Options are read here, once, into a frozen
 * ServerConfig; nothing below reads process.env or process.argv.
 *
 * The #! line exposes `gc`, for the collection a thread that ran statements makes once quiet after a burst
 * (node/workers/idle-collect.ts): 331 MB held after a 5 000-row load without it, 134 MB with it. It also holds the
 * serving thread's semi-spaces to 32 MiB: left to itself, Node.js 24 grows them to 64 MiB under a steady stream of
 * requests, which took a fuzzed server past its memory bound (docs/reliability.md); at 16 MiB, the workers' bound
 * (worker-pool.ts), the serving thread collects so often that row by id at 8 clients lost a tenth of its speed.
 */
import { parsePolicy, type Policy } from '../../shared/auth/policy.js';
import { asFenecError, FenecError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import {
  parseByteSize,
  parseCount,
  parseDurationOption,
  parsePort,
  readOptionFile,
  type PublicKeyInput,
} from '../../shared/cli/options.js';
import { switchedBy, toolNames } from '../../shared/mcp/tools.js';
import { addOAuthFlags, oauthInput, type OAuthFlags } from '../../shared/cli/oauth-flags.js';
import {
  isTenantNode,
  NATS_DEFAULTS,
  serverConfig,
  SERVER_DEFAULTS,
  type NatsConfig,
  type ServerConfig,
  type TenantNodeConfig,
} from '../config.js';
import { mcpText } from '../mcp/serve-mcp.js';
import { nativeBuildPaths, useNativeBuilds } from '../native-builds.js';
import { acquireLock, type FileLock } from '../storage/lock.js';
import { QUOTA_DEFAULTS } from '../tenants/quotas.js';
import type { TenantNodeOptions } from '../tenants/tenant-node.js';
import { ONE_FILE, type TenantLimits } from '../workers/protocol.js';
import { replyError, WorkerPool, workerHeapMb, workerSetup } from '../workers/worker-pool.js';
import { startTracing, type Tracing } from '../../shared/tracing.js';
import {
  addEmbedderFlags,
  embedderChoice,
  embedderFields,
  probeEmbedder,
  type EmbedderChoice,
  type EmbedderFlags,
} from './embedder-options.js';
import type { WorkerEmbedder } from '../workers/protocol.js';
import {
  auditTarget,
  createProgram,
  onExit,
  openAudit,
  OTEL_ENDPOINT_HELP,
  parseCommandLine,
  tracingConfig,
} from '../../shared/cli/command-line.js';

const NAME = 'fenec-server';

interface Options extends OAuthFlags, EmbedderFlags {
  file?: string;
  dataDir?: string;
  maxOpenTenants: string;
  tenantRate: string;
  tenantBurst: string;
  tenantMaxBytes: string;
  tenantMaxCollections: string;
  tenantMaxRows: string;
  host: string;
  port: string;
  httpToken?: string;
  httpReadOnly?: boolean;
  readOnly?: boolean;
  maxBody: string;
  httpCors?: string;
  sweepInterval: string;
  jwtSecret?: string;
  jwtPublicKey?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  policy?: string;
  audit?: string | true;
  mcp?: boolean;
  mcpWrite?: boolean;
  mcpMemory?: string;
  mcpMemoryMerge?: string;
  otelEndpoint?: string;
  workers?: string;
  statementTimeout: string;
  busyTimeout: string;
  maxAnswer: string;
  tenantCost: string;
  tenantEmbedRate: string;
  nats?: string;
  nodeName?: string;
  natsReplicas: string;
  natsAckTimeout: string;
  lease: string;
  snapshotEvery: string;
  snapshotInterval: string;
  standby: boolean;
}

async function main(): Promise<void> {
  // Where the native builds are (FENEC_FAISS_ADDON, FENEC_FTS5_EXTENSION); the workers are handed the same.
  useNativeBuilds(nativeBuildPaths(process.env));
  let config: ServerConfig | undefined;
  let tenants: TenantNodeOptions | undefined;
  let authSources: AuthSources = {};
  let embedder: EmbedderChoice | undefined;
  const program = createProgram(NAME)
    .description(
      'Serve one .fenec file over HTTP (POST /query, POST /_mcp with --mcp, GET /_health, GET /_metrics), ' +
        'or, with --data-dir, be a tenant node: the same under /t/<tenant>/, one file per tenant, with quotas.',
    )
    .option('--file <path>', 'the .fenec file to serve; created when missing (its lock F.lock is held while serving)')
    .option(
      '--data-dir <dir>',
      "be a tenant node: tenant T's data in DIR/T.fenec, its policy in DIR/T.policy when present (else --policy); " +
        'PUT/DELETE /t/<tenant> and GET /_tenants with the server token',
    )
    .option(
      '--max-open-tenants <n>',
      'tenant files open at once; the least recently used is closed past it',
      String(DEFAULT_MAX_OPEN_TENANTS),
    )
    .option(
      '--tenant-rate <n>',
      'default requests per second of a tenant, /query and MCP alike (429 + Retry-After past it)',
      String(QUOTA_DEFAULTS.rate),
    )
    .option(
      '--tenant-burst <n>',
      'default requests a tenant may send at once above its rate',
      String(QUOTA_DEFAULTS.burst),
    )
    .option(
      '--tenant-max-bytes <size>',
      'default largest tenant file, e.g. 1024mb; writes past it get 507',
      `${QUOTA_DEFAULTS.maxBytes / 1024 ** 2}mb`,
    )
    .option(
      '--tenant-max-collections <n>',
      'default most collections of a tenant (0: no limit)',
      String(QUOTA_DEFAULTS.maxCollections),
    )
    .option('--tenant-max-rows <n>', 'default most rows of a tenant (0: no limit)', String(QUOTA_DEFAULTS.maxRows))
    .option(
      '--tenant-cost <ms>',
      'default worker time of a tenant, in milliseconds per second (429 + Retry-After past it; 0: no limit)',
      String(QUOTA_DEFAULTS.costMs),
    )
    .option(
      '--tenant-embed-rate <n>',
      "default texts a tenant's statements may have embedded a second, as many banked (429 + Retry-After past it; 0: no limit)",
      String(QUOTA_DEFAULTS.embedRate),
    )
    .option(
      '--workers <n>',
      `worker threads that run statements; each tenant's file belongs to one (default: the machine's cores, ${SERVER_DEFAULTS.workers}). ` +
        'A one-file server: 0 (its default) runs them on the serving thread, 1 in a worker thread',
    )
    .option(
      '--statement-timeout <duration>',
      "how long one statement may run before it is stopped (504 statement_timeout), e.g. 500ms, 5s; a tenant's default too",
      '5s',
    )
    .option(
      '--busy-timeout <duration>',
      'how long a write waits for a lock another program holds on the file (503 file_busy past it), e.g. 1s; 0: no wait',
      '5s',
    )
    .option(
      '--max-answer <size>',
      "largest /query answer, e.g. 32mb (413 answer_too_large past it, with how to page); a tenant's default too",
      '32mb',
    )
    .option('--host <address>', 'address to listen on (0.0.0.0: every interface)', SERVER_DEFAULTS.host)
    .option(
      '--port <port>',
      'port to listen on; 0 takes a free one, named in the startup log line',
      String(SERVER_DEFAULTS.port),
    )
    .option(
      '--http-token <token>',
      'bearer token required on every request but /_health (default: $FENEC_TOKEN; ' +
        'without one, only a Host naming this machine is answered)',
    )
    .option('--http-read-only', 'refuse every write over HTTP (403 read_only)')
    .option('--read-only', 'open the file read-only: no lock, no writes, the file as it stood at start')
    .option('--max-body <size>', 'largest request body, e.g. 512kb, 1mb or a number of bytes', '1mb')
    .option('--http-cors <origin>', "a browser origin (https://app.example.com) allowed besides the server's own")
    .option(
      '--sweep-interval <duration>',
      'how often rows past their @ttl are deleted from the file (reads leave them out at once); 0: never',
      '10s',
    )
    .option(
      '--jwt-secret <secret>',
      'take JSON Web Tokens signed HS256 with this secret, at least 32 bytes ' +
        '(default: $FENEC_JWT_SECRET unless --jwt-public-key is given)',
    )
    .option(
      '--jwt-public-key <file>',
      'take JSON Web Tokens signed with the private half of this PEM public key: ' +
        'RS256 for an RSA key (2048 bits or more), ES256 for an EC P-256 key',
    )
    .option('--jwt-issuer <iss>', 'take only JSON Web Tokens whose iss claim is this')
    .option('--jwt-audience <aud>', 'take only JSON Web Tokens whose aud claim is or contains this');
  addOAuthFlags(program)
    .option(
      '--policy <file>',
      'the policy JSON Web Tokens are held to: lines COLLECTION GRANTS [where COND], ' +
        'e.g. "memories read,write where owner = $jwt.sub" (without it, a JWT reaches no collection)',
    )
    .option(
      '--mcp',
      `serve MCP (the Model Context Protocol) at POST /_mcp: the tools ${toolNames(switchedBy('always'))}, under the same tokens as /query`,
    )
    .option(
      '--mcp-write',
      `add the MCP tool ${toolNames(switchedBy('write'))} (rows written; never a schema change); implies --mcp`,
    )
    .option(
      '--mcp-memory <collection>',
      `add the MCP tools ${toolNames(switchedBy('memory'))} over this collection, made at the first memory; implies --mcp`,
    )
    .option(
      '--mcp-memory-merge <cosine>',
      "with --mcp-memory: a remember whose vector is within this cosine (e.g. 0.92) of one of the same owner's memories refreshes it instead of adding a twin (off by default)",
    )
    .option(
      '--audit [file]',
      `write one JSON line per refused token, schema change and MCP ${toolNames((tool) => tool.audited, 'or')} to this file (appended), or to stderr when no file is named`,
    )
    .option('--otel-endpoint <url>', OTEL_ENDPOINT_HELP)
    .option(
      '--nats <urls>',
      "replicate the tenants on NATS JetStream (a tenant node): its servers, nats://host:4222,… — every write in the cluster's log before it is answered",
    )
    .option('--node-name <name>', "this node's name in the routers' --nodes (with --nats: its lease and its tenants)")
    .option(
      '--nats-replicas <n>',
      'copies JetStream keeps of the log, snapshots and leases',
      String(NATS_DEFAULTS.replicas),
    )
    .option(
      '--nats-ack-timeout <duration>',
      "how long a write waits for the log's ack",
      `${NATS_DEFAULTS.ackTimeoutMs}ms`,
    )
    .option(
      '--lease <duration>',
      "how long this node's lease lasts unrenewed before other nodes take its tenants",
      `${NATS_DEFAULTS.leaseMs}ms`,
    )
    .option('--snapshot-every <n>', "a tenant's snapshot after this many changes", String(NATS_DEFAULTS.snapshotEvery))
    .option(
      '--snapshot-interval <duration>',
      '…and at least this often while it changes',
      `${NATS_DEFAULTS.snapshotIntervalMs / 60_000}m`,
    )
    .option(
      '--standby',
      "keep a caught-up copy of each tenant this node would take if its owner's lease lapsed (a faster failover)",
      NATS_DEFAULTS.standby,
    );
  addEmbedderFlags(program).action((options: Options) => {
    // The secret from the environment only when no key is named on the command line: an empty
    // FENEC_JWT_SECRET is unset, as FENEC_TOKEN's is.
    const jwtSecret =
      options.jwtSecret ?? (options.jwtPublicKey === undefined ? process.env.FENEC_JWT_SECRET || undefined : undefined);
    // An empty FENEC_TOKEN is how shells and compose files say "unset"; an empty flag is an error.
    const httpToken = options.httpToken ?? (process.env.FENEC_TOKEN || undefined);
    authSources = {
      token: httpToken === undefined ? undefined : options.httpToken !== undefined ? '--http-token' : '$FENEC_TOKEN',
      jwt:
        options.jwtPublicKey !== undefined
          ? `--jwt-public-key ${options.jwtPublicKey}`
          : jwtSecret === undefined
            ? undefined
            : options.jwtSecret !== undefined
              ? '--jwt-secret'
              : '$FENEC_JWT_SECRET',
    };
    checkWhere(options);
    embedder = embedderChoice(options, process.env);
    const statementTimeoutMs = parseDurationOption('--statement-timeout', options.statementTimeout);
    const maxAnswerBytes = parseByteSize(options.maxAnswer, '--max-answer');
    if (options.dataDir !== undefined) {
      tenants = Object.freeze({
        maxOpenTenants: parseCount('--max-open-tenants', options.maxOpenTenants, 1),
        quotas: Object.freeze({
          rate: parseCount('--tenant-rate', options.tenantRate, 0),
          burst: parseCount('--tenant-burst', options.tenantBurst, 1),
          maxBytes: parseByteSize(options.tenantMaxBytes, '--tenant-max-bytes'),
          maxCollections: parseCount('--tenant-max-collections', options.tenantMaxCollections, 0),
          maxRows: parseCount('--tenant-max-rows', options.tenantMaxRows, 0),
          costMs: parseCount('--tenant-cost', options.tenantCost, 0),
          embedRate: parseCount('--tenant-embed-rate', options.tenantEmbedRate, 0),
          statementTimeoutMs,
          maxAnswerBytes,
        }),
      });
    }
    config = serverConfig({
      ...(options.dataDir === undefined ? { file: options.file! } : { dataDir: options.dataDir }),
      host: options.host,
      port: parsePort(options.port),
      httpToken,
      httpReadOnly: options.httpReadOnly === true,
      readOnly: options.readOnly === true,
      maxBodyBytes: parseByteSize(options.maxBody),
      httpCors: options.httpCors,
      sweepIntervalMs: parseDurationOption('--sweep-interval', options.sweepInterval),
      jwtSecret,
      jwtPublicKey: options.jwtPublicKey === undefined ? undefined : readPublicKey(options.jwtPublicKey),
      jwtIssuer: options.jwtIssuer,
      jwtAudience: options.jwtAudience,
      ...oauthInput(options, process.env),
      policy: options.policy === undefined ? undefined : readPolicy(options.policy),
      audit: auditTarget(options.audit),
      mcp:
        options.mcp === true || options.mcpWrite === true || options.mcpMemory !== undefined
          ? {
              write: options.mcpWrite === true,
              memory: options.mcpMemory,
              ...(options.mcpMemoryMerge === undefined ? {} : { memoryMerge: Number(options.mcpMemoryMerge) }),
            }
          : undefined,
      otel: tracingConfig(options.otelEndpoint, process.env),
      workers: options.workers === undefined ? undefined : parseCount('--workers', options.workers, 0),
      statementTimeoutMs,
      busyTimeoutMs: parseDurationOption('--busy-timeout', options.busyTimeout),
      maxAnswerBytes,
      nats: natsOf(options),
    });
  });
  await parseCommandLine(program, process.argv);
  if (config === undefined) return;
  const logger = createLogger(NAME);
  // The probe comes before the file or the port is taken: an embedder that is away refuses the start (exit 2).
  const dimension =
    embedder === undefined ? undefined : await probeEmbedder(NAME, embedder, (message) => logger.warn(message));
  const embedding: WorkerEmbedder | undefined =
    embedder === undefined ? undefined : { config: embedder.config, dimension };
  if (isTenantNode(config)) await serveTenants(config, tenants!, authSources, embedding);
  else if (config.where.kind === 'file') await serve(config, config.where.file, authSources, embedding);
}

/** The replication's options, with --nats; --node-name is refused without it. */
function natsOf(options: Options): NatsConfig | undefined {
  if (options.nats === undefined) {
    if (options.nodeName !== undefined)
      throw new FenecError('invalid_option', '--node-name names a replicated node: give --nats too');
    if (options.standby)
      throw new FenecError('invalid_option', "--standby keeps copies of a replicated node's tenants: give --nats too");
    return undefined;
  }
  if (options.nodeName === undefined)
    throw new FenecError('invalid_option', "--nats needs --node-name: this node's name in the routers' --nodes");
  return {
    servers: options.nats.split(',').map((url) => url.trim()),
    nodeName: options.nodeName,
    replicas: parseCount('--nats-replicas', options.natsReplicas, 1),
    ackTimeoutMs: parseDurationOption('--nats-ack-timeout', options.natsAckTimeout),
    leaseMs: parseDurationOption('--lease', options.lease),
    snapshotEvery: parseCount('--snapshot-every', options.snapshotEvery, 1),
    snapshotIntervalMs: parseDurationOption('--snapshot-interval', options.snapshotInterval),
    standby: options.standby,
  };
}

/** One of --file and --data-dir, each case refused in its own words. */
function checkWhere(options: Options): void {
  if (options.file === undefined && options.dataDir === undefined) {
    throw new FenecError(
      'invalid_option',
      'give --file F to serve one file (created when missing), or --data-dir D to be a tenant node',
    );
  }
  if (options.file !== undefined && options.dataDir !== undefined) {
    throw new FenecError(
      'invalid_option',
      '--file and --data-dir were both given: --file serves one file, --data-dir is a tenant node; give one',
    );
  }
}

/**
 * Where each credential the server takes came from: a flag, or an environment variable exported for
 * the CLIs (fenec query reads FENEC_TOKEN too), which would otherwise change the start unseen.
 */
interface AuthSources {
  readonly token?: string;
  readonly jwt?: string;
}

const DEFAULT_MAX_OPEN_TENANTS = 256;

/** A tenant node: tenants' files under --data-dir, opened as requests come, closed on the way out. */
async function serveTenants(
  config: TenantNodeConfig,
  tenants: TenantNodeOptions,
  sources: AuthSources,
  embedder: WorkerEmbedder | undefined,
): Promise<void> {
  const logger = createLogger(NAME);
  const audit = openAudit(NAME, config.audit, logger);
  const tracing = await startTracing(config.otel, NAME, logger);
  const { startTenantNode } = await import('../tenants/tenant-node.js');
  const server = await startTenantNode(config, tenants, logger, audit, embedder).catch((err: unknown) =>
    refuseStart(err),
  );
  // The issuers' keys are fetched while the first requests come; a start never waits on an IdP.
  void config.oauth?.warm();
  onExit(
    () => undefined,
    (signal) => {
      logger.info({ signal }, 'stopping');
      server.close().then(
        () => exitAfter(tracing, 0),
        () => exitAfter(tracing, 1),
      );
    },
  );
  logger.info(
    {
      url: server.url,
      port: server.port,
      dataDir: config.where.dataDir,
      tenants: server.registry.list().length,
      nats: config.nats === undefined ? undefined : { node: config.nats.nodeName, servers: config.nats.servers },
      maxOpenTenants: tenants.maxOpenTenants,
      quotas: tenants.quotas,
      workers: config.workers,
      ...authFields(config, sources),
      console: `${server.url}/_console/`,
      mcp: config.mcp === undefined ? undefined : mcpText(config),
      traces: config.otel?.endpoint,
      embedder: embedderFields(embedder),
    },
    'listening',
  );
}

/** Exits once the last requests' spans are exported (a bounded wait; at once without tracing). */
function exitAfter(tracing: Tracing, status: number): void {
  void tracing.shutdown().then(() => process.exit(status));
}

function readPublicKey(file: string): PublicKeyInput {
  return { pem: readOptionFile('--jwt-public-key', file), source: file };
}

/** The policy file, parsed: a bad line stops the start with `FILE:LINE: …` and status 2. */
function readPolicy(file: string): Policy {
  return parsePolicy(readOptionFile('--policy', file), file);
}

async function serve(
  config: ServerConfig,
  file: string,
  sources: AuthSources,
  embedder: WorkerEmbedder | undefined,
): Promise<void> {
  const logger = createLogger(NAME);
  const audit = openAudit(NAME, config.audit, logger);
  const tracing = await startTracing(config.otel, NAME, logger);
  // The serving thread holds the file's lock for the worker that opens it, whichever worker that is.
  let lock: FileLock | undefined;
  try {
    lock = config.readOnly ? undefined : acquireLock(file, NAME);
  } catch (err) {
    refuseStart(err);
  }
  let stop: (signal: NodeJS.Signals) => void = () => process.exit(1);
  // The lock is released on every way out: a signal, an exit, an uncaught fault.
  onExit(
    () => lock?.release(),
    (signal) => stop(signal),
  );

  const limits: TenantLimits = {
    maxBytes: 0,
    maxCollections: 0,
    maxRows: 0,
    maxAnswerBytes: config.maxAnswerBytes,
    statementTimeoutMs: config.statementTimeoutMs,
  };
  // One file is one tenant: one worker at most, or none (--workers 0: its statements on this thread).
  const pool = new WorkerPool({
    workers: 1,
    logger,
    setup: workerSetup(config, embedder, 1),
    maxHeapMb: workerHeapMb(config.maxAnswerBytes),
    inline:
      config.workers === 0
        ? {
            audit,
            endpoint: config.mcp === undefined ? undefined : (await import('../mcp/serve-mcp.js')).mcpEndpoint,
          }
        : undefined,
  });
  // The worker loads the storage side while this thread loads the HTTP side: a start takes the longer of the two.
  const opening = pool.open(ONE_FILE, limits);
  const { startServer } = await import('../http/server.js');
  const opened = await opening;
  if (opened.status !== 200) refuseStart(replyError(opened));

  const server = await startServer(config, pool, limits, logger, audit).catch((err: unknown) => refuseStart(err));
  void config.oauth?.warm();
  stop = (signal) => {
    logger.info({ signal }, 'stopping');
    server
      .close()
      .then(() => pool.stop())
      .then(
        () => {
          lock?.release();
          logger.info('stopped');
          exitAfter(tracing, 0);
        },
        (err: unknown) => {
          logger.error({ err }, 'stopping failed');
          process.exit(1);
        },
      );
  };
  logger.info(
    {
      url: server.url,
      port: server.port,
      file,
      readOnly: config.readOnly,
      httpReadOnly: config.httpReadOnly,
      ...authFields(config, sources),
      console: `${server.url}/_console/`,
      policy:
        config.jwt === undefined && config.oauth === undefined
          ? undefined
          : config.policy === undefined
            ? 'none: JWTs reach no collection'
            : `${config.policy.rules.size} collection(s)`,
      audit: config.audit === undefined ? undefined : config.audit.kind === 'file' ? config.audit.path : 'stderr',
      mcp: config.mcp === undefined ? undefined : mcpText(config),
      traces: config.otel?.endpoint,
      statements: config.workers === 0 ? 'on the serving thread' : 'in a worker thread',
      statementTimeoutMs: config.statementTimeoutMs,
      maxAnswerBytes: config.maxAnswerBytes,
      embedder: embedderFields(embedder),
    },
    'listening',
  );
}

/**
 * What the startup line says of credentials, never a token or a secret: which are taken (`auth`), the
 * flag or environment variable each came from (`authFrom`), and what a request without a token gets.
 */
function authFields(config: ServerConfig, sources: AuthSources): Record<string, unknown> {
  const kinds = [
    config.httpToken === undefined ? undefined : 'token',
    config.jwt === undefined ? undefined : `JWT ${config.jwt.algorithm}`,
    config.oauth === undefined
      ? undefined
      : `OAuth ${config.oauth.issuers.join(' ')} at ${config.oauth.resource.publicUrl}`,
  ];
  const given = kinds.filter((kind) => kind !== undefined);
  if (given.length === 0) return { auth: 'local Host only', withoutToken: 'answered when its Host names this machine' };
  const from: Record<string, string> = {};
  if (config.httpToken !== undefined && sources.token !== undefined) from.token = sources.token;
  if (config.jwt !== undefined && sources.jwt !== undefined) from[`JWT ${config.jwt.algorithm}`] = sources.jwt;
  return { auth: given.join(' + '), authFrom: from, withoutToken: '401, but for /_health and the console page' };
}

/** A start refused (the lock held, the port taken): one line naming the code, and exit status 1. */
function refuseStart(err: unknown): never {
  const error = asFenecError(err);
  const message = error.code === 'internal' && err instanceof Error ? err.message : error.message;
  const hint = error.hint === undefined ? '' : ` (${error.hint})`;
  process.stderr.write(`${NAME}: ${error.code}: ${message}${hint}\n`);
  process.exit(1);
}

await main();
