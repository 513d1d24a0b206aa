#!/usr/bin/env node
/**
 * fenec-router: the stateless router in front of tenant nodes. Options are read here, once, into
 * frozen RouterOptions; nothing below reads process.env or process.argv.
 */
import cluster from 'node:cluster';
import * as fs from 'node:fs';
import * as http from 'node:http';
import { availableParallelism } from 'node:os';
import { AggregatorRegistry } from 'prom-client';
import { createLogger, type Logger } from '../shared/logger.js';
import {
  auditTarget,
  createProgram,
  onExit,
  openAudit,
  OTEL_ENDPOINT_HELP,
  parseCommandLine,
  tracingConfig,
} from '../shared/cli/command-line.js';
import { parseCount, parseDurationOption, parsePort, readOptionFile } from '../shared/cli/options.js';
import { addOAuthFlags, oauthInput, type OAuthFlags } from '../shared/cli/oauth-flags.js';
import { closeServer, listen } from '../shared/http/listen.js';
import { startTracing } from '../shared/tracing.js';
import { FenecError } from '../shared/errors.js';
import type { Directory } from '../shared/nats/directory.js';
import { parseNodes, parsePlacement } from './placement.js';
import { ROUTER_DEFAULTS, routerOptions, type RouterOptions } from './router-config.js';
import type { RouterApp } from './router-app.js';

const NAME = 'fenec-router';

interface Flags extends OAuthFlags {
  nodes: string;
  placement?: string;
  nats?: string;
  host: string;
  port: string;
  httpToken?: string;
  jwtSecret?: string;
  jwtPublicKey?: string;
  jwtIssuer?: string;
  jwtAudience?: string;
  nodeTimeout: string;
  maxSockets: string;
  audit?: string | true;
  workers: string;
  otelEndpoint?: string;
}

/** A worker's ask for the metrics of every worker, and the primary's answer. */
const METRICS_ASK = 'fenec-router:metrics';
/** How often the placement file is read for changes. */
const PLACEMENT_POLL_MS = 1000;
const METRICS_ANSWER = 'fenec-router:metrics-text';

async function main(): Promise<void> {
  let options: RouterOptions | undefined;
  let placementFile: string | undefined;
  const program = createProgram(NAME)
    .description(
      "Route /t/<tenant>/query and /t/<tenant>/_mcp to the tenant node that holds each tenant, after checking the token's tenant claim.",
    )
    .requiredOption(
      '--nodes <list>',
      'the tenant nodes, name=url,… e.g. a=http://127.0.0.1:8081,b=http://127.0.0.1:8082 (the names place tenants: keep them stable)',
    )
    .option(
      '--placement <file>',
      'pins, one a line: TENANT NODE (# comments; a later line wins); other tenants are placed by rendezvous hashing',
    )
    .option('--host <address>', 'address to listen on (0.0.0.0: every interface)', ROUTER_DEFAULTS.host)
    .option(
      '--port <port>',
      'port to listen on; 0 takes a free one, named in the startup log line',
      String(ROUTER_DEFAULTS.port),
    )
    .option(
      '--http-token <token>',
      'the server token: every tenant, PUT/DELETE /t/<tenant>, /_tenants, /_metrics (default: $FENEC_TOKEN)',
    )
    .option(
      '--jwt-secret <secret>',
      'take JSON Web Tokens signed HS256 with this secret, at least 32 bytes (default: $FENEC_JWT_SECRET unless --jwt-public-key is given)',
    )
    .option(
      '--jwt-public-key <file>',
      'take JSON Web Tokens signed with the private half of this PEM public key (RS256 or ES256)',
    )
    .option(
      '--nats <urls>',
      "replicated nodes' NATS servers (nats://host:4222,…): route by the tenants' owners there, watched (no placement file)",
    )
    .option('--jwt-issuer <iss>', 'take only JSON Web Tokens whose iss claim is this')
    .option('--jwt-audience <aud>', 'take only JSON Web Tokens whose aud claim is or contains this');
  addOAuthFlags(program)
    .option('--node-timeout <duration>', 'a node that has not begun to answer by then gets the client a 503', '10s')
    .option('--max-sockets <n>', 'kept-alive connections per node', String(ROUTER_DEFAULTS.maxSocketsPerNode))
    .option(
      '--audit [file]',
      'write one JSON line per refused token to this file (appended), or to stderr when no file is named',
    )
    .option(
      '--workers <n>',
      "processes serving the port (node:cluster), each a whole router (default: the machine's cores)",
      String(availableParallelism()),
    )
    .option('--otel-endpoint <url>', OTEL_ENDPOINT_HELP)
    .action((flags: Flags) => {
      const nodes = parseNodes(flags.nodes);
      const jwtSecret =
        flags.jwtSecret ?? (flags.jwtPublicKey === undefined ? process.env.FENEC_JWT_SECRET || undefined : undefined);
      const workers = parseCount('--workers', flags.workers, 1, 256);
      placementFile = flags.placement;
      options = routerOptions({
        nodes,
        workers,
        pins:
          flags.placement === undefined
            ? new Map()
            : parsePlacement(readOptionFile('--placement', flags.placement), flags.placement, nodes),
        host: flags.host,
        port: parsePort(flags.port),
        httpToken: flags.httpToken ?? (process.env.FENEC_TOKEN || undefined),
        ...(jwtSecret === undefined ? {} : { jwtSecret }),
        ...(flags.jwtPublicKey === undefined
          ? {}
          : {
              jwtPublicKey: { pem: readOptionFile('--jwt-public-key', flags.jwtPublicKey), source: flags.jwtPublicKey },
            }),
        ...(flags.jwtIssuer === undefined ? {} : { jwtIssuer: flags.jwtIssuer }),
        ...(flags.jwtAudience === undefined ? {} : { jwtAudience: flags.jwtAudience }),
        ...oauthInput(flags, process.env),
        nodeTimeoutMs: parseDurationOption('--node-timeout', flags.nodeTimeout),
        maxSocketsPerNode: parseCount('--max-sockets', flags.maxSockets, 1),
        audit: auditTarget(flags.audit),
        otel: tracingConfig(flags.otelEndpoint, process.env),
        nats: flags.nats?.split(',').map((url) => url.trim()),
      });
    });
  await parseCommandLine(program, process.argv);
  if (options === undefined) return;
  if (options.workers > 1 && cluster.isPrimary) supervise(options);
  else await serve(options, placementFile);
}

/**
 * The primary of `--workers N`: forks the routers (they share the port through node:cluster), forks a
 * new one when one dies, answers their asks for every worker's metrics (prom-client's aggregator), and
 * stops them all on SIGINT or SIGTERM. It serves nothing itself.
 */
function supervise(options: RouterOptions): void {
  const logger = createLogger(NAME);
  const aggregator = new AggregatorRegistry();
  let stopping = false;
  const listened = new Set<number>();
  for (let i = 0; i < options.workers; i += 1) cluster.fork();
  cluster.on('listening', (worker) => listened.add(worker.id));
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(process.exitCode ?? 0);
      return;
    }
    // A worker that never listened (the port is taken, say) would fail again: stop, do not fork forever.
    if (!listened.has(worker.id)) {
      logger.error({ pid: worker.process.pid, code, signal }, 'a router worker exited before it listened; stopping');
      stopping = true;
      for (const other of Object.values(cluster.workers ?? {})) other?.process.kill('SIGTERM');
      process.exitCode = 1;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(1);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'router worker died; starting another');
    cluster.fork();
  });
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== METRICS_ASK) return;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_ANSWER, id: message.id, text }),
      (err: Error) => worker.send({ type: METRICS_ANSWER, id: message.id, error: err.message }),
    );
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) process.exit(signal === 'SIGINT' ? 130 : 143);
      stopping = true;
      logger.info({ signal, workers: options.workers }, 'stopping');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
    });
  }
}

/** In a worker of `--workers N`: /_metrics answers the figures of every worker, summed by the primary. */
function clusterMetricsText(registry: RouterApp['metrics']['registry']): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one is what makes prom-client answer the primary's asks in this worker.
  new AggregatorRegistry();
  let next = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();
  process.on('message', (message: { type?: string; id?: number; text?: string; error?: string }) => {
    if (message?.type !== METRICS_ANSWER || message.id === undefined) return;
    const asked = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error !== undefined) asked?.reject(new Error(message.error));
    else asked?.resolve(message.text ?? '');
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      process.send!({ type: METRICS_ASK, id });
    });
}

/**
 * Re-reads the placement file when it changes: read each second and compared with what was last read
 * (a stat alone misses an edit of the same size within the file system's clock tick); an edited file, a
 * file replaced by a rename, a Kubernetes ConfigMap's swapped link all show. A file that no longer
 * parses, or cannot be read, is logged and the pins the router had are kept.
 */
function watchPlacement(file: string, options: RouterOptions, app: RouterApp, logger: Logger): void {
  let last = fs.readFileSync(file, 'utf8');
  setInterval(() => {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      return logger.error(
        { placement: file, err: (err as NodeJS.ErrnoException).code ?? (err as Error).message },
        'placement not re-read; the pins before it stay',
      );
    }
    if (text === last) return;
    last = text;
    try {
      const pins = parsePlacement(text, file, options.nodes);
      app.setPins(pins);
      logger.info({ placement: file, pins: pins.size }, 'placement re-read');
    } catch (err) {
      logger.error({ placement: file, err: (err as Error).message }, 'placement not re-read; the pins before it stay');
    }
  }, PLACEMENT_POLL_MS).unref();
}

/**
 * The replicated tenants' directory (--nats), followed for the router's life. Its server is pinged each second (the
 * shortest a node's lease makes its own pings) and left after two unanswered for another of the cluster's: with the
 * client's defaults a server gone silent (a partition, a lost machine) held the router on it for minutes.
 */
async function openDirectory(servers: readonly string[]): Promise<Directory> {
  const { connect } = await import('@nats-io/transport-node');
  const nc = await connect({
    servers: [...servers],
    name: 'fenec-router',
    maxReconnectAttempts: -1,
    pingInterval: 1000,
    maxPingOut: 2,
    timeout: 2000,
  }).catch((err: unknown) => {
    throw new FenecError('invalid_option', `--nats ${servers.join(',')}: cannot connect: ${String(err)}`);
  });
  const { Directory } = await import('../shared/nats/directory.js');
  return Directory.open(nc, undefined);
}

async function serve(options: RouterOptions, placementFile: string | undefined): Promise<void> {
  const logger = createLogger(NAME);
  // Imported here: a --workers primary never loads the proxy it does not run.
  const { createRouterApp } = await import('./router-app.js');
  const audit = openAudit(NAME, options.audit, logger);
  // Registered before anything is served: the first request is traced.
  const tracing = await startTracing(options.otel, NAME, logger);
  const directory = options.nats === undefined ? undefined : await openDirectory(options.nats);
  const app = createRouterApp(options, logger, audit, directory);
  // The issuers' keys are fetched while the first requests come; a start never waits on an IdP.
  void options.oauth?.warm();
  if (cluster.isWorker) app.metrics.textOf = clusterMetricsText(app.metrics.registry);
  if (placementFile !== undefined) watchPlacement(placementFile, options, app, logger);
  const server = http.createServer(app.handler);
  // A request under way at a stop may wait for its node's first byte, then gets a second more.
  const stop = () => closeServer(server, options.nodeTimeoutMs + 1_000);
  const running = await listen(server, options, logger, stop).catch((err: unknown) => {
    logger.error({ err: (err as Error).message }, 'cannot listen');
    process.exit(1);
  });
  onExit(
    () => {
      app.close();
      audit.close();
    },
    (signal) => {
      logger.info({ signal }, 'stopping');
      // The last requests' spans are exported before the process ends.
      void running
        .close()
        .then(() => tracing.shutdown())
        .then(() => process.exit(0));
    },
  );
  logger.info(
    {
      url: running.url,
      port: running.port,
      nodes: options.nodes.map((node) => `${node.name}=${node.url.origin}`),
      pins: options.pins.size,
      auth: [
        options.httpToken === undefined ? undefined : 'token',
        options.jwt === undefined ? undefined : `JWT ${options.jwt.algorithm}`,
        options.oauth === undefined
          ? undefined
          : `OAuth ${options.oauth.issuers.join(' ')} at ${options.oauth.resource.publicUrl}`,
      ]
        .filter(Boolean)
        .join(' + '),
      audit: options.audit === undefined ? undefined : options.audit.kind === 'file' ? options.audit.path : 'stderr',
      traces: options.otel?.endpoint,
    },
    'listening',
  );
}

await main();
