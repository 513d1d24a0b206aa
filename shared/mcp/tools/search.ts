/**
 * `search`: rows of a collection by words (match over every @text field), by a vector (near over
 * its one vector field), or both (fused), best first, filtered by a FenecQL condition.
 */
import type { GetStmt } from '../../fenecql/ast.js';
import { Params } from '../../fenecql/bind.js';
import { FenecError } from '../../errors.js';
import { checkName } from '../arguments.js';
import { detailSelect, int, parseFilter, readOfShape, type Bound } from '../statements.js';
import type { Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome } from '../tool.js';
import {
  CURSOR,
  DETAIL,
  FILTER_TEXT,
  PAGES_NOTE,
  PARAMS,
  READ,
  ROWS_OUTPUT,
  TEXT_LIMIT_NOTE,
  VECTOR,
} from '../tool-schemas.js';

export const DEFAULT_SEARCH_LIMIT = 10;

const DEFINITION: ToolDefinition<'search'> = {
  name: 'search',
  title: 'Search a collection',
  description:
    'Finds rows of a collection by words (BM25 over its @text fields), by a vector (nearest neighbours of its vector field), or both (fused), best first, ' +
    'filtered by a FenecQL condition. Rows carry _score, and snippet for words. ' +
    'Example: {"collection": "docs", "text": "fox", "filter": "year >= $1", "params": [2024]}. ' +
    `A vector must be made with the model the collection was filled with, and be of its field's length. ` +
    'Search narrow: detail "ids" answers id, _score and snippet alone; then read the rows you need by id with query ({"statement": "get docs where id in $1", "params": [[3, 7]]}). ' +
    `${PAGES_NOTE} ${TEXT_LIMIT_NOTE}`,
  inputSchema: {
    type: 'object',
    properties: {
      collection: { type: 'string', description: 'The collection to search (schema lists them).' },
      text: { type: 'string', description: 'Words to find, as a person writes them.' },
      vector: { ...VECTOR, description: "An embedding to find the nearest rows to, of the vector field's length." },
      filter: { type: 'string', description: FILTER_TEXT },
      params: PARAMS,
      fields: {
        type: 'array',
        items: { type: 'string' },
        description:
          'The fields to answer (id is always kept), with detail "fields". Default: every field but vectors; naming a vector field keeps it.',
      },
      detail: DETAIL('every field but vectors, or those fields names'),
      limit: {
        type: 'integer',
        minimum: 1,
        description: `How many rows, best first: the page size. Default ${DEFAULT_SEARCH_LIMIT}.`,
      },
      cursor: CURSOR,
    },
    required: ['collection'],
    additionalProperties: false,
  },
  outputSchema: ROWS_OUTPUT,
  annotations: { title: 'Search a collection', ...READ },
};

/**
 * What makes two search calls run the same tree: everything but the values bound. The values of a
 * call are its params, then its text, then its vector — the order searchStatement binds them in.
 */
function searchShape(args: Arguments, vectorField: string | undefined): string {
  const given = args.params == null ? 0 : (args.params as unknown[]).length;
  return JSON.stringify([
    'search',
    args.collection,
    args.filter ?? null,
    args.fields ?? null,
    args.detail ?? null,
    args.limit ?? null,
    given,
    args.text != null,
    vectorField ?? null,
  ]);
}

function searchParams(args: Arguments): unknown[] {
  const values = args.params == null ? [] : [...(args.params as unknown[])];
  if (args.text != null) values.push(args.text);
  if (args.vector != null) values.push(args.vector);
  return values;
}

/** match over every @text field, near over the collection's vector field, fused when both. */
function searchStatement(args: Arguments, vectorField: string | undefined): Bound<GetStmt> {
  const collection = checkName('search', 'collection', args.collection as string);
  const params = new Params(args.params);
  const where = args.filter == null ? undefined : parseFilter('search', args.filter as string, params.values.length);
  const fields = detailSelect(
    'search',
    args,
    args.fields == null ? null : (args.fields as string[]).map((name, i) => checkName('search', `fields[${i}]`, name)),
  );
  const text = args.text == null ? undefined : params.add(args.text);
  const vector = args.vector == null ? undefined : params.add(args.vector);
  const statement: GetStmt = {
    kind: 'Get',
    collection,
    select: fields,
    ...(text === undefined ? {} : { match: { field: '*', query: text } }),
    ...(vector === undefined ? {} : { near: { field: vectorField!, vector } }),
    fuse: text !== undefined && vector !== undefined,
    ...(where === undefined ? {} : { where }),
    order: [],
    limit: int((args.limit as number | undefined) ?? DEFAULT_SEARCH_LIMIT),
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
  if (vectors.length === 1) return vectors[0]!;
  if (vectors.length === 0) {
    throw new FenecError('invalid_argument', `search: ${collection} has no vector field to compare a vector with`, {
      hint: 'search it by text, or see schema',
    });
  }
  throw new FenecError(
    'invalid_argument',
    `search: ${collection} has ${vectors.length} vector fields (${vectors.join(', ')}); search compares a vector with a collection's only one`,
    {
      hint: `use query with near: get ${collection} near ${vectors[0]} $1 limit 10, the vector in params`,
    },
  );
}

function run(args: Arguments, context: ToolContext): ToolOutcome {
  const field = args.vector == null ? undefined : vectorFieldOf(args.collection as string, context);
  const { read, params } = readOfShape(
    context,
    searchShape(args, field),
    () => searchStatement(args, field),
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

export const search: Tool<'search'> = {
  name: 'search',
  define: () => DEFINITION,
  switch: 'always',
  instructions:
    'search finds rows by words or a vector, best first, with a filter (a FenecQL condition such as "year >= $1").',
  audited: false,
  answersRows: true,
  run,
};
