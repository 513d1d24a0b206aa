/**
 * One open `.fenec` file: the door every statement goes through, whatever brought it
 * (/query, MCP, `fenec query --file`, `fenec mcp --file`).
 */
import { FenecError } from '../shared/errors.js';

export interface DatabaseOptions {
  /** Path of the `.fenec` file; created when missing unless readOnly. */
  readonly file: string;
  /** Take no lock, write nothing, read the file as it stood when opened. */
  readonly readOnly: boolean;
  /** Named in the lock file, so that a refused second writer learns who holds it. */
  readonly program: string;
}

export interface ExecuteOptions {
  /** Refuse statements that write (the server's --http-read-only). */
  readonly readOnly?: boolean;
}

/** A statement's answer, ready for JSON.stringify. */
export type Answer = { readonly [key: string]: unknown };

export class FenecDatabase {
  static open(options: DatabaseOptions): FenecDatabase {
    throw new FenecError('not_supported_yet', `cannot open ${options.file} yet`);
  }

  execute(_statement: string, _params: readonly unknown[] = [], _options: ExecuteOptions = {}): Answer {
    throw new FenecError('not_supported_yet', 'not yet');
  }

  close(): void {}
}
