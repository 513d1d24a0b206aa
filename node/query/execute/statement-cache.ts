/**
 * SQLite's prepared statements, kept by SQL text: a plan's SQL is prepared once and run many times.
 */
import type { Connection, Statement } from '../../storage/sqlite.js';

/** Prepared statements by SQL text, dropped whenever the schema changes. */
export class StatementCache {
  readonly #db: Connection;
  #statements = new Map<string, Statement>();

  constructor(db: Connection) {
    this.#db = db;
  }

  get(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  clear(): void {
    this.#statements = new Map();
  }
}
