/**
 * Runs plans against SQLite: binds each argument for this execution, runs the prepared statement,
 * and shapes the answer as fenecql.md writes it.
 */
import type { Answer } from '../../../shared/answer.js';
import { FenecError } from '../../../shared/errors.js';
import type { Connection } from '../../storage/sqlite.js';
import type { SqlValue } from '../../storage/codec.js';
import type { BulkPlan, Plan, PolicyCheck, SqlStep, StagedSql } from '../plan/plan-types.js';
import type { VectorStore } from '../../vector/store.js';
import { fetched, readSerialized } from './answer-text.js';
import { runVector } from './run-vector.js';
import { fromSqliteError, isConstraintError } from './sqlite-errors.js';
import type { StatementCache } from './statement-cache.js';
import { withScopedRank } from './scoped-rank.js';
import type { BindContext } from '../compile/evaluate.js';
import { bindArg, bindArgs } from '../compile/args.js';
import { bulkRows } from './bulk-rows.js';

function bind(step: SqlStep, ctx: BindContext): SqlValue[] {
  return bindArgs(step.args, ctx);
}

/** A step that answers one number (a count, a sum), run with this execution's arguments. */
export function measure(step: SqlStep, ctx: BindContext, cache: StatementCache): number {
  return cache.get(step.sql).pluck(true).get(bind(step, ctx)) as number;
}

/** Refuses (and so rolls back) a write whose rows the token's policy condition does not hold for. */
function verify(check: PolicyCheck, ids: readonly number[], ctx: BindContext, cache: StatementCache): void {
  if (ids.length === 0) return;
  const outside = cache
    .get(check.step.sql)
    .pluck(true)
    .get([JSON.stringify(ids), ...bind(check.step, ctx)]) as number;
  if (outside > 0) {
    throw new FenecError(
      'forbidden',
      `the token's policy holds its rows to ${check.condition}; this write would leave ${outside === 1 ? 'a row' : `${outside} rows`} outside it`,
      {
        hint: 'write only rows that meet the condition; a field it pins to a claim is filled when left out',
      },
    );
  }
}

/**
 * A bulk write, all or nothing: every row in one transaction, a refused row refused with its place
 * (`$1[2]`, and `row` in the error's JSON) so that a loader can name the line it came from.
 */
function runBulk(plan: BulkPlan, ctx: BindContext, cache: StatementCache, db: Connection): Answer {
  const { rows, bind } = bulkRows(plan, ctx);
  return db.transaction(() => {
    if (plan.check !== undefined && plan.verb === 'put') {
      // The rows the ids name, where they exist, must be the token's to replace.
      verify(
        plan.check,
        rows.map((row, i) => idOf(bind, row, i, plan)),
        ctx,
        cache,
      );
    }
    const ids =
      plan.staged !== undefined && (rows.length > 1 || plan.sql === undefined)
        ? writeStaged(plan, plan.staged, rows, bind, cache, db)
        : writeEach(plan, rows, bind, cache);
    if (plan.check !== undefined) verify(plan.check, ids, ctx, cache);
    return { count: ids.length, ids };
  })();
}

type BindRow = (row: unknown) => SqlValue[];

/**
 * Each row by its own statement (or, where a row is more than one, staged alone); a refusal names its
 * row. The ids in the rows' order.
 */
function writeEach(plan: BulkPlan, rows: readonly unknown[], bind: BindRow, cache: StatementCache): number[] {
  const ids = new Array<number>(rows.length);
  if (plan.sql === undefined) {
    cache.get(plan.staged!.create).run();
    for (let i = 0; i < rows.length; i++) {
      const args = bindAt(bind, rows[i], plan, i);
      try {
        ids[i] = writeRows(plan, plan.staged!, [args], cache, i)[0]!;
      } catch (err) {
        throw err instanceof FenecError ? err : atRow(fromSqliteError(err), plan, i);
      } finally {
        cache.get(plan.staged!.clear).run();
      }
    }
    return ids;
  }
  const statement = cache.get(plan.sql);
  for (let i = 0; i < rows.length; i++) {
    const args = bindAt(bind, rows[i], plan, i);
    try {
      const result = statement.run(args);
      ids[i] = plan.verb === 'put' ? (args[0] as number) : Number(result.lastInsertRowid);
    } catch (err) {
      throw atRow(fromSqliteError(err), plan, i);
    }
  }
  return ids;
}

function bindAt(bind: BindRow, row: unknown, plan: BulkPlan, i: number): SqlValue[] {
  try {
    return bind(row);
  } catch (err) {
    throw atRow(fromSqliteError(err), plan, i);
  }
}

/**
 * Stages rows already bound (the first of them the parameter's row `first`) and writes them into the
 * collection and the vectors' tables; answers their ids in the rows' order. A row refused as it is
 * staged is named; the writes' errors are SQLite's as they are. The caller has made the stage (not
 * inside a savepoint that may roll back) and clears it.
 */
function writeRows(
  plan: BulkPlan,
  staged: StagedSql,
  rows: readonly SqlValue[][],
  cache: StatementCache,
  first = 0,
): number[] {
  const stage = cache.get(staged.stage);
  for (let i = 0; i < rows.length; i++) {
    try {
      stage.run(rows[i]);
    } catch (err) {
      throw atRow(fromSqliteError(err), plan, first + i);
    }
  }
  if (plan.verb === 'put') {
    cache.get(staged.write).run();
    for (const sql of staged.apart) cache.get(sql).run();
    return rows.map((args) => args[0] as number);
  }
  const ids = (cache.get(staged.write).pluck(true).all() as number[]).sort((a, b) => a - b);
  if (staged.apart.length > 0) {
    const json = JSON.stringify(ids);
    for (const sql of staged.apart) cache.get(sql).run(json);
  }
  return ids;
}

/**
 * The rows into the temporary table, then into the collection by one statement (plan/bulk.ts, why).
 * A row the collection refuses (a unique value taken) fails that statement, which SQLite undoes alone:
 * the rows are then written one by one, so that the refusal names the row as it always has.
 */
function writeStaged(
  plan: BulkPlan,
  staged: StagedSql,
  rows: readonly unknown[],
  bind: BindRow,
  cache: StatementCache,
  db: Connection,
): number[] {
  const bound = rows.map((row, i) => bindAt(bind, row, plan, i));
  cache.get(staged.create).run();
  try {
    // A savepoint: a refusal by a vector's table comes after the rows were written, and undoes them too.
    return db.transaction(() => writeRows(plan, staged, bound, cache))();
  } catch (err) {
    if (!isConstraintError(err)) throw fromSqliteError(err);
  } finally {
    cache.get(staged.clear).run();
  }
  return writeEach(plan, rows, bind, cache);
}

function idOf(bind: (row: unknown) => SqlValue[], row: unknown, i: number, plan: BulkPlan): number {
  try {
    return bind(row)[0] as number;
  } catch (err) {
    throw atRow(err, plan, i);
  }
}

/** A row's refusal with its place in the parameter; anything else is passed on as it is. */
function atRow(err: unknown, plan: BulkPlan, index: number): unknown {
  if (!(err instanceof FenecError)) return err;
  return new FenecError(err.code, `${plan.param}[${index}]: ${err.message}`, {
    hint: err.hint,
    cause: err,
    row: index,
  });
}

/** Runs a plan; with `maxAnswerBytes`, a read's rows are serialized as they are read, and refused past it. */
export function run(
  plan: Plan,
  ctx: BindContext,
  cache: StatementCache,
  db: Connection,
  vectors: VectorStore | undefined,
  maxAnswerBytes?: number,
): Answer {
  switch (plan.kind) {
    case 'vector':
      return runVector(plan, ctx, { statements: cache, vectors });
    case 'read': {
      if (plan.guard !== undefined && bindArg(plan.guard, ctx) === null) return { rows: [], count: 0 };
      const args = bind(plan.step, withScopedRank(plan.scoped, ctx, cache));
      const statement = cache.get(plan.step.sql).raw(true);
      if (maxAnswerBytes !== undefined) return readSerialized(statement, args, plan.columns, maxAnswerBytes, plan.one);
      const raw = plan.one ? fetched(statement, args) : (statement.all(args) as unknown[][]);
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
      if (plan.guard !== undefined && bindArg(plan.guard, ctx) === null) return { count: 0 };
      return { count: measure(plan.step, ctx, cache) };
    case 'change': {
      const { check, byIds } = plan;
      if (byIds !== undefined) {
        return db.transaction(() => {
          const ids = cache.get(plan.step.sql).pluck(true).all(bind(plan.step, ctx)) as number[];
          if (ids.length === 0) return { count: 0 };
          const json = JSON.stringify(ids);
          for (const step of byIds) cache.get(step.sql).run([...bind(step, ctx), json]);
          if (check !== undefined) verify(check, ids, ctx, cache);
          return { count: ids.length };
        })();
      }
      if (check === undefined) return { count: cache.get(plan.step.sql).run(bind(plan.step, ctx)).changes };
      return db.transaction(() => {
        const ids = cache.get(plan.step.sql).pluck(true).all(bind(plan.step, ctx)) as number[];
        verify(check, ids, ctx, cache);
        return { count: ids.length };
      })();
    }
    case 'put': {
      const { check } = plan;
      const args = bind(plan.step, ctx);
      const id = args[0] as number;
      const write = (): void => {
        cache.get(plan.step.sql).run(args);
        for (const step of plan.apart) cache.get(step.sql).run(bind(step, ctx));
      };
      if (check === undefined) {
        if (plan.apart.length === 0) write();
        else db.transaction(write)();
        return { count: 1, ids: [id] };
      }
      return db.transaction(() => {
        // The row the id names, if there is one, must be the token's to replace; the new row too.
        verify(check, [id], ctx, cache);
        write();
        verify(check, [id], ctx, cache);
        return { count: 1, ids: [id] };
      })();
    }
    case 'bulk':
      return runBulk(plan, ctx, cache, db);
    case 'insert': {
      // All or nothing: one transaction for every row of the statement.
      return db.transaction(() => {
        const ids = plan.rows.map((row) => {
          const id = Number(cache.get(row.step.sql).run(bind(row.step, ctx)).lastInsertRowid);
          for (const step of row.apart) cache.get(step.sql).run(bind(step, ctx));
          return id;
        });
        if (plan.check !== undefined) verify(plan.check, ids, ctx, cache);
        return { count: ids.length, ids };
      })();
    }
  }
}
