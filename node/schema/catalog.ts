/**
 * The catalogue of collections: their definitions (kept as FenecQL field trees in `_fenec_collections`)
 * and the tables and indexes that hold them.
 *
 * A collection `notes` is the STRICT table `c_notes` with `id INTEGER PRIMARY KEY AUTOINCREMENT`
 * (AUTOINCREMENT: an id is never handed out twice, even after a delete) and one column per field but
 * its vectors. `unique` is a unique index `u.notes.F`; `@hash` and `@sorted` are the B-tree index
 * `i.notes.F` (SQLite has no hash index: a B-tree serves `=`, `in`, ranges and `order` alike).
 *
 * A vector field `notes.V` is a table of its own, `c_notes.V` (`id`, `V`): a 384-dim vector is 1 536
 * bytes, and in the row it made the row table hold two rows a 4 KiB page where it holds thirty without;
 * every read that does not ask for the vector (a `match`, a filter's scan, `count`) read fifteen times
 * the pages. A row has a row in the vector's table once it has been written with a value for it (null
 * included); none reads as null. The trigger `c_notes.V.delete` deletes it with its row. Files written
 * before (definition without `vectors: "apart"`) are moved to this layout when first opened writable
 * (upgradeLayout); opened read-only, their vectors are read where they are (Field.apart undefined).
 */
import type { FieldDef, FieldType, TextTokenizer } from '../../shared/fenecql/ast.js';
import { FenecError } from '../../shared/errors.js';
import { printFieldType } from '../../shared/fenecql/print.js';
import { didYouMean } from '../../shared/nearest-name.js';
import { textIndexSql } from '../search/text-index.js';
import { DEFAULT_TOKENIZER, storedTokenizer, withTokenizers } from '../search/tokenizers.js';
import type { VectorFieldSpec } from '../vector/vector-field.js';
import { triggerNames, vectorFieldSql, vectorTable } from '../vector/vector-log.js';
import { columnType, decoderFor } from '../storage/codec.js';
import { ident, type Connection } from '../storage/sqlite.js';

export interface Field {
  readonly def: FieldDef;
  readonly name: string;
  readonly type: FieldType;
  /** The quoted column name: in the collection's table, or in `apart`. */
  readonly column: string;
  /** A vector field's own table (quoted), or undefined: the column is in the collection's table. */
  readonly apart: string | undefined;
  readonly decode: (stored: unknown) => unknown;
  readonly isVector: boolean;
}

export interface Collection {
  readonly name: string;
  /** The quoted table name. */
  readonly table: string;
  /** Fields in definition order, without the implicit id. */
  readonly fields: readonly Field[];
  readonly byName: ReadonlyMap<string, Field>;
  /** The `@text` fields, in the order of the text index's columns. */
  readonly textFields: readonly Field[];
  /** How the `@text` fields compare words (all share it; the default where there are none). */
  readonly textTokenizer: TextTokenizer;
  /** The fields whose values are in the collection's table (all but the vectors kept apart). */
  readonly rowFields: readonly Field[];
  /** The vector fields kept in tables of their own. */
  readonly apartFields: readonly Field[];
}

/**
 * How a collection's definition is stored: its fields, and whether its vectors are kept apart (all since that layout).
 */
interface StoredDefinition {
  readonly fields: readonly FieldDef[];
  readonly vectors?: 'apart';
}

/**
 * A field's value as SQL, in a statement over the collection's table under the name `table`: its
 * column, or for a vector kept apart, the value its table holds for the row (null without one).
 */
export function fieldSql(field: Field, table: string): string {
  return field.apart === undefined
    ? `${table}.${field.column}`
    : `(SELECT ${field.column} FROM ${field.apart} WHERE "id" = ${table}."id")`;
}

/** The implicit `id int` every collection has. */
export const ID_TYPE: FieldType = { kind: 'scalar', scalar: 'int' };

function tableName(collection: string): string {
  return ident(`c_${collection}`);
}

function indexName(prefix: 'u' | 'i', collection: string, field: string): string {
  // '.' cannot occur in a FenecQL name, so no two (collection, field) pairs share an index name.
  return ident(`${prefix}.${collection}.${field}`);
}

/** A tree without positions: what the catalogue stores, and what two definitions are compared by. */
function withoutPositions<T>(tree: T): T {
  return JSON.parse(JSON.stringify(tree, (key, value) => (key === 'pos' ? undefined : value))) as T;
}

function buildCollection(name: string, stored: readonly FieldDef[], vectorsApart = true): Collection {
  // A stored @text without a tokenizer was written before the choice: it is FTS5's porter.
  const defs = withTokenizers(name, stored, storedTokenizer(stored));
  const fields = defs.map((def): Field => ({
    def,
    name: def.name,
    type: def.type,
    column: ident(def.name),
    apart: vectorsApart && isApart(def) ? vectorTable(name, def.name) : undefined,
    decode: decoderFor(def.type),
    isVector: def.type.kind === 'vector',
  }));
  const textFields = fields.filter((f) => hasAnnotation(f.def, 'text'));
  return Object.freeze({
    name,
    table: tableName(name),
    fields,
    byName: new Map(fields.map((f) => [f.name, f])),
    textFields,
    textTokenizer: storedTokenizer(defs) ?? DEFAULT_TOKENIZER,
    rowFields: fields.filter((f) => f.apart === undefined),
    apartFields: fields.filter((f) => f.apart !== undefined),
  });
}

/** Whether the field's values are kept in a table of their own (every vector, since that layout). */
function isApart(def: FieldDef): boolean {
  return def.type.kind === 'vector';
}

/** The statements that make a vector field's table, and the trigger that deletes its value with the row. */
function apartCreate(collection: string, def: FieldDef): string[] {
  const table = vectorTable(collection, def.name);
  return [
    `CREATE TABLE ${table} ("id" INTEGER PRIMARY KEY, ${columnSql(def)}) STRICT`,
    `CREATE TRIGGER ${apartTrigger(collection, def.name)} AFTER DELETE ON ${tableName(collection)} BEGIN DELETE FROM ${table} WHERE "id" = old."id"; END`,
  ];
}

function apartTrigger(collection: string, field: string): string {
  return ident(`c_${collection}.${field}.delete`);
}

function hasAnnotation(def: FieldDef, kind: FieldDef['annotations'][number]['kind']): boolean {
  return def.annotations.some((a) => a.kind === kind);
}

/** One index kept by triggers beside a collection's table, as the statements that make and drop it. */
interface DerivedIndex {
  /** What it covers: a change that leaves the key as it was leaves the index be. */
  readonly key: string;
  readonly create: readonly string[];
  readonly drop: readonly string[];
}

/** The full-text index over the `@text` fields, and the change log of each `@hnsw` field. */
function derivedIndexes(collection: string, defs: readonly FieldDef[]): DerivedIndex[] {
  const indexes: DerivedIndex[] = [];
  const text = defs.filter((def) => hasAnnotation(def, 'text'));
  if (text.length > 0) {
    const sql = textIndexSql(collection, text, storedTokenizer(text) ?? DEFAULT_TOKENIZER);
    indexes.push({ key: `text:${text.map((def) => def.name).join(',')}`, create: sql.create, drop: sql.drop });
  }
  for (const def of defs.filter((d) => hasAnnotation(d, 'hnsw'))) {
    const sql = vectorFieldSql(collection, def.name, vectorTable(collection, def.name));
    indexes.push({ key: `vector:${def.name}`, create: sql.create, drop: sql.drop });
  }
  return indexes;
}

/** A column's definition; required fields are NOT NULL, so SQLite itself refuses a null that slipped past us. */
function columnSql(def: FieldDef, notNullDefault?: string): string {
  let sql = `${ident(def.name)} ${columnType(def.type)}`;
  if (def.required) sql += ` NOT NULL${notNullDefault === undefined ? '' : ` DEFAULT ${notNullDefault}`}`;
  return sql;
}

/** A constant of the column's type, for SQLite's rule that an added NOT NULL column names a default. */
function zeroOf(type: FieldType): string {
  switch (columnType(type)) {
    case 'TEXT':
      return "''";
    case 'INTEGER':
      return '0';
    case 'REAL':
      return '0.0';
    case 'BLOB':
      return "x''";
  }
}

function indexStatements(collection: string, def: FieldDef): string[] {
  const table = tableName(collection);
  const statements: string[] = [];
  if (def.unique) {
    statements.push(`CREATE UNIQUE INDEX ${indexName('u', collection, def.name)} ON ${table} (${ident(def.name)})`);
  } else if (def.annotations.some((a) => a.kind === 'hash' || a.kind === 'sorted' || a.kind === 'ttl')) {
    // @ttl too: reads filter on `field > now - D` and the sweeper deletes on `field <= now - D`.
    statements.push(`CREATE INDEX ${indexName('i', collection, def.name)} ON ${table} (${ident(def.name)})`);
  }
  return statements;
}

function checkField(collection: string, def: FieldDef): void {
  if (
    (def.unique || def.annotations.some((a) => a.kind === 'hash' || a.kind === 'sorted')) &&
    def.type.kind === 'array'
  ) {
    const what = def.unique ? 'unique' : '@hash or @sorted';
    throw new FenecError(
      'invalid_annotation',
      `${collection}.${def.name} is ${printFieldType(def.type)}; ${what} does not fit an array field (has scans the rows)`,
    );
  }
  if (def.unique && (def.type.kind === 'vector' || (def.type.kind === 'scalar' && def.type.scalar === 'json'))) {
    throw new FenecError(
      'invalid_annotation',
      `${collection}.${def.name} is ${printFieldType(def.type)}; unique fits scalar fields only`,
    );
  }
}

/** What a vector field made with `@embed` embeds, and with what model; undefined for any other field. */
export interface EmbedSpec {
  /** The text fields whose texts, joined, are embedded. */
  readonly sources: readonly string[];
  readonly model: string;
  readonly dimension: number;
}

export function embedOf(field: Field): EmbedSpec | undefined {
  const embed = field.def.annotations.find((a) => a.kind === 'embed');
  if (embed?.kind !== 'embed' || field.type.kind !== 'vector') return undefined;
  // The catalogue fills the model in as the field is made (database.ts): a stored field always has one.
  return { sources: embed.fields, model: embed.model ?? '', dimension: field.type.dims };
}

/** Each `@embed` names fields of the collection that are text; a field another embeds cannot go. */
function checkEmbeds(collection: string, defs: readonly FieldDef[]): void {
  for (const def of defs) {
    const embed = def.annotations.find((a) => a.kind === 'embed');
    if (embed?.kind !== 'embed') continue;
    for (const source of embed.fields) {
      const found = defs.find((d) => d.name === source);
      if (found === undefined)
        throw new FenecError(
          'unknown_field',
          `${collection}.${def.name} embeds ${source}, which ${collection} has not`,
          {
            hint: didYouMean(
              defs.filter((d) => d.type.kind === 'scalar' && d.type.scalar === 'text').map((d) => d.name),
              source,
              '@embed names text fields of the same collection',
            ),
          },
        );
      if (found.type.kind !== 'scalar' || found.type.scalar !== 'text')
        throw new FenecError(
          'invalid_annotation',
          `${collection}.${def.name} embeds ${source}, which is ${printFieldType(found.type)}; @embed takes text fields`,
        );
    }
  }
}

function clashes(names: Iterable<string>, name: string): string | undefined {
  const lower = name.toLowerCase();
  for (const existing of names) if (existing.toLowerCase() === lower) return existing;
  return undefined;
}

export class Catalog {
  readonly #db: Connection;
  readonly #collections = new Map<string, Collection>();
  /** Bumped by every schema change; plans made under an older version are made again. */
  #version = 0;

  constructor(db: Connection) {
    this.#db = db;
    this.reload();
  }

  /** Reads the catalogue again: after a schema change that failed and rolled back, the file is the truth. */
  reload(): void {
    this.#collections.clear();
    this.#version++;
    const rows = this.#db.prepare('SELECT name, definition FROM _fenec_collections ORDER BY created, name').all() as {
      name: string;
      definition: string;
    }[];
    for (const row of rows) {
      const { fields, vectors } = JSON.parse(row.definition) as StoredDefinition;
      this.#collections.set(row.name, buildCollection(row.name, fields, vectors === 'apart'));
    }
  }

  /**
   * Moves the vectors of collections written before they were kept apart (see the top of this file)
   * into their own tables: each vector field's table made and filled, its column dropped from the
   * row table (which SQLite rewrites), its index log's triggers moved. Ids, vectors, the log and the
   * stored index snapshots are unchanged. Run by a writable open, before anything reads the catalogue;
   * one transaction. Answers the collections moved.
   */
  upgradeLayout(): string[] {
    const rows = this.#db.prepare('SELECT name, definition FROM _fenec_collections').all() as {
      name: string;
      definition: string;
    }[];
    const moved: string[] = [];
    for (const row of rows) {
      const { fields, vectors } = JSON.parse(row.definition) as StoredDefinition;
      if (vectors === 'apart') continue;
      const table = tableName(row.name);
      for (const def of fields.filter(isApart)) {
        // SQLite refuses to drop a column a trigger names; the index log's are made again on the new table.
        for (const trigger of triggerNames(row.name, def.name)) this.#db.exec(`DROP TRIGGER IF EXISTS ${trigger}`);
        for (const sql of apartCreate(row.name, def)) this.#db.exec(sql);
        this.#db.exec(
          `INSERT INTO ${vectorTable(row.name, def.name)} ("id", ${ident(def.name)}) SELECT "id", ${ident(def.name)} FROM ${table} WHERE ${ident(def.name)} IS NOT NULL`,
        );
        this.#db.exec(`ALTER TABLE ${table} DROP COLUMN ${ident(def.name)}`);
        if (hasAnnotation(def, 'hnsw'))
          for (const sql of vectorFieldSql(row.name, def.name, vectorTable(row.name, def.name)).triggers)
            this.#db.exec(sql);
      }
      this.#db
        .prepare('UPDATE _fenec_collections SET definition = ? WHERE name = ?')
        .run(JSON.stringify({ fields, vectors: 'apart' } satisfies StoredDefinition), row.name);
      moved.push(row.name);
    }
    if (moved.length > 0) this.reload();
    return moved;
  }

  get version(): number {
    return this.#version;
  }

  get(name: string): Collection | undefined {
    return this.#collections.get(name);
  }

  require(name: string): Collection {
    const collection = this.#collections.get(name);
    if (collection === undefined) {
      throw this.unknown(name);
    }
    return collection;
  }

  /**
   * The refusal of a collection name that names none the asker may see: `visible`, for a token held
   * to a policy, names the ones it may (a suggestion never names another).
   */
  unknown(name: string, visible?: (name: string) => boolean): FenecError {
    const names = visible === undefined ? [...this.#collections.keys()] : [...this.#collections.keys()].filter(visible);
    const otherwise =
      visible === undefined ? 'schema lists the collections' : 'schema lists the collections this token reaches';
    return new FenecError('unknown_collection', `no collection named ${name}`, {
      hint: didYouMean(names, name, otherwise),
    });
  }

  list(): Collection[] {
    return [...this.#collections.values()];
  }

  /** Every `@hnsw` field, as the vector store opens its indexes. */
  vectorFields(): VectorFieldSpec[] {
    return this.list().flatMap((collection) =>
      collection.fields.flatMap((field) =>
        field.def.annotations.flatMap((a) =>
          a.kind === 'hnsw' && field.type.kind === 'vector'
            ? [
                {
                  collection: collection.name,
                  field: field.name,
                  table: field.apart ?? collection.table,
                  dims: field.type.dims,
                  metric: a.metric,
                  m: a.m,
                  ef: a.ef,
                  efConstruction: a.efConstruction,
                },
              ]
            : [],
        ),
      ),
    );
  }

  /** Creates a collection's table, indexes and catalogue row. The caller holds the transaction. */
  create(name: string, defs: readonly FieldDef[]): void {
    const clash = clashes(this.#collections.keys(), name);
    if (clash !== undefined) {
      throw new FenecError(
        'collection_exists',
        clash === name
          ? `collection ${name} exists`
          : `collection ${name} would clash with ${clash}: names may not differ only in case`,
        {
          hint: clash === name ? 'create collection if not exists … leaves an existing one as it is' : undefined,
        },
      );
    }
    const seen: string[] = [];
    for (const def of defs) {
      const other = clashes(seen, def.name);
      if (other !== undefined)
        throw new FenecError('duplicate_field', `fields ${other} and ${def.name} differ only in case`);
      seen.push(def.name);
      checkField(name, def);
    }
    checkEmbeds(name, defs);
    const stored = withTokenizers(name, withoutPositions(defs), undefined);
    const columns = [
      '"id" INTEGER PRIMARY KEY AUTOINCREMENT',
      ...stored.filter((def) => !isApart(def)).map((def) => columnSql(def)),
    ];
    this.#db.exec(`CREATE TABLE ${tableName(name)} (${columns.join(', ')}) STRICT`);
    for (const def of stored)
      for (const sql of isApart(def) ? apartCreate(name, def) : indexStatements(name, def)) this.#db.exec(sql);
    for (const index of derivedIndexes(name, stored)) for (const sql of index.create) this.#db.exec(sql);
    this.#db
      .prepare('INSERT INTO _fenec_collections (name, definition, created) VALUES (?, ?, ?)')
      .run(name, JSON.stringify({ fields: stored, vectors: 'apart' } satisfies StoredDefinition), Date.now());
    this.#collections.set(name, buildCollection(name, stored));
    this.#version++;
  }

  drop(name: string): void {
    const collection = this.require(name);
    for (const index of derivedIndexes(
      name,
      collection.fields.map((f) => f.def),
    ))
      for (const sql of index.drop) this.#db.exec(sql);
    for (const field of collection.apartFields) this.#db.exec(`DROP TABLE ${field.apart!}`);
    this.#db.exec(`DROP TABLE ${collection.table}`);
    this.#db.prepare('DELETE FROM _fenec_collections WHERE name = ?').run(name);
    this.#collections.delete(name);
    this.#version++;
  }

  /**
   * Adds a field. `fill` is the storage form every existing row takes (the field's default, evaluated
   * once by the caller), or null.
   */
  addField(name: string, def: FieldDef, fill: unknown): void {
    const collection = this.require(name);
    if (collection.byName.has(def.name)) throw new FenecError('field_exists', `${name} has a field ${def.name}`);
    const clash = clashes(collection.byName.keys(), def.name);
    if (clash !== undefined)
      throw new FenecError('duplicate_field', `fields ${clash} and ${def.name} differ only in case`);
    checkField(name, def);
    checkEmbeds(name, [...collection.fields.map((f) => f.def), def]);
    const [stored] = withTokenizers(
      name,
      withoutPositions([def]),
      storedTokenizer(collection.fields.map((f) => f.def)),
    ) as [FieldDef];
    const rows = this.#db.prepare(`SELECT count(*) FROM ${collection.table}`).pluck().get() as number;
    if (stored.required && fill === null && rows > 0) {
      throw new FenecError(
        'invalid_statement',
        `${name} has ${rows} rows and ${def.name} is required without a default`,
        {
          hint: `give ${def.name} a default, or add it without required`,
        },
      );
    }
    this.#alter(collection, [...collection.fields.map((f) => f.def), stored], () => {
      if (isApart(stored)) {
        for (const sql of apartCreate(name, stored)) this.#db.exec(sql);
        if (fill !== null)
          this.#db
            .prepare(
              `INSERT INTO ${vectorTable(name, stored.name)} ("id", ${ident(stored.name)}) SELECT "id", ? FROM ${collection.table}`,
            )
            .run(fill);
        return;
      }
      this.#db.exec(`ALTER TABLE ${collection.table} ADD COLUMN ${columnSql(stored, zeroOf(stored.type))}`);
      if (fill !== null) this.#db.prepare(`UPDATE ${collection.table} SET ${ident(def.name)} = ?`).run(fill);
      for (const sql of indexStatements(name, stored)) this.#db.exec(sql);
    });
  }

  dropField(name: string, field: string): void {
    const collection = this.require(name);
    if (!collection.byName.has(field)) {
      throw new FenecError(
        'unknown_field',
        field === 'id' ? 'id cannot be dropped: every collection has it' : `${name} has no field ${field}`,
      );
    }
    const dropped = collection.byName.get(field)!;
    const embedding = collection.fields.find((f) => embedOf(f)?.sources.includes(field));
    if (embedding !== undefined)
      throw new FenecError(
        'invalid_statement',
        `${name}.${embedding.name} embeds ${field}: ${field} cannot be dropped`,
        {
          hint: `drop ${embedding.name} first`,
        },
      );
    this.#alter(
      collection,
      collection.fields.filter((f) => f.name !== field).map((f) => f.def),
      () => {
        if (dropped.apart !== undefined) {
          this.#db.exec(`DROP TRIGGER ${apartTrigger(name, field)}`);
          this.#db.exec(`DROP TABLE ${dropped.apart}`);
          return;
        }
        this.#db.exec(`DROP INDEX IF EXISTS ${indexName('u', name, field)}`);
        this.#db.exec(`DROP INDEX IF EXISTS ${indexName('i', name, field)}`);
        this.#db.exec(`ALTER TABLE ${collection.table} DROP COLUMN ${ident(field)}`);
      },
    );
  }

  /**
   * Changes a collection's table to hold `defs`. Indexes kept by triggers over fields the change
   * touches are dropped first and made again after (SQLite refuses to drop a column they name).
   */
  #alter(collection: Collection, defs: readonly FieldDef[], change: () => void): void {
    const before = derivedIndexes(
      collection.name,
      collection.fields.map((f) => f.def),
    );
    const after = derivedIndexes(collection.name, defs);
    const kept = new Set(before.map((index) => index.key).filter((key) => after.some((index) => index.key === key)));
    for (const index of before) if (!kept.has(index.key)) for (const sql of index.drop) this.#db.exec(sql);
    change();
    for (const index of after) if (!kept.has(index.key)) for (const sql of index.create) this.#db.exec(sql);
    this.#save(collection.name, defs);
  }

  #save(name: string, defs: readonly FieldDef[]): void {
    this.#db
      .prepare('UPDATE _fenec_collections SET definition = ? WHERE name = ?')
      .run(JSON.stringify({ fields: defs, vectors: 'apart' } satisfies StoredDefinition), name);
    this.#collections.set(name, buildCollection(name, defs));
    this.#version++;
  }
}
