/**
 * The embedder's flags, shared by `fenec-server` and `fenec mcp --file`: read into an EmbedderConfig (the key from
 * FENEC_EMBEDDER_API_KEY, here and nowhere below), and the start probe that learns the model's dimension.
 */
import type { Command } from 'commander';
import { FenecError } from '../../shared/errors.js';
import { parseCount, parseDurationOption } from '../../shared/cli/options.js';
import { EMBEDDER_DEFAULTS, embedderConfig, type EmbedderConfig } from '../embedder/config.js';
import { Embedder } from '../embedder/embedder.js';
import { USAGE_EXIT } from '../../shared/cli/command-line.js';

export interface EmbedderFlags {
  embedderUrl?: string;
  embedderModel?: string;
  embedderBatch: string;
  embedderConcurrency: string;
  embedderTimeout: string;
  embedderRetries: string;
  embedderTotalTimeout: string;
  embedderLazy?: boolean;
}

/** What a program is given of its embedder: the options, and whether it starts when the start probe fails. */
export interface EmbedderChoice {
  readonly config: EmbedderConfig;
  /** --embedder-lazy: start anyway, and probe again when a statement first needs the embedder. */
  readonly lazy: boolean;
}

export function addEmbedderFlags(command: Command): Command {
  return command
    .option(
      '--embedder-url <url>',
      'an embedder speaking the OpenAI embeddings API (its base: POST URL/embeddings), e.g. http://127.0.0.1:11434/v1; ' +
        'the key, if any, from $FENEC_EMBEDDER_API_KEY',
    )
    .option('--embedder-model <name>', 'the model the embedder is asked for, e.g. nomic-embed-text')
    .option('--embedder-batch <n>', 'texts in one embedder call (1-2048)', String(EMBEDDER_DEFAULTS.batchSize))
    .option(
      '--embedder-concurrency <n>',
      'embedder calls out at once from this process, all tenants together (shared among the workers)',
      String(EMBEDDER_DEFAULTS.concurrency),
    )
    .option('--embedder-timeout <duration>', 'the time limit of one embedder call', '10s')
    .option(
      '--embedder-retries <n>',
      'tries after the first on 429, 5xx, a refused connection or a call past its time limit',
      String(EMBEDDER_DEFAULTS.retries),
    )
    .option('--embedder-total-timeout <duration>', "the whole of one batch's tries and waits", '30s')
    .option(
      '--embedder-lazy',
      'start even when the embedder does not answer the start probe; it is probed again when a statement needs it ' +
        '(503 embedder_unavailable until it answers)',
    );
}

/** The embedder's config, or undefined when --embedder-url is not given. The key is read from `env` here only. */
export function embedderChoice(flags: EmbedderFlags, env: NodeJS.ProcessEnv): EmbedderChoice | undefined {
  if (flags.embedderUrl === undefined) {
    if (flags.embedderModel !== undefined)
      throw new FenecError('invalid_option', '--embedder-model names the model of --embedder-url: give both');
    if (flags.embedderLazy === true) throw new FenecError('invalid_option', '--embedder-lazy needs --embedder-url');
    return undefined;
  }
  if (flags.embedderModel === undefined)
    throw new FenecError('invalid_option', '--embedder-url needs --embedder-model, the model to ask it for');
  const config = embedderConfig({
    url: flags.embedderUrl,
    model: flags.embedderModel,
    // An empty variable is how shells and compose files say "unset".
    apiKey: env.FENEC_EMBEDDER_API_KEY || undefined,
    batchSize: parseCount('--embedder-batch', flags.embedderBatch, 1, 2048),
    concurrency: parseCount('--embedder-concurrency', flags.embedderConcurrency, 1, 256),
    callTimeoutMs: parseDurationOption('--embedder-timeout', flags.embedderTimeout),
    retries: parseCount('--embedder-retries', flags.embedderRetries, 0, 20),
    totalTimeoutMs: parseDurationOption('--embedder-total-timeout', flags.embedderTotalTimeout),
  });
  return Object.freeze({ config, lazy: flags.embedderLazy === true });
}

/**
 * The start probe: the model's dimension, or undefined when it failed under --embedder-lazy (the failure is logged by
 * `warn`). Without --embedder-lazy a failure ends the program with exit status 2 and one line that says why.
 */
export async function probeEmbedder(
  program: string,
  choice: EmbedderChoice,
  warn: (message: string) => void,
): Promise<number | undefined> {
  try {
    return (await Embedder.start(choice.config)).dimension;
  } catch (err) {
    const error = err instanceof FenecError ? err : new FenecError('embedder_unavailable', String(err));
    const hint = choice.lazy ? 'starting anyway (--embedder-lazy): probed again when a statement needs it' : error.hint;
    const line = `the start probe of ${choice.config.url} (model ${choice.config.model}) failed: ${error.message}`;
    if (choice.lazy) {
      warn(`${line} (${hint})`);
      return undefined;
    }
    process.stderr.write(
      `${program}: ${error.code}: ${line}${hint === undefined ? '' : ` (${hint})`}; or start with --embedder-lazy\n`,
    );
    process.exit(USAGE_EXIT);
  }
}

/** What a startup line says of the embedder: never the key, only whether one is sent. */
export function embedderFields(
  embedder: { readonly config: EmbedderConfig; readonly dimension: number | undefined } | undefined,
): unknown {
  if (embedder === undefined) return undefined;
  return {
    url: embedder.config.url,
    model: embedder.config.model,
    dimension: embedder.dimension ?? 'not known yet (--embedder-lazy)',
    key: embedder.config.apiKey === undefined ? 'none' : 'from FENEC_EMBEDDER_API_KEY',
    batch: embedder.config.batchSize,
  };
}
