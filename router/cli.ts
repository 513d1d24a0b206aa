#!/usr/bin/env node
/**
 * fenec-router: the stateless router in front of tenant nodes. Options are read here, once, into
 * frozen RouterOptions; nothing below reads process.env or process.argv.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { FenecError } from '../shared/errors.js';
import { createLogger } from '../shared/logger.js';
import { parseDuration, parsePort } from '../node/config.js';
import { auditTarget, createProgram, onExit, openAudit, parseCommandLine } from '../node/cli/command-line.js';
import { parseNodes, parsePlacement } from './placement.js';
import { ROUTER_DEFAULTS, routerOptions, type RouterOptions } from './router-config.js';
import { createRouterApp } from './router-app.js';

const NAME = 'fenec-router';

interface Flags {
  nodes: string;
  placement?: string;
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
}

async function main(): Promise<void> {
  let options: RouterOptions | undefined;
  const program = createProgram(NAME)
    .description('Route /t/<tenant>/query and /t/<tenant>/_mcp to the tenant node that holds each tenant, after checking the token\'s tenant claim.')
    .requiredOption('--nodes <list>', 'the tenant nodes, name=url,… e.g. a=http://127.0.0.1:8081,b=http://127.0.0.1:8082 (the names place tenants: keep them stable)')
    .option('--placement <file>', 'pins, one a line: TENANT NODE (# comments; a later line wins); other tenants are placed by rendezvous hashing')
    .option('--host <address>', 'address to listen on (0.0.0.0: every interface)', ROUTER_DEFAULTS.host)
    .option('--port <port>', 'port to listen on; 0 takes a free one, named in the startup log line', String(ROUTER_DEFAULTS.port))
    .option('--http-token <token>', 'the server token: every tenant, PUT/DELETE /t/<tenant>, /_tenants, /_metrics (default: $FENEC_TOKEN)')
    .option('--jwt-secret <secret>', 'take JSON Web Tokens signed HS256 with this secret, at least 32 bytes (default: $FENEC_JWT_SECRET unless --jwt-public-key is given)')
    .option('--jwt-public-key <file>', 'take JSON Web Tokens signed with the private half of this PEM public key (RS256 or ES256)')
    .option('--jwt-issuer <iss>', 'take only JSON Web Tokens whose iss claim is this')
    .option('--jwt-audience <aud>', 'take only JSON Web Tokens whose aud claim is or contains this')
    .option('--node-timeout <duration>', 'a node that has not begun to answer by then gets the client a 503', '10s')
    .option('--max-sockets <n>', 'kept-alive connections per node', String(ROUTER_DEFAULTS.maxSocketsPerNode))
    .option('--audit [file]', 'write one JSON line per refused token to this file (appended), or to stderr when no file is named')
    .action((flags: Flags) => {
      const nodes = parseNodes(flags.nodes);
      const jwtSecret = flags.jwtSecret ?? (flags.jwtPublicKey === undefined ? process.env.FENEC_JWT_SECRET || undefined : undefined);
      options = routerOptions({
        nodes,
        pins: flags.placement === undefined ? new Map() : parsePlacement(readOptionFile('--placement', flags.placement), flags.placement, nodes),
        host: flags.host,
        port: parsePort(flags.port),
        httpToken: flags.httpToken ?? (process.env.FENEC_TOKEN || undefined),
        ...(jwtSecret === undefined ? {} : { jwtSecret }),
        ...(flags.jwtPublicKey === undefined ? {} : { jwtPublicKey: { pem: readOptionFile('--jwt-public-key', flags.jwtPublicKey), source: flags.jwtPublicKey } }),
        ...(flags.jwtIssuer === undefined ? {} : { jwtIssuer: flags.jwtIssuer }),
        ...(flags.jwtAudience === undefined ? {} : { jwtAudience: flags.jwtAudience }),
        nodeTimeoutMs: parseDuration('--node-timeout', flags.nodeTimeout),
        maxSocketsPerNode: Number(flags.maxSockets),
        audit: auditTarget(flags.audit),
      });
    });
  await parseCommandLine(program, process.argv);
  if (options !== undefined) serve(options);
}

function readOptionFile(option: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new FenecError('invalid_option', `${option} cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function serve(options: RouterOptions): void {
  const logger = createLogger(NAME);
  const audit = openAudit(NAME, options.audit, logger);
  const app = createRouterApp(options, logger, audit);
  const server = http.createServer({ keepAliveTimeout: 65_000 }, app.handler);
  server.on('error', (err) => {
    logger.error({ err: (err as NodeJS.ErrnoException).code ?? err.message }, 'cannot listen');
    process.exit(1);
  });
  onExit(() => {
    app.close();
    audit.close();
  }, (signal) => {
    logger.info({ signal }, 'stopping');
    server.close(() => process.exit(0));
    server.closeIdleConnections();
  });
  server.listen(options.port, options.host, () => {
    const { port } = server.address() as AddressInfo;
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    logger.info({
      url: `http://${host}:${port}`,
      port,
      nodes: options.nodes.map((node) => `${node.name}=${node.url.origin}`),
      pins: options.pins.size,
      auth: [options.httpToken === undefined ? undefined : 'token', options.jwt === undefined ? undefined : `JWT ${options.jwt.algorithm}`].filter(Boolean).join(' + '),
      audit: options.audit === undefined ? undefined : options.audit.kind === 'file' ? options.audit.path : 'stderr',
    }, 'listening');
  });
}

await main();
