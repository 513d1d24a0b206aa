/** `schema [collection]`: the collections the caller may read, with their fields. */
import * as z from 'zod';
import type { SchemaStmt } from '../../fenecql/ast.js';
import { checkName } from '../arguments.js';
import { NO_NARROWING } from '../bounds.js';
import { defineTool, type ArgumentsOf, type ToolContext, type ToolDescription, type ToolOutcome } from '../tool.js';
import { READ } from '../tool-schemas.js';

const INPUT = z.strictObject({
  collection: z.string().describe('One collection only. Default: all of them.').optional(),
});

const DESCRIPTION: ToolDescription = {
  title: 'List collections and fields',
  description:
    'Lists the collections this token may read, each with its fields, their types and annotations (@text: searchable by words, @hnsw: by vector). ' +
    'Counts no rows. Call it first to learn what there is.',
  outputSchema: { type: 'object', properties: { collections: { type: 'array' } } },
  annotations: { title: 'List collections and fields', ...READ },
};

function run(args: ArgumentsOf<typeof INPUT>, context: ToolContext): ToolOutcome {
  const statement: SchemaStmt =
    args.collection === undefined
      ? { kind: 'Schema' }
      : { kind: 'Schema', collection: checkName('schema', 'collection', args.collection) };
  return context.bounded(context.execute(statement, []), NO_NARROWING);
}

export const schema = defineTool({
  name: 'schema',
  input: INPUT,
  describe: () => DESCRIPTION,
  switch: 'always',
  instructions:
    'schema lists the collections, their fields and which are searchable (@text by words, @hnsw by vector): call it first.',
  audited: false,
  answersRows: false,
  run,
});
