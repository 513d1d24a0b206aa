/** `forget`: a memory of the --mcp-memory collection deleted by its id. */
import type { Statement } from '../../fenecql/ast.js';
import { param } from '../../fenecql/bind.js';
import { NO_NARROWING } from '../bounds.js';
import { notMadeYet } from '../memory.js';
import { field } from '../statements.js';
import type { Answer, Arguments, Tool, ToolContext, ToolDefinition, ToolSetOptions } from '../tool.js';

function define(options: ToolSetOptions): ToolDefinition<'forget'> {
  return {
    name: 'forget',
    title: 'Forget a memory',
    description: `Deletes a memory of ${options.memory} by its id (recall answers ids). Answers {"count": 1}, or 0 when there was none.`,
    inputSchema: {
      type: 'object',
      properties: { id: { type: 'integer', description: "The memory's id." } },
      required: ['id'],
      additionalProperties: false,
    },
    outputSchema: { type: 'object', properties: { count: { type: 'integer' } } },
    annotations: {
      title: 'Forget a memory',
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    },
  };
}

/** `del C where id = $1`. */
function forgetById(args: Arguments, context: ToolContext): Answer {
  const statement: Statement = {
    kind: 'Del',
    collection: context.setup.memory!,
    where: { kind: 'Compare', op: '=', left: field('id'), right: param(1) },
  };
  try {
    return context.execute(statement, [args.id]);
  } catch (err) {
    if (notMadeYet(err, context.scoped)) return { count: 0 };
    throw err;
  }
}

export const forget: Tool<'forget'> = {
  name: 'forget',
  define,
  switch: 'memory',
  instructions: 'forget drops a memory by its id.',
  audited: true,
  answersRows: false,
  run: (args, context) => context.bounded(forgetById(args, context), NO_NARROWING),
};
