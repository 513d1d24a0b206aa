/**
 * A request's time limit inside SQLite: fenec_deadline (native/fts5/src/deadline.c) interrupts the
 * connection's statements once it has passed, and SQLite rolls back what they had begun. The worker
 * no longer has to be terminated to stop a statement (node/workers/worker-pool.ts keeps that for work
 * that overruns outside SQLite), so a tenant's slow statement costs its neighbours on the same worker
 * nothing: their files, caches and indexes stay open.
 */
import { FenecError } from '../../shared/errors.js';
import type { Connection, Statement } from './sqlite.js';

/** The refusal of a statement stopped at its time limit, by SQLite or by the watchdog. */
export function statementTimeout(limitMs: number): FenecError {
  return new FenecError(
    'statement_timeout',
    `the statement ran past its time limit of ${limitMs} ms and was stopped; it changed nothing`,
    {
      hint:
        'make it cheaper — a filter on an indexed field, a limit, fewer rows at a time (where id > $1 order id limit N) — ' +
        "or raise the limit (--statement-timeout, a tenant's statementTimeoutMs quota)",
    },
  );
}

/** What to do about a lock another program holds on a served file, whichever refusal it caused. */
export const LOCK_HINT =
  'retry; if it lasts, find the program that holds the .fenec file (fuser FILE): only fenecdb should write a file it serves';

export class Deadline {
  readonly #arm: Statement;
  /**
   * Whether the connection's deadline is armed (hold, until release); when it falls (epoch ms) and the limit it stands
   * for.
   */
  #armed = false;
  #at = 0;
  #limitMs = 0;

  constructor(db: Connection) {
    this.#arm = db.prepare('SELECT fenec_deadline(?)').pluck();
  }

  /** Runs `work` with the connection's statements stopped at `at` (epoch ms), `limitMs` after the request began. */
  hold<T>(at: number, limitMs: number, work: () => T): T {
    const ms = at - Date.now();
    if (ms <= 0) throw statementTimeout(limitMs);
    this.#at = at;
    this.#limitMs = limitMs;
    this.#arm.get(ms);
    this.#armed = true;
    try {
      return work();
    } finally {
      this.release();
    }
  }

  /**
   * Lets the rest of the request run unstopped by SQLite, once one of its writes has committed: what
   * follows a commit (the vector indexes taking its rows) must run whole, and a request stopped after
   * it could not say that it changed nothing. The watchdog still bounds it.
   */
  release(): void {
    if (!this.#armed) return;
    this.#armed = false;
    this.#arm.get(0);
  }

  /**
   * Whether `err` is SQLite stopping a statement at the deadline: interrupted, or a wait for another
   * program's lock given up because of the interrupt (deadline.c's busy handler).
   */
  stopped(err: unknown): boolean {
    const code = (err as { code?: unknown } | null)?.code;
    return code === 'SQLITE_INTERRUPT' || (code === 'SQLITE_BUSY' && this.#armed && Date.now() >= this.#at);
  }

  /** SQLite's interruption as the refusal it is; any other error as it is. */
  refusal(err: unknown): unknown {
    if (!this.stopped(err)) return err;
    if ((err as { code?: unknown }).code !== 'SQLITE_BUSY') return statementTimeout(this.#limitMs);
    return new FenecError(
      'statement_timeout',
      `the statement waited past its time limit of ${this.#limitMs} ms for a lock that another program holds on the file, and was stopped; it changed nothing`,
      {
        hint: LOCK_HINT,
      },
    );
  }
}
