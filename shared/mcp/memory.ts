/**
 * The memory collection of --mcp-memory: made at the first `remember` exactly as the seed page writes
 * it, with a vector field if that memory brings a vector, and given one at the first memory that does.
 *
 *   create collection if not exists memories (text text required @text, tags [text], owner text @hash,
 *     at timestamp @sorted, expires timestamp @ttl(1ms)[, vector vector<N> @hnsw(cosine)])
 */
import type { AlterAddStmt, CreateCollectionStmt, FieldDef } from '../fenecql/ast.js';
import { parseStatement } from '../fenecql/parser.js';
import { asFenecError } from '../errors.js';

const DEFINITION = parseStatement(
  'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms))',
) as CreateCollectionStmt;

/** The field a memory's vector goes in. */
export const VECTOR_FIELD = 'vector';

function withoutPositions(field: FieldDef): FieldDef {
  const { pos, ...rest } = field;
  return rest;
}

const FIELDS = DEFINITION.fields.map(withoutPositions);

/** `vector vector<dims> @hnsw(cosine)`, and `@embed(text)` on a server with an embedder of that dimension. */
export function vectorField(dims: number, embed = false): FieldDef {
  return {
    name: VECTOR_FIELD,
    type: { kind: 'vector', dims },
    required: false,
    unique: false,
    annotations: embed
      ? [
          { kind: 'hnsw', metric: 'cosine' },
          { kind: 'embed', fields: ['text'] },
        ]
      : [{ kind: 'hnsw', metric: 'cosine' }],
  };
}

/**
 * `create collection if not exists NAME (…)`, with `vector vector<dims> @hnsw(cosine)` when dims is given, and
 * `@embed(text)` on it when the server embeds.
 */
export function createMemories(collection: string, dims: number | undefined, embed = false): CreateCollectionStmt {
  return {
    kind: 'CreateCollection',
    name: collection,
    ifNotExists: true,
    fields: dims === undefined ? FIELDS : [...FIELDS, vectorField(dims, embed)],
  };
}

/** `alter collection NAME add vector vector<dims> @hnsw(cosine)`: a memory collection's first vector. */
export function addMemoryVector(collection: string, dims: number): AlterAddStmt {
  return { kind: 'AlterAdd', collection, field: vectorField(dims) };
}

/** The field of a collection that embeds `source` (its annotations as schema shows them), or undefined. */
export function embeddingField(
  fields: readonly { readonly name: string; readonly type: string; readonly annotations?: readonly string[] }[],
  source?: string,
): string | undefined {
  return fields.find(
    (f) =>
      f.type.startsWith('vector<') &&
      (f.annotations ?? []).some(
        (a) => a.startsWith('@embed(') && (source === undefined || new RegExp(`[(, ]${source}[,)]`).test(a)),
      ),
  )?.name;
}

/** The error says `field` is unknown (a memory collection without its vector field yet). */
export function isUnknownField(err: unknown, field: string): boolean {
  const error = asFenecError(err);
  return error.code === 'unknown_field' && new RegExp(`\\b${field}\\b`).test(error.message);
}

/**
 * The memory collection is not made yet, and the caller is the server's token: it holds nothing
 * (recall answers no memory, forget none forgotten). A scoped token is told the collection is unknown,
 * as for any collection its policy does not name.
 */
export function notMadeYet(err: unknown, scoped: boolean): boolean {
  return !scoped && asFenecError(err).code === 'unknown_collection';
}

/**
 * The memory collection of a server's options. The memory tools are offered only when it is set (their switch); a
 * call without it is a fault of the server's, not the caller's.
 */
export function memoryOf(setup: { readonly memory: string | undefined }): string {
  if (setup.memory === undefined) throw new Error('a memory tool ran on a server without --mcp-memory');
  return setup.memory;
}
