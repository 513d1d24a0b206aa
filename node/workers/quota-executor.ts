/**
 * A tenant's database held to its collection and row quotas. Only statements that add a collection or rows (the
 * statement kinds' table says which: `create collection`, `insert`, `put`) are counted, from the tree the database
 * parsed and keeps for the execute that follows. Every quota refusal of a statement — these, and the database's own
 * `storage_full` at the byte quota — is told to `onRefusal` with its quota, whichever door (/query, an MCP tool) the
 * statement came through.
 *
 * The row count is kept as an upper bound: counted exactly at the first insert, raised by every insert's answer, never
 * lowered (a delete, an expiry or a put that replaces only make it higher than the truth), and counted exactly again
 * before a refusal, so that a refusal is always true.
 */
import { FenecError } from '../../shared/errors.js';
import type { Statement } from '../../shared/fenecql/ast.js';
import { kindOf } from '../../shared/fenecql/kinds.js';
import type { Answer, ExecuteOptions, FenecDatabase } from '../database.js';
import type { QuotaKind, TenantLimits } from './protocol.js';
import type { Executor } from './request-runner.js';

/**
 * How many rows a statement writes at most: those written out, or those its parameter holds; 0 for a kind that adds
 * none.
 */
function rowsWritten(statement: Statement, params: readonly unknown[] | undefined): number {
  const { adds } = kindOf(statement);
  if (adds === null || !('rows' in adds)) return 0;
  const rows = adds.rows(statement);
  if (!('kind' in rows)) return rows.length;
  if (rows.kind !== 'Param') return 1;
  // A bulk write: its parameter's array (a value that is not one is refused by the database, writing nothing).
  const value = params?.[rows.index - 1];
  return Array.isArray(value) ? value.length : 1;
}

/** The collection a statement creates, or undefined for a kind that creates none. */
function collectionCreated(statement: Statement): string | undefined {
  const { adds } = kindOf(statement);
  return adds !== null && 'collection' in adds ? adds.collection(statement) : undefined;
}

export class QuotaExecutor implements Executor {
  readonly #db: FenecDatabase;
  readonly #quotas: Pick<TenantLimits, 'maxCollections' | 'maxRows'>;
  readonly #onRefusal: (quota: QuotaKind) => void;
  #rows: number | undefined;

  constructor(
    db: FenecDatabase,
    quotas: Pick<TenantLimits, 'maxCollections' | 'maxRows'>,
    onRefusal: (quota: QuotaKind) => void = () => undefined,
  ) {
    this.#db = db;
    this.#quotas = quotas;
    this.#onRefusal = onRefusal;
  }

  execute(text: string, params?: readonly unknown[], options?: ExecuteOptions): Answer {
    if (this.#quotas.maxRows === 0 && this.#quotas.maxCollections === 0)
      return this.#counted(() => this.#db.execute(text, params, options));
    // The database's own parse, kept for the execute that follows: the text is parsed once (a parse error is thrown
    // here, as execute would).
    return this.#run(this.#db.statementOf(text), params, () => this.#db.execute(text, params, options));
  }

  statementOf(text: string): Statement {
    return this.#db.statementOf(text);
  }

  executeStatement(statement: Statement, params?: readonly unknown[], options?: ExecuteOptions): Answer {
    return this.#run(statement, params, () => this.#db.executeStatement(statement, params, options));
  }

  /** Runs a statement, telling a byte quota refusal (`storage_full`) to onRefusal. */
  #counted(run: () => Answer): Answer {
    try {
      return run();
    } catch (err) {
      if (err instanceof FenecError && err.code === 'storage_full') this.#onRefusal('bytes');
      throw err;
    }
  }

  #refuse(quota: QuotaKind, message: string, hint: string): never {
    this.#onRefusal(quota);
    throw new FenecError('quota_exceeded', message, { hint });
  }

  #run(statement: Statement, params: readonly unknown[] | undefined, run: () => Answer): Answer {
    const created = collectionCreated(statement);
    if (created !== undefined && this.#quotas.maxCollections > 0) {
      const collections = this.#collections().length;
      if (collections >= this.#quotas.maxCollections && !this.#collections().includes(created)) {
        this.#refuse(
          'collections',
          `the tenant has ${collections} collections, its quota`,
          "drop a collection, or raise the tenant's maxCollections (PUT /t/<tenant>)",
        );
      }
    }
    const adding = rowsWritten(statement, params);
    if (adding === 0 || this.#quotas.maxRows === 0) return this.#counted(run);
    this.#rows ??= this.#countRows();
    if (this.#rows + adding > this.#quotas.maxRows) {
      this.#rows = this.#countRows();
      if (this.#rows + adding > this.#quotas.maxRows) {
        this.#refuse(
          'rows',
          `the tenant holds ${this.#rows} rows; ${adding} more would pass its quota of ${this.#quotas.maxRows}`,
          "delete rows, or raise the tenant's maxRows (PUT /t/<tenant>)",
        );
      }
    }
    const answer = this.#counted(run);
    this.#rows +=
      typeof (answer as { count?: unknown }).count === 'number' ? (answer as { count: number }).count : adding;
    return answer;
  }

  #collections(): string[] {
    const answer = this.#db.execute('schema') as unknown as { collections: { name: string }[] };
    return answer.collections.map((collection) => collection.name);
  }

  #countRows(): number {
    let rows = 0;
    for (const name of this.#collections())
      rows += (this.#db.execute(`get ${name} count`) as unknown as { count: number }).count;
    return rows;
  }
}
