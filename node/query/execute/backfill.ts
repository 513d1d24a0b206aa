/**
 * The backfills of `alter collection C embed F`, as the file keeps them: one row each in `_fenec_backfills`, with its
 * cursor (the last id it has looked at) and the rows it has embedded. A batch's vectors and the cursor past them are
 * written in one transaction, so that after a crash (kill -9 included) the backfill goes on from the first row whose
 * vector was not committed, and a row whose vector was committed is never embedded again.
 */
import type { AlterEmbedStmt, SetStmt, Statement } from '../../../shared/fenecql/ast.js';
import type { Answer } from '../../../shared/answer.js';
import { FenecError } from '../../../shared/errors.js';
import { checkOrigin } from '../../embedder/embedder.js';
import { missing, type EmbeddingRound } from '../../embedder/round.js';
import { embedOf, type Catalog, type Collection, type EmbedSpec, type Field } from '../../schema/catalog.js';
import type { Connection } from '../../storage/sqlite.js';
import { embeddedText, vectorSet } from './embed-rows.js';

const TABLE = '_fenec_backfills';

export interface Backfill {
  readonly collection: string;
  readonly field: string;
  /** The last id looked at: every row up to it has its vector, or no text to embed. */
  readonly after: number;
  /** Rows embedded so far. */
  readonly done: number;
}

/** The rows of a batch: their ids and texts, and the last id looked at (rows without a text are passed over). */
export interface BackfillBatch {
  readonly rows: readonly { readonly id: number; readonly text: string }[];
  readonly upTo: number;
}

function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function hasTable(db: Connection): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(TABLE) !== undefined;
}

/** Every backfill not finished yet (none in a file that never had one). */
export function listBackfills(db: Connection): Backfill[] {
  if (!hasTable(db)) return [];
  return db
    .prepare(`SELECT collection, field, after, done FROM ${TABLE} ORDER BY collection, field`)
    .all() as Backfill[];
}

export function backfillOf(db: Connection, collection: string, field: string): Backfill | undefined {
  if (!hasTable(db)) return undefined;
  return db
    .prepare(`SELECT collection, field, after, done FROM ${TABLE} WHERE collection = ? AND field = ?`)
    .get(collection, field) as Backfill | undefined;
}

/** Records a backfill of the field; one under way already keeps its cursor. */
export function startBackfill(db: Connection, collection: string, field: string): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${TABLE} (collection TEXT NOT NULL, field TEXT NOT NULL, after INTEGER NOT NULL, done INTEGER NOT NULL, PRIMARY KEY (collection, field)) STRICT`,
  );
  db.prepare(`INSERT INTO ${TABLE} (collection, field, after, done) VALUES (?, ?, 0, 0) ON CONFLICT DO NOTHING`).run(
    collection,
    field,
  );
}

/** Forgets the backfills of a collection (dropped) or of one of its fields. */
export function dropBackfills(db: Connection, collection: string, field?: string): void {
  if (!hasTable(db)) return;
  if (field === undefined) db.prepare(`DELETE FROM ${TABLE} WHERE collection = ?`).run(collection);
  else db.prepare(`DELETE FROM ${TABLE} WHERE collection = ? AND field = ?`).run(collection, field);
}

/** The field a backfill fills, with what it embeds; refused when it is no vector made with @embed. */
export function embeddedField(collection: Collection, name: string, spec: (f: Field) => EmbedSpec | undefined) {
  const field = collection.byName.get(name);
  if (field === undefined)
    throw new FenecError('unknown_field', `${collection.name} has no field ${name}`, {
      hint: `schema ${collection.name} lists its fields`,
    });
  const embeds = spec(field);
  if (embeds === undefined)
    throw new FenecError('invalid_statement', `${collection.name}.${name} is not made with @embed: nothing embeds it`, {
      hint: `alter … embed fills a vector field made with @embed(text fields); give ${name}'s vectors yourself`,
    });
  return { field, spec: embeds };
}

/** The rows after `after` that have no vector in `field`, up to `limit` of them, in id order. */
function lacking(collection: Collection, field: Field, sources: readonly Field[]): string {
  const columns = sources.map((f) => `${f.column} AS ${quoted(f.name)}`).join(', ');
  return `SELECT "id"${columns === '' ? '' : `, ${columns}`} FROM ${collection.table} WHERE "id" > ? AND NOT EXISTS (SELECT 1 FROM ${field.apart!} WHERE ${field.apart!}."id" = ${collection.table}."id") ORDER BY "id" LIMIT ?`;
}

/** The next rows to embed after `after`, or undefined when no row after it lacks its vector. */
export function nextBatch(
  db: Connection,
  collection: Collection,
  field: Field,
  spec: EmbedSpec,
  after: number,
  limit: number,
): BackfillBatch | undefined {
  const sources = spec.sources.map((name) => collection.byName.get(name)).filter((f): f is Field => f !== undefined);
  const found = db.prepare(lacking(collection, field, sources)).all(after, limit) as Record<string, unknown>[];
  if (found.length === 0) return undefined;
  const rows: { id: number; text: string }[] = [];
  for (const row of found) {
    const text = embeddedText(spec, (name) => row[name]);
    if (text !== undefined) rows.push({ id: row.id as number, text });
  }
  return { rows, upTo: found.at(-1)!.id as number };
}

/** Rows after the cursor still without their vector and with a text: what `schema` says is left. */
export function rowsLeft(db: Connection, collection: Collection, field: Field, spec: EmbedSpec, after: number): number {
  const sources = spec.sources.map((name) => collection.byName.get(name)).filter((f): f is Field => f !== undefined);
  let left = 0;
  for (const row of db.prepare(lacking(collection, field, sources)).iterate(after, -1) as Iterable<
    Record<string, unknown>
  >)
    if (embeddedText(spec, (name) => row[name]) !== undefined) left += 1;
  return left;
}

/** Moves the cursor past a batch committed (in the transaction that wrote its vectors). */
export function advanceBackfill(
  db: Connection,
  collection: string,
  field: string,
  upTo: number,
  embedded: number,
): void {
  db.prepare(`UPDATE ${TABLE} SET after = ?, done = done + ? WHERE collection = ? AND field = ?`).run(
    upTo,
    embedded,
    collection,
    field,
  );
}

/** Whether the row still lacks its vector (a write since the batch was read may have given it one). */
export function stillLacking(db: Connection, field: Field, id: number): boolean {
  return db.prepare(`SELECT 1 FROM ${field.apart!} WHERE "id" = ?`).get(id) === undefined;
}

/** What the backfills need of the database that holds them. */
export interface BackfillDoors {
  /** Runs a `set` of one row's vector (its index told, as any write's). */
  readonly setVector: (change: SetStmt, params: unknown[]) => unknown;
  /** Runs a write within the byte quota's room for one that grows the file. */
  readonly grow: <T>(work: () => T) => T;
  /** The vector indexes take what was written. */
  readonly catchUp: () => void;
}

/** A file's backfills: recorded by `alter … embed`, read and written by the server's worker (workers/backfills.ts). */
export class Backfilling {
  /** Told when a statement records a backfill: the server's worker starts it. */
  onStart: (() => void) | undefined;

  constructor(
    private readonly db: Connection,
    private readonly catalog: Catalog,
    private readonly readOnly: boolean,
    private readonly doors: BackfillDoors,
  ) {}

  /** `alter collection C embed F`: records the backfill and answers how many rows it will embed. */
  start(statement: AlterEmbedStmt, round: EmbeddingRound | undefined): Answer {
    const collection = this.catalog.require(statement.collection);
    const { field, spec } = embeddedField(collection, statement.field, embedOf);
    const what = `alter … embed fills ${statement.collection}.${statement.field} by embedding its rows`;
    if (round === undefined) throw missing(what);
    checkOrigin(field.name, { model: spec.model, dimension: spec.dimension }, round.embedder(what));
    this.db.transaction(() => startBackfill(this.db, collection.name, field.name))();
    const left = rowsLeft(this.db, collection, field, spec, backfillOf(this.db, collection.name, field.name)!.after);
    this.onStart?.();
    return { altered: true, embedding: left };
  }

  /** What `schema` adds to a field's index state while a backfill of it is under way. */
  progress(collection: string, field: string): { embedding?: { done: number; left: number } } {
    const backfill = backfillOf(this.db, collection, field);
    const filled = backfill === undefined ? undefined : this.#filled(collection, field);
    if (backfill === undefined || filled === undefined) return {};
    return {
      embedding: {
        done: backfill.done,
        left: rowsLeft(this.db, filled.collection, filled.field, filled.spec, backfill.after),
      },
    };
  }

  /** The backfills not finished, with their cursors. */
  list(): Backfill[] {
    return this.readOnly || !this.db.open ? [] : listBackfills(this.db);
  }

  /** The next rows after `after` to embed, and what the field embeds; undefined when none is left (or no field). */
  batch(backfill: Backfill, after: number, limit: number): { batch: BackfillBatch; spec: EmbedSpec } | undefined {
    const filled = this.#filled(backfill.collection, backfill.field);
    const batch = filled && nextBatch(this.db, filled.collection, filled.field, filled.spec, after, limit);
    return batch === undefined ? undefined : { batch, spec: filled!.spec };
  }

  /** A batch's vectors and the cursor past it, in one transaction; a row given a vector since it was read keeps it. */
  write(backfill: Backfill, rows: readonly { id: number; vector: Float32Array }[], upTo: number): void {
    const filled = this.#filled(backfill.collection, backfill.field);
    if (filled === undefined) return;
    const change = vectorSet(backfill.collection, backfill.field);
    this.doors.grow(() =>
      this.db.transaction(() => {
        let written = 0;
        for (const { id, vector } of rows) {
          if (!stillLacking(this.db, filled.field, id)) continue;
          this.doors.setVector(change, [Array.from(vector), id]);
          written += 1;
        }
        advanceBackfill(this.db, backfill.collection, backfill.field, upTo, written);
      })(),
    );
    this.doors.catchUp();
  }

  /** The backfill found no row left: it is over. */
  done(backfill: Backfill): void {
    dropBackfills(this.db, backfill.collection, backfill.field);
  }

  /** Forgets the backfills of a collection dropped, or of a field dropped. */
  forget(statement: Statement): void {
    if (statement.kind === 'DropCollection') dropBackfills(this.db, statement.name);
    else if (statement.kind === 'AlterDrop') dropBackfills(this.db, statement.collection, statement.field);
  }

  #filled(collection: string, field: string): { collection: Collection; field: Field; spec: EmbedSpec } | undefined {
    const found = this.catalog.get(collection);
    const vector = found?.byName.get(field);
    const spec = vector === undefined ? undefined : embedOf(vector);
    return spec === undefined ? undefined : { collection: found!, field: vector!, spec };
  }
}
