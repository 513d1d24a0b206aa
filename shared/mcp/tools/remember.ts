/**
 * `remember`: a memory inserted into the --mcp-memory collection. The collection is made at the
 * first memory, and given a vector field at the first that brings one — by the server's token only;
 * a scoped token is told the statement to have run.
 */
import * as z from 'zod';
import type { GetStmt, InsertStmt, ObjectEntry, ObjectExpr, Statement } from '../../fenecql/ast.js';
import { Params } from '../../fenecql/bind.js';
import { printStatement } from '../../fenecql/print.js';
import { DURATION_PATTERN, parseDuration } from '../../duration.js';
import { asFenecError, FenecError } from '../../errors.js';
import { NO_NARROWING } from '../bounds.js';
import { addMemoryVector, createMemories, embeddingField, isUnknownField, memoryOf, VECTOR_FIELD } from '../memory.js';
import {
  defineTool,
  type Answer,
  type ArgumentsOf,
  type SchemaChangeStmt,
  type ToolContext,
  type ToolDescription,
  type ToolSetOptions,
} from '../tool.js';
import { VECTOR, WRITTEN_OUTPUT } from '../tool-schemas.js';

/**
 * What remember answers: the id inserted, or (--mcp-memory-merge) the one a memory near enough was merged into. One
 * schema on every server, as for every tool.
 */
const REMEMBERED_OUTPUT = {
  type: 'object',
  properties: {
    ...WRITTEN_OUTPUT.properties,
    id: { type: 'integer' },
    merged: { type: 'boolean' },
  },
} as const;

const INPUT = z.strictObject({
  text: z.string().describe('The memory, one self-contained sentence.'),
  tags: z.array(z.string()).describe('Words to group and recall it by.').optional(),
  expires_in: z
    .string()
    .regex(new RegExp(DURATION_PATTERN))
    .describe('How long it is kept: 30m, 12h, 7d. Default: for good.')
    .optional(),
  vector: VECTOR.describe('Its embedding, from the same model as the other memories.').optional(),
});

type RememberArguments = ArgumentsOf<typeof INPUT>;

function describe(options: ToolSetOptions): ToolDescription {
  return {
    title: 'Remember a sentence',
    description:
      `Keeps a memory (a sentence worth recalling in a later conversation) in ${options.memory}. ` +
      'tags group memories, expires_in lets one go after a while (30m, 12h, 7d; kept for good without it), ' +
      (options.embedder === true
        ? 'The server embeds its text, so that recall finds it by meaning too; vector is not needed. '
        : 'vector is its embedding if you have a model (all memories with vectors must share one model and length). ') +
      (options.memoryMerge === undefined
        ? ''
        : `A memory that near (cosine ≥ ${options.memoryMerge}) one of yours refreshes it instead, answered {"id": n, "merged": true}. `) +
      'Example: {"text": "the deploy runs on fridays", "tags": ["ops"]}. Answers its id.',
    outputSchema: REMEMBERED_OUTPUT,
    annotations: {
      title: 'Remember a sentence',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: false,
    },
  };
}

/** Milliseconds of an `expires_in` such as 30m, 12h or 7d (checked against the tool's pattern before). */
function durationMs(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new FenecError('invalid_argument', `remember: expires_in ${text} is too long`);
  return ms;
}

/** `insert into C {text: $1, tags: $2, at: now(), expires: now() + $3 | null[, vector: $4]}` */
function rememberStatement(
  collection: string,
  args: RememberArguments,
): { statement: Statement; params: readonly unknown[] } {
  const params = new Params(undefined);
  const entries: ObjectEntry[] = [
    { key: 'text', value: params.add(args.text) },
    { key: 'tags', value: params.add(args.tags ?? []) },
    { key: 'at', value: { kind: 'Call', fn: 'now', args: [] } },
    {
      key: 'expires',
      value:
        args.expires_in === undefined
          ? { kind: 'Literal', type: 'null', value: null }
          : {
              kind: 'Binary',
              op: '+',
              left: { kind: 'Call', fn: 'now', args: [] },
              right: params.add(durationMs(args.expires_in)),
            },
    },
  ];
  if (args.vector !== undefined) entries.push({ key: VECTOR_FIELD, value: params.add(args.vector) });
  return {
    statement: { kind: 'Insert', collection, rows: [{ kind: 'Object', entries }], many: false },
    params: params.values,
  };
}

/** Inserts the memory, making the collection or its vector field first when the insert finds either missing. */
function keep(args: RememberArguments, context: ToolContext): Answer {
  const memory = memoryOf(context.setup);
  const insert = rememberStatement(memory, args);
  const dims = args.vector?.length;
  try {
    if (context.setup.memoryMerge !== undefined) {
      const merged = merge(memory, args, context, context.setup.memoryMerge);
      if (merged !== undefined) return merged;
    }
    return context.execute(insert.statement, insert.params);
  } catch (err) {
    const error = asFenecError(err);
    let change: SchemaChangeStmt;
    // On a server that embeds, the memories' vector is the embedding of their text, of the embedder's dimension.
    if (error.code === 'unknown_collection')
      change =
        context.setup.embedder === true
          ? createMemories(memory, context.embedder('the memory collection embeds its text').dimension, true)
          : createMemories(memory, dims);
    else if (
      dims !== undefined &&
      isUnknownField(error, VECTOR_FIELD) &&
      !context.fields(memory).some((f) => f.name === VECTOR_FIELD)
    )
      change = addMemoryVector(memory, dims);
    else throw err;
    if (context.scoped) throw schemaNeeded(memory, change);
    try {
      const made = context.execute(change, []);
      if (made.created !== false) context.schemaChanged(change);
    } catch (raced) {
      // Another call made the same change meanwhile.
      if (asFenecError(raced).code !== 'field_exists') throw raced;
    }
    return context.execute(insert.statement, insert.params);
  }
}

/**
 * --mcp-memory-merge: the caller's memory nearest this one (the caller's own under a token's policy; those of no owner
 * for the server's token), refreshed — text, tags, at, expires and its vector — when it is within the cosine given.
 * Undefined when none is that near (or the memories have no vector to compare, nor words to embed).
 */
function merge(memory: string, args: RememberArguments, context: ToolContext, cosine: number): Answer | undefined {
  const fields = context.fields(memory);
  if (!fields.some((f) => f.name === VECTOR_FIELD)) return undefined;
  const words = embeddingField(fields, 'text') !== undefined;
  if (args.vector === undefined && !words) return undefined;
  const probe: GetStmt = {
    kind: 'Get',
    collection: memory,
    select: ['id'],
    near: { field: VECTOR_FIELD, vector: { kind: 'Param', index: 1 } },
    fuse: false,
    ...(context.scoped ? {} : { where: { kind: 'IsNull', operand: { kind: 'Field', name: 'owner' }, negated: false } }),
    order: [],
    limit: { kind: 'Literal', type: 'int', value: 1 },
    count: false,
  };
  const nearest = (context.execute(probe, [args.vector ?? args.text]).rows as { id: number; _score: number }[])[0];
  if (nearest === undefined || nearest._score < cosine) return undefined;
  const { statement, params } = rememberStatement(memory, args);
  const row = (statement as InsertStmt).rows as readonly ObjectExpr[];
  const values = new Params(params);
  const refresh: Statement = {
    kind: 'Set',
    collection: memory,
    changes: row[0]!,
    where: { kind: 'Compare', op: '=', left: { kind: 'Field', name: 'id' }, right: values.add(nearest.id) },
  };
  context.execute(refresh, values.values);
  return { id: nearest.id, merged: true };
}

/**
 * The refusal of a scoped token's first memory: the statement the server's token must run, as text for the operator.
 */
function schemaNeeded(collection: string, change: SchemaChangeStmt): FenecError {
  const statement = printStatement(change);
  const what =
    change.kind === 'CreateCollection'
      ? `the memory collection ${collection} is not one this token reaches`
      : `${collection} has no vector field yet`;
  return new FenecError(
    'forbidden',
    `${what}; a JSON Web Token may not change a schema, so the server's token must run, once: ${statement}`,
    {
      hint:
        change.kind === 'CreateCollection'
          ? `have the operator run it (fenec query --url … ${JSON.stringify(statement)} with the server token); if the collection exists already, the token's policy must name it, e.g. ${collection}  read,write  where owner = $jwt.sub`
          : `have the operator run it, or remember without a vector`,
    },
  );
}

export const remember = defineTool({
  name: 'remember',
  input: INPUT,
  describe,
  switch: 'memory',
  instructions: 'remember keeps a sentence for later conversations.',
  audited: true,
  answersRows: false,
  run: (args, context) => context.bounded(keep(args, context), NO_NARROWING),
});
