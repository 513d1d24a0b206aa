/**
 * The pieces of input schemas and descriptions several tools share: what `params`, a filter, a
 * vector, `detail` and `cursor` take, what a page and the bounds are, and a read's output schema.
 */
import { BOUNDS } from './bounds.js';
import type { ArgSchema } from './tool.js';

export const PARAMS: ArgSchema = {
  type: 'array',
  description: 'Values bound to $1, $2, … in the statement or filter: values go here, never into the text.',
};

export const FILTER_TEXT =
  'A FenecQL condition alone, e.g. "year >= $1 and tags has $2", its values in params. Nothing else: no clause after it, no second statement.';

export const VECTOR: ArgSchema = { type: 'array', items: { type: 'number' }, minItems: 1 };

export const TEXT_LIMIT_NOTE = `At most ${BOUNDS.rows} rows and ${BOUNDS.bytes / 1024} KB are answered; a larger answer is refused with a narrower call that fits.`;

/** How much of each row `search` and `recall` answer. */
export type Detail = 'ids' | 'fields' | 'full';

export const DETAIL = (fields: string): ArgSchema => ({
  type: 'string',
  enum: ['ids', 'fields', 'full'],
  description:
    `How much of each row: "ids" (id, _score and snippet only — a fraction of the bytes), "fields" (${fields}; the default) or "full" (every field, vectors too). ` +
    'Search with "ids" first, then read the rows you need by id.',
});

export const CURSOR: ArgSchema = {
  type: 'string',
  description:
    'next_cursor of the page before, to answer the rows after it; the other arguments as they were (limit and the fields answered may change).',
};

export const PAGES_NOTE =
  'When more rows follow, the answer carries next_cursor: call again with it as cursor for the next page.';

export const ROWS_OUTPUT = {
  type: 'object',
  properties: {
    rows: { type: 'array', items: { type: 'object' } },
    count: { type: 'integer' },
    next_cursor: { type: 'string' },
  },
} as const;

/** The annotations of a tool that only reads. */
export const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** The output schema of a tool that writes rows: how many, and the ids of those inserted. */
export const WRITTEN_OUTPUT = {
  type: 'object',
  properties: { count: { type: 'integer' }, ids: { type: 'array', items: { type: 'integer' } } },
} as const;
