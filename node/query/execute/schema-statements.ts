/**
 * Statements about collections rather than rows: create, drop, alter, schema, compact.
 */
import type { FieldDef } from '../../../shared/fenecql/ast.js';
import { unreachable, type SchemaStatement } from '../../../shared/fenecql/kinds.js';
import { FenecError } from '../../../shared/errors.js';
import { printAnnotation, printExpr, printFieldType } from '../../../shared/fenecql/print.js';
import type { Catalog, Collection } from '../../schema/catalog.js';
import type { Connection } from '../../storage/sqlite.js';
import { textIndexSql } from '../../search/text-index.js';
import { Compiler } from '../compile/compiler.js';
import { deleteExpired } from './expiry.js';
import type { Answer } from '../../../shared/answer.js';
import { isValue, type BindContext } from '../compile/evaluate.js';
import { bindArgs } from '../compile/args.js';

/** The stored value a field's default has now (for alter … add, which fills the rows there are). */
function defaultNow(def: FieldDef, db: Connection, ctx: BindContext): unknown {
  if (def.default === undefined) return null;
  const compiler = new Compiler(null);
  const fragment = isValue(def.default)
    ? compiler.exprAs(def.default, def.type, `the default of ${def.name}`)
    : compiler.expr(def.default);
  const args = bindArgs(fragment.args, ctx);
  return db.prepare(`SELECT ${fragment.sql}`).pluck().get(args) ?? null;
}

/** A default is checked against its field when the collection is made, not at the first insert. */
function checkDefault(def: FieldDef, ctx: BindContext): void {
  if (def.default === undefined) return;
  const compiler = new Compiler(null);
  if (isValue(def.default)) {
    bindArgs(compiler.exprAs(def.default, def.type, `the default of ${def.name}`).args, ctx);
    return;
  }
  const { type } = compiler.expr(def.default);
  const fits =
    type.kind === 'null' ||
    JSON.stringify(type) === JSON.stringify(def.type) ||
    (def.type.kind === 'scalar' && def.type.scalar === 'float' && type.kind === 'scalar' && type.scalar === 'int');
  if (!fits) {
    throw new FenecError(
      'type_mismatch',
      `the default of ${def.name} is ${printExpr(def.default)}; ${def.name} takes ${printFieldType(def.type)}`,
      { position: def.pos },
    );
  }
}

/**
 * What `schema` tells of a field's vector index: the rows it holds, those it does not hold yet, and whether it is at
 * work.
 */
export interface IndexState {
  readonly rows: number;
  readonly pending: number;
  readonly building: boolean;
  /** A backfill of the field's vectors under way (alter … embed): rows embedded so far, and rows left. */
  readonly embedding?: { readonly done: number; readonly left: number };
}

export type IndexStates = (collection: string, field: string) => IndexState | undefined;

function describeCollection(collection: Collection, indexes: IndexStates | undefined): Answer {
  return {
    name: collection.name,
    fields: [
      { name: 'id', type: 'int', required: true, unique: true, annotations: [] },
      ...collection.fields.map((f) => ({
        name: f.name,
        type: printFieldType(f.type),
        required: f.def.required,
        unique: f.def.unique,
        annotations: f.def.annotations.map(printAnnotation),
        ...(f.def.default === undefined ? {} : { default: printExpr(f.def.default) }),
        ...indexOf(collection.name, f.name, indexes),
      })),
    ],
  };
}

function indexOf(collection: string, field: string, indexes: IndexStates | undefined): { index?: IndexState } {
  const state = indexes?.(collection, field);
  return state === undefined ? {} : { index: state };
}

/**
 * Runs a statement about collections. `visible`, for a token held to a policy, names the collections
 * `schema` shows it: the others are as unknown to it as ones that do not exist. `indexes` tells the
 * state of each `@hnsw` field's index, for `schema` to show.
 */
export function runSchemaStatement(
  stmt: SchemaStatement,
  catalog: Catalog,
  db: Connection,
  ctx: BindContext,
  visible?: (name: string) => boolean,
  indexes?: IndexStates,
): Answer {
  switch (stmt.kind) {
    case 'Schema': {
      if (stmt.collection !== undefined && visible !== undefined && !visible(stmt.collection)) {
        throw catalog.unknown(stmt.collection, visible);
      }
      const collections =
        stmt.collection === undefined
          ? catalog.list().filter((c) => visible?.(c.name) ?? true)
          : [catalog.require(stmt.collection)];
      return { collections: collections.map((c) => describeCollection(c, indexes)) };
    }
    case 'CreateCollection': {
      if (stmt.ifNotExists && catalog.get(stmt.name) !== undefined) return { created: false };
      stmt.fields.forEach((def) => checkDefault(def, ctx));
      inTransaction(db, catalog, () => catalog.create(stmt.name, stmt.fields));
      return { created: true };
    }
    case 'DropCollection': {
      if (stmt.ifExists && catalog.get(stmt.name) === undefined) return { dropped: false };
      inTransaction(db, catalog, () => catalog.drop(stmt.name));
      return { dropped: true };
    }
    case 'AlterAdd': {
      checkDefault(stmt.field, ctx);
      inTransaction(db, catalog, () => catalog.addField(stmt.collection, stmt.field, defaultNow(stmt.field, db, ctx)));
      return { altered: true };
    }
    case 'AlterDrop':
      inTransaction(db, catalog, () => catalog.dropField(stmt.collection, stmt.field));
      return { altered: true };
    case 'AlterEmbed':
      // The database records the backfill (backfill.ts): it needs the embedder, which this module does not see.
      throw new FenecError('internal', 'alter … embed is run by the database');
    case 'Compact': {
      const collections = stmt.collection === undefined ? catalog.list() : [catalog.require(stmt.collection)];
      const before = fileBytes(db);
      const expired = db.transaction(() => {
        const count = deleteExpired(db, collections, ctx.now);
        // A deleted row's words stay in the text index's segments until they are merged.
        for (const collection of collections) {
          if (collection.textFields.length > 0)
            db.exec(textIndexSql(collection.name, collection.textFields, collection.textTokenizer).optimize);
        }
        return count;
      })();
      // VACUUM rewrites the whole file; the checkpoint then empties the write-ahead log into it — not on a
      // connection that never checkpoints on its own (a replicated file, sqlite.ts): its pages must be taken from
      // the log and shipped first, and its owner checkpoints once they are (node/storage/wal-tail.ts).
      db.exec('VACUUM');
      if (db.pragma('wal_autocheckpoint', { simple: true }) !== 0) db.pragma('wal_checkpoint(TRUNCATE)');
      return { count: expired, bytes_before: before, bytes_after: fileBytes(db) };
    }
    default:
      return unreachable(stmt);
  }
}

function fileBytes(db: Connection): number {
  const pages = db.pragma('page_count', { simple: true }) as number;
  const size = db.pragma('page_size', { simple: true }) as number;
  return pages * size;
}

/** A schema change is one transaction; if it fails, the catalogue is read again from the rolled-back file. */
function inTransaction(db: Connection, catalog: Catalog, change: () => void): void {
  try {
    db.transaction(change)();
  } catch (err) {
    catalog.reload();
    throw err;
  }
}
