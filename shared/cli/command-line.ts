/**
 * What the CLIs share: commander set up so that a usage error is one line on stderr and exit
 * status 2, and the other ways out (a refused start, a signal) as each program needs them.
 */
import { Command, CommanderError } from 'commander';
import { Audit, type AuditTarget } from '../audit.js';
import type { TracingConfig } from '../tracing.js';
import { asFenecError, FenecError } from '../errors.js';
import type { Logger } from '../logger.js';

/** Exit status of a bad flag, a bad flag value or a missing argument. */
export const USAGE_EXIT = 2;

/** A commander program (its subcommands inherit this) whose errors read `NAME: what is wrong`. */
export function createProgram(name: string): Command {
  return new Command(name)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`${name}: ${text.replace(/^error: /, '')}`) });
}

/**
 * Parses argv and runs the chosen action. Exits 0 after --help or --version, and with USAGE_EXIT on
 * a usage error: commander's own, or a FenecError `invalid_option` thrown while reading the options.
 * Any other error is the caller's.
 */
export async function parseCommandLine(program: Command, argv: readonly string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : USAGE_EXIT);
    if (err instanceof FenecError && err.code === 'invalid_option') usageError(program.name(), err.message);
    throw err;
  }
}

/** `--audit [file]` as commander gives it: a file, stderr (the flag alone), or no audit. */
export function auditTarget(value: string | true | undefined): AuditTarget | undefined {
  if (value === undefined) return undefined;
  return value === true ? { kind: 'stderr' } : { kind: 'file', path: value };
}

/** The audit's file opened for appending before anything is served; one that cannot be is a bad flag. */
export function openAudit(program: string, target: AuditTarget | undefined, logger: Logger): Audit {
  if (target === undefined) return Audit.off;
  try {
    return Audit.open(target, (err) => logger.error({ err }, 'an audit line could not be written'));
  } catch (err) {
    const path = target.kind === 'file' ? target.path : 'stderr';
    return usageError(
      program,
      `--audit cannot open ${path} for appending: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/** `--otel-endpoint`'s help, the same on fenec-server and fenec-router. */
export const OTEL_ENDPOINT_HELP =
  'export traces (OTLP over HTTP, JSON) to this collector, e.g. http://127.0.0.1:4318: spans go to URL/v1/traces ' +
  '(default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else $OTEL_EXPORTER_OTLP_ENDPOINT; neither: no tracing)';

const TRACES_PATH = '/v1/traces';

/** `--otel-endpoint` and the standard variables as a tracing config: undefined when no endpoint is named. */
export function tracingConfig(flag: string | undefined, env: NodeJS.ProcessEnv): TracingConfig | undefined {
  const endpoint = otelTracesUrl(flag, env);
  if (endpoint === undefined) return undefined;
  return Object.freeze({
    endpoint,
    sampleRatio: otelSampleRatio(env),
    batchDelayMs: otelMillis(env, 'OTEL_BSP_SCHEDULE_DELAY', DEFAULT_BATCH_DELAY_MS),
    exportTimeoutMs: otelMillis(env, 'OTEL_BSP_EXPORT_TIMEOUT', DEFAULT_EXPORT_TIMEOUT_MS),
  });
}

/** How long a span waits in its batch, and how long one export may take, unless the standard variables say. */
const DEFAULT_BATCH_DELAY_MS = 5_000;
const DEFAULT_EXPORT_TIMEOUT_MS = 5_000;
/** Past a minute a batch would sit in memory longer than anyone watches a trace for; an export, hold a stop. */
const MAX_OTEL_MS = 60_000;

/**
 * A standard OpenTelemetry duration variable (whole milliseconds, as the specification has them), or `fallback`
 * when it is unset or empty.
 *
 * @throws FenecError `invalid_option` for anything but a whole number of milliseconds from 1 to 60 000.
 */
function otelMillis(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const text = env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || value < 1 || value > MAX_OTEL_MS) {
    throw new FenecError(
      'invalid_option',
      `${name} takes whole milliseconds from 1 to ${MAX_OTEL_MS} (default ${fallback}), not "${text.slice(0, 100)}"`,
    );
  }
  return value;
}

/** OTEL_TRACES_SAMPLER's names, by the share of new traces each keeps (a ratio one's is OTEL_TRACES_SAMPLER_ARG). */
const SAMPLERS: Readonly<Record<string, number | 'arg'>> = {
  always_on: 1,
  parentbased_always_on: 1,
  always_off: 0,
  parentbased_always_off: 0,
  traceidratio: 'arg',
  parentbased_traceidratio: 'arg',
};

/**
 * The share of new traces kept, from OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (default: all).
 * Whatever the name, a request's `traceparent` is followed (every sampler here is parent-based): a node
 * behind a router must keep the traces the router keeps, no others.
 *
 * @throws FenecError `invalid_option` for a sampler fenecdb does not know or a ratio outside 0…1.
 */
export function otelSampleRatio(env: NodeJS.ProcessEnv): number {
  const name = env.OTEL_TRACES_SAMPLER || 'parentbased_always_on';
  const ratio = SAMPLERS[name];
  if (ratio === undefined) {
    throw new FenecError(
      'invalid_option',
      `OTEL_TRACES_SAMPLER takes ${Object.keys(SAMPLERS).join(', ')}, not "${name.slice(0, 100)}"`,
    );
  }
  if (ratio !== 'arg') return ratio;
  const arg = env.OTEL_TRACES_SAMPLER_ARG || '1';
  const value = Number(arg);
  if (!/^\s*[\d.]+\s*$/.test(arg) || !(value >= 0 && value <= 1)) {
    throw new FenecError(
      'invalid_option',
      `OTEL_TRACES_SAMPLER_ARG takes the share of traces kept, 0 to 1 (e.g. 0.1), not "${arg.slice(0, 100)}"`,
    );
  }
  return value;
}

/**
 * The OTLP/HTTP URL spans are posted to, or undefined for none: `--otel-endpoint`, else the
 * standard variables (an empty one is unset). A base endpoint gets `/v1/traces` appended, as the
 * OpenTelemetry specification has it for OTEL_EXPORTER_OTLP_ENDPOINT, unless its path ends so already;
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the traces URL itself.
 *
 * @throws FenecError `invalid_option` for a value that is not an http(s) URL, naming where it came from.
 */
export function otelTracesUrl(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const given: [string, string, boolean] | undefined =
    flag !== undefined
      ? ['--otel-endpoint', flag, false]
      : env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
        ? ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, true]
        : env.OTEL_EXPORTER_OTLP_ENDPOINT
          ? ['OTEL_EXPORTER_OTLP_ENDPOINT', env.OTEL_EXPORTER_OTLP_ENDPOINT, false]
          : undefined;
  if (given === undefined) return undefined;
  const [option, text, asIs] = given;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.username !== '' ||
    url.password !== ''
  ) {
    throw new FenecError(
      'invalid_option',
      `${option} takes a collector's http:// or https:// URL without credentials, e.g. http://127.0.0.1:4318, not "${text.slice(0, 200)}"`,
    );
  }
  if (!asIs && !url.pathname.endsWith(TRACES_PATH)) url.pathname = url.pathname.replace(/\/$/, '') + TRACES_PATH;
  return url.href;
}

export function usageError(program: string, message: string): never {
  process.stderr.write(`${program}: ${message}\n`);
  process.exit(USAGE_EXIT);
}

/**
 * Runs `cleanup` once, on whichever way out comes first: a normal exit, an uncaught exception, or
 * SIGINT/SIGTERM (whose default would skip it). `onSignal` replaces the plain exit on a signal,
 * for a program that stops gracefully; a second signal exits at once.
 */
export function onExit(cleanup: () => void, onSignal?: (signal: NodeJS.Signals) => void): void {
  let done = false;
  const once = (): void => {
    if (done) return;
    done = true;
    cleanup();
  };
  process.on('exit', once);
  let signalled = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (signalled || onSignal === undefined) process.exit(signal === 'SIGINT' ? 130 : 143);
      signalled = true;
      onSignal(signal);
    });
  }
}

/** A fault on this machine is the user's own to read: its message is kept, unlike a server's 500. */
export function localError(err: unknown): FenecError {
  const error = asFenecError(err);
  if (error.code !== 'internal' || !(err instanceof Error)) return error;
  return new FenecError('internal', `internal error: ${err.message}`, { cause: err });
}
