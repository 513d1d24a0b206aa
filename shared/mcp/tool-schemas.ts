/**
 * The pieces of input schemas and descriptions several tools share: what `params`, a filter, a
 * vector, a row, `detail`, `limit` and `cursor` take, what a page and the bounds are, and a read's
 * output schema.
 */
import * as z from 'zod';
import { BOUNDS } from './bounds.js';

export const PARAMS = z
  .array(z.unknown())
  .describe('Values bound to $1, $2, … in the statement or filter: values go here, never into the text.');

export const FILTER_TEXT =
  'A FenecQL condition alone, e.g. "year >= $1 and tags has $2", its values in params. Nothing else: no clause after it, no second statement.';

export const VECTOR = z.array(z.number()).min(1);

/** A row's fields and their values, as written: the database checks them, so no field is dropped or changed here. */
export type Row = Readonly<Record<string, unknown>>;

const isRow = (value: unknown): value is Row => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A row: any JSON object, passed on as it came (its message is what the refusal of another value says it takes). */
export const row = (description: string) =>
  z.custom<Row>(isRow, { error: 'an object' }).meta({ type: 'object', description });

export const TEXT_LIMIT_NOTE = `At most ${BOUNDS.rows} rows and ${BOUNDS.bytes / 1024} KB are answered; a larger answer is refused with a narrower call that fits.`;

/** How much of each row `search` and `recall` answer. */
export const DETAIL = (fields: string) =>
  z
    .enum(['ids', 'fields', 'full'])
    .describe(
      `How much of each row: "ids" (id, _score and snippet only — a fraction of the bytes), "fields" (${fields}; the default) or "full" (every field, vectors too). ` +
        'Search with "ids" first, then read the rows you need by id.',
    );

export type Detail = z.output<ReturnType<typeof DETAIL>>;

/** A page size of at least one row. */
export const LIMIT = (description: string) => z.int().min(1).describe(description);

export const CURSOR = z
  .string()
  .describe(
    'next_cursor of the page before, to answer the rows after it; the other arguments as they were (limit and the fields answered may change).',
  );

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
