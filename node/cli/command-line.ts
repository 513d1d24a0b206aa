/**
 * What the CLIs share: commander set up so that a usage error is one line on stderr and exit
 * status 2, and the other ways out (a refused start, a signal) as each program needs them.
 */
import { Command, CommanderError } from 'commander';
import { Audit, type AuditTarget } from '../../shared/audit.js';
import { asFenecError, FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

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
    return usageError(program, `--audit cannot open ${path} for appending: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
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
