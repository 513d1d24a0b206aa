/**
 * `search`: rows of a collection by words (match over every @text field), by a vector (near over
 * its one vector field), or both (fused), best first, filtered by a FenecQL condition.
 */
import * as z from 'zod';
import type { GetStmt } from '../../fenecql/ast.js';
import { Params } from '../../fenecql/bind.js';
import { FenecError } from '../../errors.js';
import { checkName } from '../arguments.js';
import { detailSelect, int, parseFilter, readOfShape, type Bound } from '../statements.js';
import {
  defineTool,
  type ArgumentsOf,
  type ToolContext,
  type ToolDescription,
  type ToolOutcome,
  type ToolSetOptions,
} from '../tool.js';
import { embeddingField } from '../memory.js';
import {
  CURSOR,
  DETAIL,
  FILTER_TEXT,
  LIMIT,
  PAGES_NOTE,
  PARAMS,
  READ,
  ROWS_OUTPUT,
  TEXT_LIMIT_NOTE,
  VECTOR,
} from '../tool-schemas.js';

export const DEFAULT_SEARCH_LIMIT = 10;

const INPUT = z.strictObject({
  collection: z.string().describe('The collection to search (schema lists them).'),
  text: z.string().describe('Words to find, as a person writes them.').optional(),
  vector: VECTOR.describe("An embedding to find the nearest rows to, of the vector field's length.").optional(),
  filter: z.string().describe(FILTER_TEXT).optional(),
  params: PARAMS.optional(),
  fields: z
    .array(z.string())
    .describe(
      'The fields to answer (id is always kept), with detail "fields". Default: every field but vectors; naming a vector field keeps it.',
    )
    .optional(),
  detail: DETAIL('every field but vectors, or those fields names').optional(),
  limit: LIMIT(`How many rows, best first: the page size. Default ${DEFAULT_SEARCH_LIMIT}.`).optional(),
  cursor: CURSOR.optional(),
});

type SearchArguments = ArgumentsOf<typeof INPUT>;

function describe(options: ToolSetOptions): ToolDescription {
  return {
    title: 'Search a collection',
    description:
      'Finds rows of a collection by words (BM25 over its @text fields), by a vector (nearest neighbours of its vector field), or both (fused), best first, ' +
      'filtered by a FenecQL condition. Rows carry _score, and snippet for words. ' +
      (options.embedder === true
        ? 'text alone searches by meaning too (fused with the words) in a collection whose vector field embeds its texts (@embed): no vector needed. '
        : '') +
      'Example: {"collection": "docs", "text": "fox", "filter": "year >= $1", "params": [2024]}. ' +
      `A vector must be made with the model the collection was filled with, and be of its field's length. ` +
      'Search narrow: detail "ids" answers id, _score and snippet alone; then read the rows you need by id with query ({"statement": "get docs where id in $1", "params": [[3, 7]]}). ' +
      `${PAGES_NOTE} ${TEXT_LIMIT_NOTE}`,
    outputSchema: ROWS_OUTPUT,
    annotations: { title: 'Search a collection', ...READ },
  };
}

/**
 * What makes two search calls run the same tree: everything but the values bound. The values of a
 * call are its params, then its text, then its vector — the order searchStatement binds them in.
 */
function searchShape(args: SearchArguments, vectorField: string | undefined, meaning: string | undefined): string {
  const given = args.params?.length ?? 0;
  return JSON.stringify([
    'search',
    args.collection,
    args.filter ?? null,
    args.fields ?? null,
    args.detail ?? null,
    args.limit ?? null,
    given,
    args.text !== undefined,
    vectorField ?? null,
    meaning ?? null,
  ]);
}

function searchParams(args: SearchArguments): unknown[] {
  const values = [...(args.params ?? [])];
  if (args.text !== undefined) values.push(args.text);
  if (args.vector !== undefined) values.push(args.vector);
  return values;
}

/**
 * match over every @text field, near over the collection's vector field, fused when both. `meaning`: the field that
 * embeds the collection's texts, searched with the words (the server embeds them) when no vector is given.
 */
function searchStatement(
  args: SearchArguments,
  vectorField: string | undefined,
  meaning: string | undefined,
): Bound<GetStmt> {
  const collection = checkName('search', 'collection', args.collection);
  const params = new Params(args.params);
  const where = args.filter === undefined ? undefined : parseFilter('search', args.filter, params.values.length);
  const fields = detailSelect(
    'search',
    args.detail,
    args.fields !== undefined,
    args.fields?.map((name, i) => checkName('search', `fields[${i}]`, name)) ?? null,
  );
  const text = args.text === undefined ? undefined : params.add(args.text);
  const vector = args.vector === undefined ? (meaning === undefined ? undefined : text) : params.add(args.vector);
  const field = args.vector === undefined ? meaning : vectorField;
  const statement: GetStmt = {
    kind: 'Get',
    collection,
    select: fields,
    ...(text === undefined ? {} : { match: { field: '*', query: text } }),
    ...(vector === undefined || field === undefined ? {} : { near: { field, vector } }),
    fuse: text !== undefined && vector !== undefined && field !== undefined,
    ...(where === undefined ? {} : { where }),
    order: [],
    limit: int(args.limit ?? DEFAULT_SEARCH_LIMIT),
    count: false,
  };
  return { statement, params: params.values };
}

/** The one vector field a search's vector is compared with. */
function vectorFieldOf(collection: string, context: ToolContext): string {
  const vectors = context
    .fields(collection)
    .filter((f) => f.type.startsWith('vector<'))
    .map((f) => f.name);
  const [first] = vectors;
  if (first === undefined) {
    throw new FenecError('invalid_argument', `search: ${collection} has no vector field to compare a vector with`, {
      hint: 'search it by text, or see schema',
    });
  }
  if (vectors.length === 1) return first;
  throw new FenecError(
    'invalid_argument',
    `search: ${collection} has ${vectors.length} vector fields (${vectors.join(', ')}); search compares a vector with a collection's only one`,
    {
      hint: `use query with near: get ${collection} near ${first} $1 limit 10, the vector in params`,
    },
  );
}

function run(args: SearchArguments, context: ToolContext): ToolOutcome {
  const field = args.vector === undefined ? undefined : vectorFieldOf(args.collection, context);
  // Words alone, on a server that embeds, also search by meaning where a field embeds the collection's texts.
  const meaning =
    args.vector === undefined && args.text !== undefined && context.setup.embedder === true
      ? embeddingField(context.fields(checkName('search', 'collection', args.collection)))
      : undefined;
  const { read, params } = readOfShape(
    context,
    searchShape(args, field, meaning),
    () => searchStatement(args, field, meaning),
    () => searchParams(args),
  );
  return context.read(read, params, args.cursor, {
    choosesFields: (args.detail ?? 'fields') === 'fields',
    call: (limit, fields) => ({
      name: 'search',
      arguments: { ...args, limit, ...(fields === undefined ? {} : { fields }) },
    }),
  });
}

export const search = defineTool({
  name: 'search',
  input: INPUT,
  describe,
  switch: 'always',
  instructions:
    'search finds rows by words or a vector, best first, with a filter (a FenecQL condition such as "year >= $1").',
  audited: false,
  answersRows: true,
  run,
});
