/**
 * `fenec mcp`: the MCP server as a process an agent starts, speaking stdio. Over `--file` it holds
 * the database itself; over `--url` it is a bridge in front of a server, deciding nothing.
 */
import type { Command } from 'commander';
import { setTimeout as sleep } from 'node:timers/promises';
import { FenecError } from '../../shared/errors.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { switchedBy, toolNames } from '../../shared/mcp/tools.js';
import { FenecDatabase } from '../database.js';
import { bridgeUrl, McpBridge } from '../mcp/bridge.js';
import { mcpEndpoint } from '../mcp/serve-mcp.js';
import { serveLines } from '../mcp/stdio.js';
import { onExit, usageError } from '../../shared/cli/command-line.js';
import {
  addEmbedderFlags,
  embedderChoice,
  embedderFields,
  probeEmbedder,
  type EmbedderFlags,
} from './embedder-options.js';
import { Embedder } from '../embedder/embedder.js';
import { IdleCollector } from '../workers/idle-collect.js';
import { EmbeddingRound, fill, MAX_PASSES, type EmbedderState } from '../embedder/round.js';
import { asFenecError } from '../../shared/errors.js';

const NAME = 'fenec';
const PROGRAM = 'fenec mcp';
/**
 * How long a start waits for the file's lock while another process holds it: an agent's client may
 * start a short-lived process first (the v2 client's probe) and this one as it exits.
 */
const LOCK_PATIENCE_MS = 3_000;
const LOCK_RETRY_MS = 50;

interface McpOptions extends Partial<EmbedderFlags> {
  memoryMerge?: string;
  file?: string;
  url?: string;
  memory?: string;
  write?: boolean;
  readOnly?: boolean;
}

export function addMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description(
      'Serve MCP over stdio (a JSON-RPC message a line on stdin, an answer a line on stdout, logs on stderr): ' +
        'over a .fenec file, or as a bridge in front of a server.',
    )
    .option('--file <path>', 'serve this .fenec file (takes F.lock while the session lasts, unless --read-only)')
    .option(
      '--url <url>',
      "bridge to a server's MCP endpoint, e.g. http://127.0.0.1:8080/_mcp; the token from $FENEC_TOKEN",
    )
    .option('--memory <collection>', `with --file: offer ${toolNames(switchedBy('memory'))} over this collection`)
    .option(
      '--memory-merge <cosine>',
      'with --memory: a remember within this cosine (e.g. 0.92) of one of the memories refreshes it instead (off by default)',
    )
    .option('--write', `with --file: offer ${toolNames(switchedBy('write'))} (rows written; never a schema change)`)
    .option(
      '--read-only',
      'with --file: take no lock, write nothing, read the file as it stood when the session began',
    );
  addEmbedderFlags(program.commands.at(-1)!).action(async (options: McpOptions) => {
    if ((options.file === undefined) === (options.url === undefined))
      usageError(NAME, 'mcp takes one of --file <path> or --url <url>');
    if (options.url !== undefined) {
      if (options.embedderUrl !== undefined)
        usageError(NAME, "--embedder-url is for --file; over --url the embedder is the server's");
      for (const flag of ['memory', 'write', 'readOnly'] as const) {
        if (options[flag] !== undefined)
          usageError(
            NAME,
            `--${flag === 'readOnly' ? 'read-only' : flag} is for --file; over --url the tools are the server's`,
          );
      }
      await bridge(options.url);
    } else {
      if (options.write === true && options.readOnly === true)
        usageError(NAME, '--write and --read-only contradict each other');
      if (options.memory !== undefined && !/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(options.memory)) {
        usageError(
          NAME,
          `--memory takes a collection name (a letter, then letters, digits or _, at most 64), not "${options.memory}"`,
        );
      }
      await serveFile(options.file!, options);
    }
  });
}

async function serveFile(file: string, options: McpOptions): Promise<void> {
  const logger = createLogger(PROGRAM);
  const readOnly = options.readOnly === true;
  let choice: ReturnType<typeof embedderChoice>;
  try {
    choice = embedderChoice(options as EmbedderFlags, process.env);
  } catch (err) {
    usageError(NAME, asFenecError(err).message);
  }
  const merge = options.memoryMerge === undefined ? undefined : Number(options.memoryMerge);
  if (merge !== undefined && (!(merge > 0 && merge <= 1) || options.memory === undefined))
    usageError(NAME, `--memory-merge takes a cosine above 0 and at most 1 (such as 0.92), with --memory`);
  const dimension = choice === undefined ? undefined : await probeEmbedder(PROGRAM, choice, (m) => logger.warn(m));
  // The session's statements run on this thread: what they and the index's jobs left is given back once quiet, as
  // a one-file server's serving thread does.
  const collector = new IdleCollector();
  const db = await openPatiently(file, readOnly, logger, () => collector.dropped());
  onExit(() => db.close());
  const endpoint = mcpEndpoint(db, {
    write: options.write === true,
    memory: options.memory,
    readOnly,
    logger,
    ...(choice === undefined ? {} : { embedder: (what: string) => db.embedder(what) }),
    ...(merge === undefined ? {} : { memoryMerge: merge }),
  });
  // The process is the file's owner, as the server's token is the server's: it reaches everything.
  const caller = { options: { readOnly }, scoped: false };
  logger.info(
    {
      file,
      readOnly,
      write: options.write === true,
      memory: options.memory ?? null,
      embedder: embedderFields(choice === undefined ? undefined : { config: choice.config, dimension }),
    },
    'serving MCP on stdio',
  );
  let embedder = choice === undefined || dimension === undefined ? undefined : Embedder.ready(choice.config, dimension);
  await serveLines(process.stdin, process.stdout, async (line) => {
    collector.busy();
    // A call whose statements want texts embedded stops before it writes; the texts are embedded, and it runs again.
    const state: EmbedderState =
      choice === undefined
        ? { kind: 'none' }
        : embedder === undefined
          ? { kind: 'unprobed', model: choice.config.model }
          : { kind: 'ready', model: embedder.model, dimension: embedder.dimension };
    const round = new EmbeddingRound(state);
    for (let pass = 1; ; pass++) {
      const reply = db.embedding(round, () => endpoint.handle(line, caller));
      if (!round.wants || pass > MAX_PASSES) return reply.json === undefined ? undefined : [reply.json];
      try {
        embedder ??= await Embedder.start(choice!.config);
        if (round.wantsProbe) round.probed({ model: embedder.model, dimension: embedder.dimension });
        await fill(embedder, round);
      } catch (err) {
        // The call is answered the embedder's refusal as its tool's.
        const refused = endpoint.refuse(line, caller, { error: asFenecError(err) });
        return refused?.json === undefined ? undefined : [refused.json];
      }
    }
  });
  // stdin ended: the session is over. A vector index still building is stored before the exit.
  await db.idle();
  db.close();
  process.exit(0);
}

/** Opens the file, waiting up to LOCK_PATIENCE_MS for a lock whose holder may be exiting. */
async function openPatiently(
  file: string,
  readOnly: boolean,
  logger: Logger,
  stored: () => void,
): Promise<FenecDatabase> {
  const deadline = Date.now() + LOCK_PATIENCE_MS;
  let told = false;
  for (;;) {
    try {
      return FenecDatabase.open({
        file,
        readOnly,
        program: PROGRAM,
        onVectorEvent: (event) => {
          if (event.kind === 'snapshot_written') stored();
        },
      });
    } catch (err) {
      if (!(err instanceof FenecError) || err.code !== 'lock_held' || Date.now() >= deadline) return refuse(err);
      if (!told) logger.info({ file }, `waiting for the lock: ${err.message}`);
      told = true;
      await sleep(LOCK_RETRY_MS);
    }
  }
}

async function bridge(urlText: string): Promise<void> {
  let url: URL;
  try {
    url = bridgeUrl(urlText);
  } catch (err) {
    usageError(NAME, (err as Error).message);
  }
  const logger = createLogger(PROGRAM);
  const bridge = new McpBridge({ url, token: process.env.FENEC_TOKEN || undefined });
  logger.info({ url: url.href, token: process.env.FENEC_TOKEN ? 'from FENEC_TOKEN' : 'none' }, 'bridging MCP on stdio');
  await serveLines(process.stdin, process.stdout, async (line) =>
    (await bridge.forward(line))?.map((m) => JSON.stringify(m)),
  );
  process.exit(0);
}

/** A start refused (the lock held, a file that is not fenecdb's): one line on stderr, and exit status 1. */
function refuse(err: unknown): never {
  const error = err instanceof FenecError ? err : new FenecError('internal', (err as Error).message);
  process.stderr.write(
    `${NAME}: ${error.code}: ${error.message}${error.hint === undefined ? '' : ` (${error.hint})`}\n`,
  );
  process.exit(1);
}
