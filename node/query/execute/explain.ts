/**
 * `explain STATEMENT`: what a statement would run, without running it — its plan as the data it is
 * (plan-types.ts), each SQL step with its arguments as `explain` names them ($1, $jwt.sub, now(), a
 * literal) and the way SQLite would run it (EXPLAIN QUERY PLAN). Statements about collections, which
 * have no plan, tell what they change.
 */
import type { Answer } from '../../../shared/answer.js';
import { STATEMENT_KINDS } from '../../../shared/fenecql/kinds.js';
import type { Statement } from '../../../shared/fenecql/ast.js';
import type { Connection } from '../../storage/sqlite.js';
import { describeArg } from '../compile/args.js';
import type { Plan, SqlStep } from '../plan/plan-types.js';

export interface ExplainedStep {
  readonly step: string;
  readonly sql: string;
  readonly args: readonly unknown[];
  /** SQLite's plan of the step (EXPLAIN QUERY PLAN's details), [] for a statement that reads no table. */
  readonly sqlite: readonly string[];
}

/** SQLite's plan of one SQL text, its arguments bound as nulls (the plan does not depend on them: limits are `+?`). */
function sqlitePlan(db: Connection, sql: string, given: number): string[] {
  let prepared;
  try {
    prepared = db.prepare(`EXPLAIN QUERY PLAN ${sql}`);
  } catch {
    // A temporary table a bulk write makes when it runs: nothing to plan before it exists.
    return [];
  }
  // A step's arguments, and the ids some take at run time (a policy's check, a set by ids): at most two more.
  for (let count = given; count <= given + 2; count++) {
    try {
      const rows = prepared.all(new Array(count).fill(null)) as { detail: string }[];
      return rows.map((row) => row.detail);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
    }
  }
  return [];
}

function explainStep(db: Connection, step: string, sql: SqlStep): ExplainedStep {
  return { step, sql: sql.sql, args: sql.args.map(describeArg), sqlite: sqlitePlan(db, sql.sql, sql.args.length) };
}

function sqlOnly(db: Connection, step: string, sql: string, args: readonly unknown[] = []): ExplainedStep {
  return { step, sql, args, sqlite: sqlitePlan(db, sql, args.length) };
}

/** The steps of a row statement's plan, in the order they run. */
function steps(plan: Plan, db: Connection): ExplainedStep[] {
  const check = 'check' in plan && plan.check !== undefined ? [explainStep(db, 'policy check', plan.check.step)] : [];
  switch (plan.kind) {
    case 'read':
    case 'count': {
      const scoped =
        plan.kind === 'read' && plan.scoped !== undefined
          ? [
              sqlOnly(db, 'policy rows counted', plan.scoped.size, plan.scoped.args.map(describeArg)),
              sqlOnly(db, 'policy rows counted for each word', plan.scoped.hits, [
                ...plan.scoped.args.map(describeArg),
                describeArg(plan.scoped.words),
              ]),
            ]
          : [];
      return [...scoped, explainStep(db, plan.kind, plan.step)];
    }
    case 'insert':
      return [
        ...plan.rows.flatMap((row, i) => [
          explainStep(db, `row ${i + 1}`, row.step),
          ...row.apart.map((step) => explainStep(db, `row ${i + 1}: a vector kept apart`, step)),
        ]),
        ...check,
      ];
    case 'put':
      return [
        ...check,
        explainStep(db, 'put', plan.step),
        ...plan.apart.map((step) => explainStep(db, 'a vector kept apart', step)),
        ...check,
      ];
    case 'change':
      return [
        explainStep(db, plan.byIds === undefined ? 'change' : 'rows chosen', plan.step),
        ...(plan.byIds ?? []).map((step) => explainStep(db, 'change of the rows chosen', step)),
        ...check,
        ...(plan.growth === undefined ? [] : [explainStep(db, 'growth, asked at a byte quota', plan.growth)]),
      ];
    case 'bulk': {
      const rows = `the rows of ${plan.param}`;
      const each = plan.sql === undefined ? [] : [sqlOnly(db, `each of ${rows}`, plan.sql)];
      const staged =
        plan.staged === undefined
          ? []
          : [
              sqlOnly(db, `${rows}, staged`, plan.staged.stage),
              sqlOnly(db, `${rows}, written`, plan.staged.write),
              ...plan.staged.apart.map((sql) => sqlOnly(db, `${rows}: a vector kept apart`, sql)),
            ];
      return [...check, ...each, ...staged, ...check];
    }
    case 'vector':
      return [
        ...(plan.passing === undefined ? [] : [explainStep(db, 'rows passing the filter', plan.passing)]),
        ...(plan.indexed ? [] : [explainStep(db, 'exact scan', plan.scan)]),
        ...(plan.text === undefined
          ? []
          : [
              sqlOnly(db, 'text ranking', plan.text.sql, [
                ...plan.text.filterArgs.map(describeArg),
                describeArg(plan.text.query),
              ]),
            ]),
        sqlOnly(db, 'rows read', plan.read),
      ];
  }
}

/** What `explain` answers, under `plan`. */
export interface ExplainedPlan {
  readonly statement: string;
  readonly kind: string;
  readonly steps: readonly ExplainedStep[];
}

/** A row statement's plan as `explain` answers it. */
export function explainPlan(statement: string, plan: Plan, db: Connection): Answer {
  const ranking =
    plan.kind === 'vector'
      ? {
          ranking: plan.indexed
            ? `the @hnsw index of ${plan.field} (${plan.metric})`
            : `an exact scan (${plan.metric})`,
        }
      : {};
  return { plan: { statement, kind: plan.kind, ...ranking, steps: steps(plan, db) } };
}

/** A statement about collections (or the file) as `explain` answers it: what it would change. */
export function explainOther(statement: string, stmt: Statement): Answer {
  const { family, writes } = STATEMENT_KINDS[stmt.kind];
  return { plan: { statement, kind: family, writes, steps: [] } };
}
