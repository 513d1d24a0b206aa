#!/usr/bin/env node
/**
 * fenec-server: one `.fenec` file over HTTP. Options are read here, once, into a frozen
 * ServerConfig; nothing below reads process.env or process.argv.
 */
import { asFenecError } from '../../shared/errors.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { parseByteSize, parseDuration, parsePort, serverConfig, SERVER_DEFAULTS, type ServerConfig } from '../config.js';
import { FenecDatabase } from '../database.js';
import { startServer } from '../http/server.js';
import { createProgram, onExit, parseCommandLine } from './command-line.js';

const NAME = 'fenec-server';

interface Options {
  file: string;
  host: string;
  port: string;
  httpToken?: string;
  httpReadOnly?: boolean;
  readOnly?: boolean;
  maxBody: string;
  httpCors?: string;
  sweepInterval: string;
}

async function main(): Promise<void> {
  let config: ServerConfig | undefined;
  const program = createProgram(NAME)
    .description('Serve one .fenec file over HTTP: POST /query, GET /_health, GET /_metrics.')
    .requiredOption('--file <path>', 'the .fenec file to serve; created when missing (its lock F.lock is held while serving)')
    .option('--host <address>', 'address to listen on (0.0.0.0: every interface)', SERVER_DEFAULTS.host)
    .option('--port <port>', 'port to listen on; 0 takes a free one, named in the startup log line', String(SERVER_DEFAULTS.port))
    .option('--http-token <token>', 'bearer token required on every request but /_health (default: $FENEC_TOKEN; '
      + 'without one, only a Host naming this machine is answered)')
    .option('--http-read-only', 'refuse every write over HTTP (403 read_only)')
    .option('--read-only', 'open the file read-only: no lock, no writes, the file as it stood at start')
    .option('--max-body <size>', 'largest request body, e.g. 512kb, 1mb or a number of bytes', '1mb')
    .option('--http-cors <origin>', 'a browser origin (https://app.example.com) allowed besides the server\'s own')
    .option('--sweep-interval <duration>', 'how often rows past their @ttl are deleted from the file (reads leave them out at once); 0: never', '10s')
    .action((options: Options) => {
      config = serverConfig({
        file: options.file,
        host: options.host,
        port: parsePort(options.port),
        // An empty FENEC_TOKEN is how shells and compose files say "unset"; an empty flag is an error.
        httpToken: options.httpToken ?? (process.env.FENEC_TOKEN || undefined),
        httpReadOnly: options.httpReadOnly === true,
        readOnly: options.readOnly === true,
        maxBodyBytes: parseByteSize(options.maxBody),
        httpCors: options.httpCors,
        sweepIntervalMs: parseDuration('--sweep-interval', options.sweepInterval),
      });
    });
  await parseCommandLine(program, process.argv);
  if (config !== undefined) await serve(config);
}

async function serve(config: ServerConfig): Promise<void> {
  const logger = createLogger(NAME);
  const db = openOrExit(config, logger);
  let closed = false;
  const closeDb = (): void => {
    if (closed) return;
    closed = true;
    db.close();
  };

  let stop: (signal: NodeJS.Signals) => void = () => process.exit(1);
  // The lock is released by db.close(), on every way out: a signal, an exit, an uncaught fault.
  onExit(closeDb, (signal) => stop(signal));

  const server = await startServer(config, db, logger).catch((err: unknown) => refuseStart(err));
  stop = (signal) => {
    logger.info({ signal }, 'stopping');
    server.close().then(
      () => {
        closeDb();
        logger.info('stopped');
        process.exit(0);
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
      file: config.file,
      readOnly: config.readOnly,
      httpReadOnly: config.httpReadOnly,
      auth: config.httpToken === undefined ? 'local Host only' : 'token',
    },
    'listening',
  );
}

function openOrExit(config: ServerConfig, logger: Logger): FenecDatabase {
  try {
    return FenecDatabase.open({
      file: config.file,
      readOnly: config.readOnly,
      program: NAME,
      sweepIntervalMs: config.sweepIntervalMs,
      onVectorEvent: (event) => {
        const fields = { collection: event.collection, field: event.field, err: event.error };
        if (event.kind === 'snapshot_written') logger.debug(fields, event.message);
        else logger.warn(fields, event.message);
      },
    });
  } catch (err) {
    return refuseStart(err);
  }
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
