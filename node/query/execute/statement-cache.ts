/**
 * SQLite's prepared statements, kept by SQL text: a plan's SQL is prepared once and run many times.
 */
import { LRUCache } from 'lru-cache';
import type { Connection, Statement } from '../../storage/sqlite.js';

/**
 * The most kept: the plans of the database's parsed statements (PREPARED_LIMIT, 2 000) each use a few. Without a
 * bound, every statement of another shape — a fuzzer's, or an agent writing each filter anew — kept its SQLite
 * statement for as long as the schema stayed the same.
 */
export const STATEMENTS_LIMIT = 4096;

/** Prepared statements by SQL text, the least recently used dropped past the limit, all whenever the schema changes. */
export class StatementCache {
  readonly #db: Connection;
  readonly #statements = new LRUCache<string, Statement>({ max: STATEMENTS_LIMIT });

  constructor(db: Connection) {
    this.#db = db;
  }

  get size(): number {
    return this.#statements.size;
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
    this.#statements.clear();
  }
}
