/**
 * `query`: one FenecQL read (get … or schema), its text parsed once for calls of the same
 * statement, and run as the tree it parsed to. Vector fields are left out unless asked for.
 */
import * as z from 'zod';
import type { GetStmt } from '../../fenecql/ast.js';
import { kindsOver, runsOver, type McpStatement } from '../../fenecql/kinds.js';
import { parseStatement } from '../../fenecql/parser.js';
import { printStatement } from '../../fenecql/print.js';
import { FenecError } from '../../errors.js';
import { NO_NARROWING } from '../bounds.js';
import { defineTool, type ArgumentsOf, type ToolContext, type ToolDescription, type ToolOutcome } from '../tool.js';
import { CURSOR, PAGES_NOTE, PARAMS, READ, ROWS_OUTPUT, TEXT_LIMIT_NOTE } from '../tool-schemas.js';

const INPUT = z.strictObject({
  statement: z
    .string()
    .describe(
      'One FenecQL read: get COLLECTION [select …] [match …] [near …] [where …] [order …] [limit N], or schema [COLLECTION].',
    ),
  params: PARAMS.optional(),
  include_vectors: z
    .boolean()
    .describe('Keep vector fields in the rows (an embedding is kilobytes of numbers). Default false.')
    .optional(),
  cursor: CURSOR.optional(),
});

const DESCRIPTION: ToolDescription = {
  title: 'Run a FenecQL read',
  description:
    'Runs one FenecQL read statement (get … or schema) and answers its JSON: {"rows": [...], "count": n}, {"count": n} for get … count. ' +
    'Example: {"statement": "get notes select title, year where year >= $1 order year desc limit 20", "params": [2024]}. ' +
    `Vector fields are left out of rows unless include_vectors is true. The limit is the page size: ${PAGES_NOTE} ${TEXT_LIMIT_NOTE}`,
  outputSchema: {
    type: 'object',
    properties: { ...ROWS_OUTPUT.properties, collections: { type: 'array' }, note: { type: 'string' } },
  },
  annotations: { title: 'Run a FenecQL read', ...READ },
};

/** The statements the kinds table lets `query` run, as the refusal of any other names them. */
const READS = kindsOver('query')
  .map((kind) => kind.toLowerCase())
  .join(', ');

/**
 * The statement as a read the kinds table lets `query` run. Any other is refused: writes go
 * through `write`, which never changes a schema.
 *
 * @throws FenecError the parse error, or `forbidden` for a statement that is not one.
 */
function readOf(text: string): McpStatement<'query'> {
  const statement = parseStatement(text);
  if (!runsOver('query', statement)) {
    const kind = statement.kind.toLowerCase();
    throw new FenecError(
      'forbidden',
      `query runs reads (${READS}); this statement is a${/^[aeiou]/.test(kind) ? 'n' : ''} ${kind}`,
      {
        hint: 'rows are written with the write tool, where the server offers it (--mcp-write); schemas and compact are never changed over MCP',
      },
    );
  }
  return statement;
}

/**
 * The fields a read answers: vector fields left out unless `include_vectors`, and the note that says
 * so when the select named one.
 */
function answered(
  statement: GetStmt,
  includeVectors: boolean,
  context: ToolContext,
): { select: GetStmt['select']; keep: boolean; note?: string } {
  const { select } = statement;
  if (includeVectors) return { select: select ?? '*', keep: true };
  if (select === '*' || select === null) return { select: null, keep: true };
  // Which fields hold vectors is the schema's to say, and it may change: such a read is not kept.
  const vectors = new Set(
    context
      .fields(statement.collection)
      .filter((f) => f.type.startsWith('vector<'))
      .map((f) => f.name),
  );
  const left = select.filter((f) => vectors.has(f));
  if (left.length === 0) return { select, keep: false };
  return { select: select.filter((f) => !vectors.has(f)), keep: false, note: vectorsLeftOut(left) };
}

/** What a read is told of the vector fields its select named and its rows leave out. */
function vectorsLeftOut(fields: readonly string[]): string {
  const named = fields.join(' and ');
  const are = fields.length === 1 ? 'is a vector field' : 'are vector fields';
  return `${named} ${are}, left out of the rows (an embedding is kilobytes of numbers); call again with "include_vectors": true to keep ${fields.length === 1 ? 'it' : 'them'}`;
}

function run(args: ArgumentsOf<typeof INPUT>, context: ToolContext): ToolOutcome {
  const params = args.params ?? [];
  const includeVectors = args.include_vectors === true;
  const key = `${includeVectors ? 'query+v' : 'query'}\u0000${args.statement}`;
  let prepared = context.kept(key);
  if (prepared === undefined) {
    const statement = readOf(args.statement);
    if (statement.kind === 'Schema') return context.bounded(context.execute(statement, params), NO_NARROWING);
    const { select, keep, note } = answered(statement, includeVectors, context);
    prepared = context.prepare(statement, { ...statement, select }, keep ? key : undefined, note);
  }
  const { requested } = prepared;
  return context.read(prepared, params, args.cursor, {
    choosesFields: true,
    call: (limit, fields) => ({
      name: 'query',
      arguments: {
        ...args,
        statement: printStatement({
          ...requested,
          select: fields ?? requested.select,
          limit: { kind: 'Literal', type: 'int', value: limit },
        }),
      },
    }),
  });
}

export const query = defineTool({
  name: 'query',
  input: INPUT,
  describe: () => DESCRIPTION,
  switch: 'always',
  instructions: 'query runs a FenecQL read (get …).',
  audited: false,
  answersRows: true,
  run,
});
