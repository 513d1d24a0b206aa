/** `forget`: a memory of the --mcp-memory collection deleted by its id. */
import * as z from 'zod';
import type { Statement } from '../../fenecql/ast.js';
import { param } from '../../fenecql/bind.js';
import { NO_NARROWING } from '../bounds.js';
import { memoryOf, notMadeYet } from '../memory.js';
import { field } from '../statements.js';
import {
  defineTool,
  type Answer,
  type ArgumentsOf,
  type ToolContext,
  type ToolDescription,
  type ToolSetOptions,
} from '../tool.js';

const INPUT = z.strictObject({ id: z.int().describe("The memory's id.") });

function describe(options: ToolSetOptions): ToolDescription {
  return {
    title: 'Forget a memory',
    description: `Deletes a memory of ${options.memory} by its id (recall answers ids). Answers {"count": 1}, or 0 when there was none.`,
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
function forgetById(args: ArgumentsOf<typeof INPUT>, context: ToolContext): Answer {
  const statement: Statement = {
    kind: 'Del',
    collection: memoryOf(context.setup),
    where: { kind: 'Compare', op: '=', left: field('id'), right: param(1) },
  };
  try {
    return context.execute(statement, [args.id]);
  } catch (err) {
    if (notMadeYet(err, context.scoped)) return { count: 0 };
    throw err;
  }
}

export const forget = defineTool({
  name: 'forget',
  input: INPUT,
  describe,
  switch: 'memory',
  instructions: 'forget drops a memory by its id.',
  audited: true,
  answersRows: false,
  run: (args, context) => context.bounded(forgetById(args, context), NO_NARROWING),
});
