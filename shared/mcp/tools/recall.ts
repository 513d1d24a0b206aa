/**
 * `recall`: memories of the --mcp-memory collection by words, by a vector (fused with the words when
 * both are given), by tags, or the latest first.
 */
import * as z from 'zod';
import type { Cond, GetStmt } from '../../fenecql/ast.js';
import { Params } from '../../fenecql/bind.js';
import { embeddingField, isUnknownField, memoryOf, notMadeYet, VECTOR_FIELD } from '../memory.js';
import { asFenecError } from '../../errors.js';
import { and, detailSelect, field, int, readOfShape, type Bound } from '../statements.js';
import {
  defineTool,
  type ArgumentsOf,
  type Narrowing,
  type ToolContext,
  type ToolDescription,
  type ToolOutcome,
  type ToolSetOptions,
} from '../tool.js';
import { CURSOR, DETAIL, LIMIT, PAGES_NOTE, READ, ROWS_OUTPUT, VECTOR } from '../tool-schemas.js';

export const DEFAULT_RECALL_LIMIT = 5;

const INPUT = z.strictObject({
  text: z.string().describe('What to recall, in words.').optional(),
  vector: VECTOR.describe('An embedding of what to recall.').optional(),
  tags: z.array(z.string()).describe('Only memories with every one of these tags.').optional(),
  detail: DETAIL('text, tags and at').optional(),
  limit: LIMIT(`How many, best first: the page size. Default ${DEFAULT_RECALL_LIMIT}.`).optional(),
  cursor: CURSOR.optional(),
});

type RecallArguments = ArgumentsOf<typeof INPUT>;

function describe(options: ToolSetOptions): ToolDescription {
  return {
    title: 'Recall memories',
    description:
      `Finds memories in ${options.memory}: by words (text), by meaning (vector, fused with the words when both are given), by tags (every tag given), ` +
      (options.embedder === true
        ? 'text alone is searched by meaning too (the server embeds it), fused with the words: no vector needed. '
        : '') +
      `or, with none of these, the latest first. Example: {"text": "when do we deploy"}. ${PAGES_NOTE}`,
    outputSchema: ROWS_OUTPUT,
    annotations: { title: 'Recall memories', ...READ },
  };
}

/** What makes two recall calls run the same tree; their values are the text, the vector, then each tag. */
function recallShape(args: RecallArguments, meaning: string | undefined): string {
  return JSON.stringify([
    'recall',
    meaning ?? null,
    args.text !== undefined,
    args.vector !== undefined,
    (args.tags ?? []).length,
    args.detail ?? null,
    args.limit ?? null,
  ]);
}

function recallParams(args: RecallArguments): unknown[] {
  const values: unknown[] = [];
  if (args.text !== undefined) values.push(args.text);
  if (args.vector !== undefined) values.push(args.vector);
  for (const tag of args.tags ?? []) values.push(tag);
  return values;
}

/** The fields a memory is recalled with, at detail "fields". */
const RECALLED = Object.freeze(['text', 'tags', 'at']);

/**
 * `get C select text, tags, at [match text $1] [near vector $2] [fuse] [where tags has $3 and …] [order at desc, id
 * desc] limit N`
 */
function recallStatement(collection: string, args: RecallArguments, meaning: string | undefined): Bound<GetStmt> {
  const params = new Params(undefined);
  const text = args.text === undefined ? undefined : params.add(args.text);
  // Words alone, where the memories' vectors embed their text: the words are embedded by the server and fused.
  const vector = args.vector === undefined ? (meaning === undefined ? undefined : text) : params.add(args.vector);
  let where: Cond | undefined;
  for (const tag of args.tags ?? []) where = and(where, { kind: 'Has', left: field('tags'), right: params.add(tag) });
  const ranked = text !== undefined || vector !== undefined;
  const statement: GetStmt = {
    kind: 'Get',
    collection,
    select: detailSelect('recall', args.detail, false, RECALLED),
    ...(text === undefined ? {} : { match: { field: 'text', query: text } }),
    ...(vector === undefined ? {} : { near: { field: VECTOR_FIELD, vector } }),
    fuse: text !== undefined && vector !== undefined,
    ...(where === undefined ? {} : { where }),
    order: ranked
      ? []
      : [
          { field: 'at', direction: 'desc' },
          { field: 'id', direction: 'desc' },
        ],
    limit: int(args.limit ?? DEFAULT_RECALL_LIMIT),
    count: false,
  };
  return { statement, params: params.values };
}

function run(args: RecallArguments, context: ToolContext): ToolOutcome {
  const memory = memoryOf(context.setup);
  const narrowing: Narrowing = {
    choosesFields: false,
    call: (limit) => ({ name: 'recall', arguments: { ...args, limit } }),
  };
  const meaning =
    args.vector === undefined && args.text !== undefined && context.setup.embedder === true
      ? meaningOf(context, memory)
      : undefined;
  const recall = (a: RecallArguments): ToolOutcome => {
    const { read, params } = readOfShape(
      context,
      recallShape(a, meaning),
      () => recallStatement(memory, a, meaning),
      () => recallParams(a),
    );
    return context.read(read, params, a.cursor, narrowing);
  };
  try {
    return recall(args);
  } catch (err) {
    // No memory has come with a vector yet: words alone still recall.
    if (args.vector !== undefined && args.text !== undefined && isUnknownField(err, VECTOR_FIELD)) {
      const { vector, ...words } = args;
      return recall(words);
    }
    if (notMadeYet(err, context.scoped)) return context.bounded({ rows: [], count: 0 }, narrowing);
    throw err;
  }
}

/** The memories' vector field when it embeds their text (`@embed(text)`); undefined without one, or no collection. */
function meaningOf(context: ToolContext, memory: string): string | undefined {
  try {
    return embeddingField(context.fields(memory), 'text');
  } catch (err) {
    if (asFenecError(err).code === 'unknown_collection') return undefined;
    throw err;
  }
}

export const recall = defineTool({
  name: 'recall',
  input: INPUT,
  describe,
  switch: 'memory',
  instructions: 'recall finds memories by words, vector or tags.',
  audited: false,
  answersRows: true,
  run,
});
