/**
 * SQLite's errors as FenecQL's refusals: what a constraint or a full file means to the statement.
 */
import { FenecError } from '../../../shared/errors.js';
import { LOCK_HINT } from '../../storage/deadline.js';

/**
 * A refusal by one of a table's constraints (unique, not null, …): SQLite has undone the failing
 * statement alone, and the transaction around it goes on.
 */
export function isConstraintError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT');
}

/**
 * SQLite's constraint failures (`UNIQUE constraint failed: c_notes.title`), a full file and a lock held elsewhere, as
 * the refusals they are.
 */
export function fromSqliteError(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : '';
  // The column after the table's name, the last part of the name (a vector's table is `c_notes.F`).
  const field = /failed: \S*\.([^.\s]+)/.exec(message)?.[1];
  if (code === 'SQLITE_CONSTRAINT_UNIQUE') {
    return new FenecError(
      'unique_violation',
      `another row has this ${field ?? 'value'}; ${field ?? 'the field'} is unique`,
      { cause: err },
    );
  }
  if (code === 'SQLITE_FULL') {
    return new FenecError('storage_full', "the tenant's file is at its byte quota; the write changed nothing", {
      cause: err,
      hint: "delete rows, compact, or raise the tenant's maxBytes quota (PUT /t/<tenant>)",
    });
  }
  if (code === 'SQLITE_BUSY') {
    return new FenecError(
      'file_busy',
      'the file is locked by another program, which holds a write on it; the statement waited as long as a write waits (--busy-timeout, 5 s by default) and changed nothing',
      {
        cause: err,
        hint: LOCK_HINT,
      },
    );
  }
  if (code === 'SQLITE_CONSTRAINT_DATATYPE') {
    // A STRICT table's column refused a value of another storage class: the statement's types let it through
    // (a value computed from numbers of both kinds), the column did not.
    const [, stored, column] = /cannot store (\w+) value in \w+ column \S*\.([^.\s]+)$/.exec(message) ?? [];
    const kind = { INTEGER: 'an int', REAL: 'a float', TEXT: 'a text', BLOB: 'bytes' }[stored ?? ''] ?? 'a value';
    return new FenecError('type_mismatch', `field ${column ?? '?'} cannot hold ${kind}, as computed for it`, {
      cause: err,
      hint: 'a value computed from an int and a float (coalesce(1.5, 2)) is a float: give the field a value of its type',
    });
  }
  if (code === 'SQLITE_CONSTRAINT_NOTNULL') {
    return new FenecError('missing_required', `field ${field ?? '?'} is required; the value computed for it is null`, {
      cause: err,
    });
  }
  return err;
}
