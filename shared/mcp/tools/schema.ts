/** `schema [collection]`: the collections the caller may read, with their fields. */
import type { SchemaStmt } from '../../fenecql/ast.js';
import { checkName } from '../arguments.js';
import { NO_NARROWING } from '../bounds.js';
import type { Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome } from '../tool.js';
import { READ } from '../tool-schemas.js';

const DEFINITION: ToolDefinition<'schema'> = {
  name: 'schema',
  title: 'List collections and fields',
  description:
    'Lists the collections this token may read, each with its fields, their types and annotations (@text: searchable by words, @hnsw: by vector). ' +
    'Counts no rows. Call it first to learn what there is.',
  inputSchema: {
    type: 'object',
    properties: { collection: { type: 'string', description: 'One collection only. Default: all of them.' } },
    additionalProperties: false,
  },
  outputSchema: { type: 'object', properties: { collections: { type: 'array' } } },
  annotations: { title: 'List collections and fields', ...READ },
};

function run(args: Arguments, context: ToolContext): ToolOutcome {
  const collection = args.collection == null ? undefined : checkName('schema', 'collection', args.collection as string);
  const statement: SchemaStmt = collection === undefined ? { kind: 'Schema' } : { kind: 'Schema', collection };
  return context.bounded(context.execute(statement, []), NO_NARROWING);
}

export const schema: Tool<'schema'> = {
  name: 'schema',
  define: () => DEFINITION,
  switch: 'always',
  instructions:
    'schema lists the collections, their fields and which are searchable (@text by words, @hnsw by vector): call it first.',
  audited: false,
  answersRows: false,
  run,
};
