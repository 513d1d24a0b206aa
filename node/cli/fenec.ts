#!/usr/bin/env -S node --expose-gc --max-semi-space-size=32
/**
 * fenec: the command-line client. `fenec query` runs one statement on a file or on a server and
 * prints the answer's JSON on stdout; a refusal is the error's JSON on stderr, and exit status 1.
 */
import { FenecDatabase } from '../database.js';
import { nativeBuildPaths, useNativeBuilds } from '../native-builds.js';
import { createProgram, localError, onExit, parseCommandLine, usageError } from '../../shared/cli/command-line.js';
import { addMcpCommand } from './mcp-command.js';
import { addTenantCommand } from './tenant-command.js';
import { addTokenCommand } from './token-command.js';
import { addImportCommand } from './import-command.js';
import { postQuery, queryUrl, tokenOf, type Outcome } from './server-client.js';

const NAME = 'fenec';

interface QueryOptions {
  file?: string;
  url?: string;
  params: string;
  readOnly?: boolean;
  token?: string;
}

// Where the native builds are (FENEC_FAISS_ADDON, FENEC_FTS5_EXTENSION), for the commands that open a file.
useNativeBuilds(nativeBuildPaths(process.env));

// Options are positional: `fenec token revoke --sub S` gives --sub to revoke, not to token.
const program = createProgram(NAME).description('fenecdb from the command line.').enablePositionalOptions();

program
  .command('query')
  .description('Run one statement on a .fenec file or a server and print its answer as JSON.')
  .argument('<statement>', 'the FenecQL statement, e.g. "get notes where id = $1"')
  .option('--file <path>', 'run it on this .fenec file (takes its lock while it runs, unless --read-only)')
  .option(
    '--url <url>',
    'run it on a server: its base URL (http://127.0.0.1:8080) or its /query URL; ' +
      'the token from --token or $FENEC_TOKEN',
  )
  .option('--params <json>', 'a JSON array of the values bound to $1, $2, …', '[]')
  .option('--read-only', 'with --file: open it read-only (no lock, beside a server) and refuse writes')
  .option('--token <token>', 'with --url: the bearer token (default: $FENEC_TOKEN)')
  .action(async (statement: string, options: QueryOptions) => {
    const params = parseParams(options.params);
    if ((options.file === undefined) === (options.url === undefined)) {
      usageError(NAME, 'query takes one of --file <path> or --url <url>');
    }
    if (options.url !== undefined) {
      if (options.readOnly) usageError(NAME, "--read-only is for --file; a server's writes are its own to refuse");
      const token = tokenOf(options.token);
      await printOutcome(() => queryServer(queryUrl(options.url!), statement, params, token));
    } else {
      if (options.token !== undefined) usageError(NAME, '--token is for --url; a file takes no token');
      await printOutcome(async () => queryFile(options.file!, statement, params, options.readOnly === true));
    }
  });

function parseParams(text: string): unknown[] {
  let params: unknown;
  try {
    params = JSON.parse(text);
  } catch {
    params = undefined;
  }
  if (!Array.isArray(params)) usageError(NAME, `--params takes a JSON array such as '[7, "ops"]', not ${text}`);
  return params;
}

async function queryFile(file: string, statement: string, params: unknown[], readOnly: boolean): Promise<Outcome> {
  const db = FenecDatabase.open({ file, readOnly, program: 'fenec query', sweepIntervalMs: 0 });
  // A signal or fault while the statement runs must still release the file's lock.
  onExit(() => db.close());
  const body = db.execute(statement, params, { readOnly });
  // A vector index built or rebuilt in the background (a bulk insert, compact) is stored before the
  // process ends, rather than built again from the rows at the next open.
  await db.idle();
  return { ok: true, body };
}

function queryServer(url: URL, statement: string, params: unknown[], token: string | undefined): Promise<Outcome> {
  return postQuery(url, JSON.stringify({ statement, params }), token);
}

async function printOutcome(run: () => Promise<Outcome>): Promise<void> {
  let outcome: Outcome;
  try {
    outcome = await run();
  } catch (err) {
    outcome = { ok: false, body: localError(err).toJSON() };
  }
  if (!outcome.ok) {
    process.stderr.write(`${JSON.stringify(outcome.body)}\n`);
    process.exitCode = 1;
    return;
  }
  // Indented for a person at a terminal; one line for a pipe or a script.
  process.stdout.write(`${JSON.stringify(outcome.body, null, process.stdout.isTTY ? 2 : undefined)}\n`);
}

addTokenCommand(program);
addImportCommand(program);
addMcpCommand(program);
addTenantCommand(program);

await parseCommandLine(program, process.argv);
