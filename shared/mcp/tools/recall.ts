/**
 * `recall`: memories of the --mcp-memory collection by words, by a vector (fused with the words when
 * both are given), by tags, or the latest first.
 */
import type { Cond, GetStmt } from '../../fenecql/ast.js';
import { Params } from '../../fenecql/bind.js';
import { isUnknownField, notMadeYet, VECTOR_FIELD } from '../memory.js';
import { and, detailSelect, field, int, readOfShape, type Bound } from '../statements.js';
import type { Arguments, Narrowing, Tool, ToolContext, ToolDefinition, ToolOutcome, ToolSetOptions } from '../tool.js';
import { CURSOR, DETAIL, PAGES_NOTE, READ, ROWS_OUTPUT, VECTOR } from '../tool-schemas.js';

export const DEFAULT_RECALL_LIMIT = 5;

function define(options: ToolSetOptions): ToolDefinition<'recall'> {
  return {
    name: 'recall',
    title: 'Recall memories',
    description:
      `Finds memories in ${options.memory}: by words (text), by meaning (vector, fused with the words when both are given), by tags (every tag given), ` +
      `or, with none of these, the latest first. Example: {"text": "when do we deploy"}. ${PAGES_NOTE}`,
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'What to recall, in words.' },
        vector: { ...VECTOR, description: 'An embedding of what to recall.' },
        tags: { type: 'array', items: { type: 'string' }, description: 'Only memories with every one of these tags.' },
        detail: DETAIL('text, tags and at'),
        limit: {
          type: 'integer',
          minimum: 1,
          description: `How many, best first: the page size. Default ${DEFAULT_RECALL_LIMIT}.`,
        },
        cursor: CURSOR,
      },
      additionalProperties: false,
    },
    outputSchema: ROWS_OUTPUT,
    annotations: { title: 'Recall memories', ...READ },
  };
}

/** What makes two recall calls run the same tree; their values are the text, the vector, then each tag. */
function recallShape(args: Arguments): string {
  return JSON.stringify([
    'recall',
    args.text != null,
    args.vector != null,
    ((args.tags as unknown[] | undefined) ?? []).length,
    args.detail ?? null,
    args.limit ?? null,
  ]);
}

function recallParams(args: Arguments): unknown[] {
  const values: unknown[] = [];
  if (args.text != null) values.push(args.text);
  if (args.vector != null) values.push(args.vector);
  for (const tag of (args.tags as unknown[] | undefined) ?? []) values.push(tag);
  return values;
}

/** The fields a memory is recalled with, at detail "fields". */
const RECALLED = Object.freeze(['text', 'tags', 'at']);

/**
 * `get C select text, tags, at [match text $1] [near vector $2] [fuse] [where tags has $3 and …] [order at desc, id
 * desc] limit N`
 */
function recallStatement(collection: string, args: Arguments): Bound<GetStmt> {
  const params = new Params(undefined);
  const text = args.text == null ? undefined : params.add(args.text);
  const vector = args.vector == null ? undefined : params.add(args.vector);
  let where: Cond | undefined;
  for (const tag of (args.tags as string[] | undefined) ?? [])
    where = and(where, { kind: 'Has', left: field('tags'), right: params.add(tag) });
  const ranked = text !== undefined || vector !== undefined;
  const statement: GetStmt = {
    kind: 'Get',
    collection,
    select: detailSelect('recall', args, RECALLED),
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
    limit: int((args.limit as number | undefined) ?? DEFAULT_RECALL_LIMIT),
    count: false,
  };
  return { statement, params: params.values };
}

function run(args: Arguments, context: ToolContext): ToolOutcome {
  const memory = context.setup.memory!;
  const narrowing: Narrowing = {
    choosesFields: false,
    call: (limit) => ({ name: 'recall', arguments: { ...args, limit } }),
  };
  const recall = (a: Arguments): ToolOutcome => {
    const { read, params } = readOfShape(
      context,
      recallShape(a),
      () => recallStatement(memory, a),
      () => recallParams(a),
    );
    return context.read(read, params, a.cursor, narrowing);
  };
  try {
    return recall(args);
  } catch (err) {
    // No memory has come with a vector yet: words alone still recall.
    if (args.vector != null && args.text != null && isUnknownField(err, VECTOR_FIELD)) {
      const { vector, ...words } = args;
      return recall(words);
    }
    if (notMadeYet(err, context.scoped)) return context.bounded({ rows: [], count: 0 }, narrowing);
    throw err;
  }
}

export const recall: Tool<'recall'> = {
  name: 'recall',
  define,
  switch: 'memory',
  instructions: 'recall finds memories by words, vector or tags.',
  audited: false,
  answersRows: true,
  run,
};
