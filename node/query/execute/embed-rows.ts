/**
 * The vectors of `@embed` fields, filled into a write before it is planned and run: each row written without its
 * vector gets the embedding of its texts (the fields `@embed` names, joined by a blank line). A row that brings its
 * own vector (null included) keeps it; a row with none of the texts gets none. The vectors come from `lookup`, which
 * notes the texts it lacks: the caller stops the statement before it writes when any were (node/embedder/round.ts).
 */
import type { Expr, FieldDef, GetStmt, InsertStmt, ObjectExpr, PutStmt, SetStmt } from '../../../shared/fenecql/ast.js';
import type { SchemaStatement } from '../../../shared/fenecql/kinds.js';
import { missing, type EmbeddingRound } from '../../embedder/round.js';
import { Params } from '../../../shared/fenecql/bind.js';
import { FenecError } from '../../../shared/errors.js';
import { printExpr } from '../../../shared/fenecql/print.js';
import { embedOf, type Collection, type EmbedSpec, type Field } from '../../schema/catalog.js';
import { evaluate, isValue, type BindContext } from '../compile/evaluate.js';

/** A field's vector for a text, or undefined when it is not embedded yet (noted by the lookup). */
export type VectorLookup = (field: Field, spec: EmbedSpec, text: string, label: string) => Float32Array | undefined;

/** The `@embed` fields of a collection, each with what it embeds. */
export function embeddedFields(collection: Collection): { field: Field; spec: EmbedSpec }[] {
  return collection.fields.flatMap((field) => {
    const spec = embedOf(field);
    return spec === undefined ? [] : [{ field, spec }];
  });
}

/** The text embedded for a row: its source fields' texts in the annotation's order, or undefined when it has none. */
export function embeddedText(spec: EmbedSpec, valueOf: (field: string) => unknown): string | undefined {
  const texts = spec.sources.map(valueOf).filter((v): v is string => typeof v === 'string' && v.trim() !== '');
  return texts.length === 0 ? undefined : texts.join('\n\n');
}

/**
 * An insert or put with its rows' vectors filled in, or undefined when none needs one. Rows written out get each vector
 * as a parameter of its own; rows bound as a parameter are copied with their vectors.
 */
export function embedRows(
  stmt: InsertStmt | PutStmt,
  params: readonly unknown[],
  collection: Collection,
  ctx: BindContext,
  lookup: VectorLookup,
  /** Where the parameter's rows start in the statement's whole list (a load writes it a chunk at a time). */
  offset = 0,
): { statement: InsertStmt | PutStmt; params: readonly unknown[] } | undefined {
  const fields = embeddedFields(collection);
  if (fields.length === 0) return undefined;
  const rows = stmt.kind === 'Insert' ? stmt.rows : stmt.row;
  if (!Array.isArray(rows) && (rows as Expr).kind === 'Param') {
    const index = (rows as { index: number }).index;
    const value = params[index - 1];
    const list = Array.isArray(value) ? value : [value];
    let changed = false;
    const filled = list.map((row, i) => {
      if (typeof row !== 'object' || row === null || Array.isArray(row)) return row;
      const record = row as Record<string, unknown>;
      const vectors = vectorsOf(
        fields,
        (name) => record[name],
        (name) => name in record,
        `$${index}[${offset + i}]`,
        lookup,
      );
      if (vectors.length === 0) return row;
      changed = true;
      return { ...record, ...Object.fromEntries(vectors.map(([name, vector]) => [name, Array.from(vector ?? [])])) };
    });
    if (!changed) return undefined;
    const next = [...params];
    next[index - 1] = Array.isArray(value) ? filled : filled[0];
    return { statement: stmt, params: next };
  }
  const written = (Array.isArray(rows) ? rows : [rows]) as readonly ObjectExpr[];
  const bound = new Params(params);
  let changed = false;
  const filled = written.map((row, i) => {
    const given = new Map(row.entries.map((e) => [e.key, e.value]));
    const valueOf = (name: string): unknown => {
      const expr = given.get(name) ?? collection.byName.get(name)?.def.default;
      if (expr === undefined) return undefined;
      if (!isValue(expr))
        throw new FenecError(
          'invalid_statement',
          `${name} is embedded, and ${printExpr(expr)} is not a value: its text is known only as the row is written`,
          { position: expr.pos, hint: 'give the text as a value or a parameter, or give the vector yourself' },
        );
      return evaluate(expr, ctx);
    };
    const label = written.length === 1 ? 'the row' : `row ${i}`;
    const vectors = vectorsOf(fields, valueOf, (name) => given.has(name), label, lookup);
    if (vectors.length === 0) return row;
    changed = true;
    const entries = vectors.map(([key, vector]) => ({ key, value: bound.add(Array.from(vector ?? [])) }));
    return { ...row, entries: [...row.entries, ...entries] };
  });
  if (!changed) return undefined;
  const statement: InsertStmt | PutStmt =
    stmt.kind === 'Insert' ? { ...stmt, rows: filled } : { ...stmt, row: filled[0]! };
  return { statement, params: bound.values };
}

/**
 * The vectors a row needs: one per `@embed` field it leaves out and has texts for. A vector not embedded yet is
 * undefined (the statement stops before it writes).
 */
function vectorsOf(
  fields: readonly { field: Field; spec: EmbedSpec }[],
  valueOf: (name: string) => unknown,
  has: (name: string) => boolean,
  row: string,
  lookup: VectorLookup,
): [string, Float32Array | undefined][] {
  const vectors: [string, Float32Array | undefined][] = [];
  for (const { field, spec } of fields) {
    if (has(field.name)) continue;
    const text = embeddedText(spec, valueOf);
    if (text === undefined) continue;
    vectors.push([field.name, lookup(field, spec, text, `${row}, field ${field.name}`)]);
  }
  return vectors;
}

/**
 * What a `set` must embed: the `@embed` fields whose texts it changes and whose vector it does not set itself, with
 * the new value of each source it changes. Undefined when it changes no embedded text.
 */
export function setEmbeds(
  stmt: SetStmt,
  collection: Collection,
  ctx: BindContext,
): { fields: { field: Field; spec: EmbedSpec }[]; changed: ReadonlyMap<string, unknown> } | undefined {
  const given = new Map(stmt.changes.entries.map((e) => [e.key, e.value]));
  const fields = embeddedFields(collection).filter(
    ({ field, spec }) => !given.has(field.name) && spec.sources.some((source) => given.has(source)),
  );
  if (fields.length === 0) return undefined;
  const changed = new Map<string, unknown>();
  for (const { spec } of fields)
    for (const source of spec.sources) {
      const expr = given.get(source);
      if (expr === undefined || changed.has(source)) continue;
      if (!isValue(expr))
        throw new FenecError(
          'invalid_statement',
          `${source} is embedded, and ${printExpr(expr)} is not a value: the new text must be known before the set runs`,
          { position: expr.pos, hint: 'set it to a value or a parameter, or set the vector too' },
        );
      changed.set(source, evaluate(expr, ctx));
    }
  return { fields, changed };
}

/**
 * The vectors a `set` writes: for each row it changes (read before, `rows`) and each field whose texts come out
 * otherwise, the embedding of the new texts (undefined: not embedded yet, or no text left, so no vector).
 */
export function setVectors(
  rows: readonly Record<string, unknown>[],
  embeds: NonNullable<ReturnType<typeof setEmbeds>>,
  lookup: VectorLookup,
): { id: number; field: Field; vector: Float32Array | undefined }[] {
  const updates: { id: number; field: Field; vector: Float32Array | undefined }[] = [];
  for (const row of rows)
    for (const { field, spec } of embeds.fields) {
      const before = embeddedText(spec, (name) => row[name]);
      const after = embeddedText(spec, (name) => (embeds.changed.has(name) ? embeds.changed.get(name) : row[name]));
      if (after === before) continue;
      const label = `row id ${String(row.id)}, field ${field.name}`;
      updates.push({
        id: row.id as number,
        field,
        vector: after === undefined ? undefined : lookup(field, spec, after, label),
      });
    }
  return updates;
}

/** A row's vector from the request's round; a server without an embedder (no round) refuses the write. */
export function rowVector(
  round: EmbeddingRound | undefined,
  field: Field,
  spec: EmbedSpec,
  text: string,
  label: string,
): Float32Array | undefined {
  if (round === undefined)
    throw missing(
      `${label} is written without its vector, which ${field.name} makes with @embed(${spec.sources.join(', ')})`,
    );
  return round.vector(text, false, label, field.name, { model: spec.model, dimension: spec.dimension });
}

/** The vector of a `near`'s words, embedded as a query (the embedder's cache of recent ones); the round stops. */
export function queryVector(
  round: EmbeddingRound | undefined,
  field: string,
  spec: EmbedSpec | undefined,
  text: string,
): Float32Array {
  if (spec === undefined)
    throw new FenecError(
      'type_mismatch',
      `near ${field} takes a vector; words are embedded only for a field made with @embed`,
      { hint: `give the vector, or make ${field} with @embed(its text fields)` },
    );
  if (round === undefined) throw missing(`near ${field} is given words to embed`);
  const vector = round.vector(text, true, `the words of near ${field}`, field, {
    model: spec.model,
    dimension: spec.dimension,
  });
  round.stop();
  return vector!;
}

/** `set C {FIELD: $1} where id = $2`: one row's vector, as a `set` and a backfill write it. */
export function vectorSet(collection: string, field: string): SetStmt {
  return {
    kind: 'Set',
    collection,
    changes: { kind: 'Object', entries: [{ key: field, value: { kind: 'Param', index: 1 } }] },
    where: { kind: 'Compare', op: '=', left: { kind: 'Field', name: 'id' }, right: { kind: 'Param', index: 2 } },
  };
}

/** What a `set` that changes embedded texts needs of the database: its reads, its writes, one transaction. */
export interface EmbeddedSetDoors {
  readonly read: (statement: GetStmt) => Record<string, unknown>[];
  readonly write: (statement: SetStmt, params: readonly unknown[]) => void;
  readonly transaction: <T>(work: () => T) => T;
}

/**
 * A `set` that changes the texts an `@embed` field embeds: the rows it changes are read first (under the same
 * policy, by `doors.read`), the new texts of each embedded (a row whose texts come out the same embeds nothing),
 * then `set` itself and each row's new vector in one transaction. Undefined when the set changes no embedded text:
 * it runs as it is.
 */
export function embeddedSet<T>(
  statement: SetStmt,
  collection: Collection,
  ctx: BindContext,
  lookup: VectorLookup,
  round: EmbeddingRound | undefined,
  doors: EmbeddedSetDoors,
  set: () => T,
): T | undefined {
  const embeds = setEmbeds(statement, collection, ctx);
  if (embeds === undefined) return undefined;
  const sources = [...new Set(embeds.fields.flatMap(({ spec }) => spec.sources))];
  const rows = doors.read({
    kind: 'Get',
    collection: statement.collection,
    select: ['id', ...sources],
    fuse: false,
    where: statement.where,
    order: [],
    count: false,
  });
  const updates = setVectors(rows, embeds, lookup);
  round?.stop();
  return doors.transaction(() => {
    const answer = set();
    for (const { id, field, vector } of updates)
      doors.write(vectorSet(statement.collection, field.name), [vector === undefined ? null : Array.from(vector), id]);
    return answer;
  });
}

/**
 * A schema statement with the model of each field made with `@embed` filled in: the one it names, else the server's
 * embedder's, whose dimension must then be the field's.
 */
export function withModels(statement: SchemaStatement, round: EmbeddingRound | undefined): SchemaStatement {
  const fill = (def: FieldDef): FieldDef => {
    const at = def.annotations.findIndex((a) => a.kind === 'embed' && a.model === undefined);
    if (at < 0 || def.type.kind !== 'vector') return def;
    const what = `${def.name} is made with @embed, which records the embedder's model`;
    if (round === undefined) throw missing(what);
    const server = round.embedder(what);
    if (server.dimension !== def.type.dims)
      throw new FenecError(
        'embedder_mismatch',
        `${def.name} is vector<${def.type.dims}>, and this server's embedder ${server.model} makes vectors of ${server.dimension} dimensions`,
        {
          hint: `make it vector<${server.dimension}>, or start the server with a model of ${def.type.dims} dimensions`,
        },
      );
    return { ...def, annotations: def.annotations.map((a, i) => (i === at ? { ...a, model: server.model } : a)) };
  };
  if (statement.kind === 'CreateCollection') return { ...statement, fields: statement.fields.map(fill) };
  if (statement.kind === 'AlterAdd') return { ...statement, field: fill(statement.field) };
  return statement;
}
