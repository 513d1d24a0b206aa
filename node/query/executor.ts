/**
 * Runs plans against SQLite: binds each argument for this execution, runs the prepared statement,
 * and shapes the answer as fenecql.md writes it.
 */
import { FenecError } from '../../shared/errors.js';
import type { Connection, Statement } from '../storage/sqlite.js';
import type { SqlValue } from '../storage/codec.js';
import type { Plan, SqlStep } from './plan.js';
import type { VectorStore } from '../vector/store.js';
import { runVector } from './run-vector.js';
import type { BindContext } from './values.js';

export type Answer = { readonly [key: string]: unknown };

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

function bind(step: SqlStep, ctx: BindContext): SqlValue[] {
  const values = new Array<SqlValue>(step.args.length);
  for (let i = 0; i < step.args.length; i++) values[i] = step.args[i]!(ctx);
  return values;
}

/** SQLite's constraint failures, as the refusals they are: `UNIQUE constraint failed: c_notes.title`. */
export function fromSqliteError(err: unknown): unknown {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : '';
  const field = /failed: [^.]+\.(\S+)/.exec(message)?.[1];
  if (code === 'SQLITE_CONSTRAINT_UNIQUE') {
    return new FenecError('unique_violation', `another row has this ${field ?? 'value'}; ${field ?? 'the field'} is unique`, { cause: err });
  }
  if (code === 'SQLITE_CONSTRAINT_NOTNULL') {
    return new FenecError('missing_required', `field ${field ?? '?'} is required; the value computed for it is null`, { cause: err });
  }
  return err;
}

export function run(plan: Plan, ctx: BindContext, cache: StatementCache, db: Connection, vectors: VectorStore | undefined): Answer {
  switch (plan.kind) {
    case 'vector':
      return runVector(plan, ctx, { statements: cache, vectors });
    case 'read': {
      if (plan.guard !== undefined && !plan.guard(ctx)) return { rows: [], count: 0 };
      const raw = cache.get(plan.step.sql).raw(true).all(bind(plan.step, ctx)) as unknown[][];
      const columns = plan.columns;
      const rows = new Array<Record<string, unknown>>(raw.length);
      for (let r = 0; r < raw.length; r++) {
        const values = raw[r]!;
        const row: Record<string, unknown> = {};
        for (let c = 0; c < columns.length; c++) {
          const column = columns[c]!;
          const value = values[c];
          row[column.key] = column.decode === null ? value : column.decode(value);
        }
        rows[r] = row;
      }
      return { rows, count: rows.length };
    }
    case 'count':
      if (plan.guard !== undefined && !plan.guard(ctx)) return { count: 0 };
      return { count: cache.get(plan.step.sql).pluck(true).get(bind(plan.step, ctx)) as number };
    case 'change':
      return { count: cache.get(plan.step.sql).run(bind(plan.step, ctx)).changes };
    case 'put': {
      const args = bind(plan.step, ctx);
      cache.get(plan.step.sql).run(args);
      return { count: 1, ids: [args[0]] };
    }
    case 'insert': {
      // All or nothing: one transaction for every row of the statement.
      const insertAll = db.transaction(() =>
        plan.rows.map((step) => Number(cache.get(step.sql).run(bind(step, ctx)).lastInsertRowid)),
      );
      const ids = insertAll();
      return { count: ids.length, ids };
    }
  }
}
