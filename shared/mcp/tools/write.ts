/**
 * `write`: one insert, put, set or del, built here as a tree — never a schema change or compact,
 * whatever the token. Each field value of a row is a parameter.
 */
import * as z from 'zod';
import type { Cond, ObjectEntry, ObjectExpr, Statement } from '../../fenecql/ast.js';
import { Params, param } from '../../fenecql/bind.js';
import { FenecError } from '../../errors.js';
import { checkName, TOO_MANY } from '../arguments.js';
import { NO_NARROWING } from '../bounds.js';
import { parseFilter } from '../statements.js';
import { defineTool, type ArgumentsOf, type ToolContext, type ToolDescription, type ToolOutcome } from '../tool.js';
import { FILTER_TEXT, PARAMS, row, WRITTEN_OUTPUT, type Row } from '../tool-schemas.js';

/**
 * The most rows one `write` takes: its answer names every id, and 2 000 ids of up to 16 digits stay
 * inside the byte bound, so a write is never refused after it has committed. Larger loads go
 * through /query (`insert into C $1`) or `fenec import`.
 */
export const WRITE_ROWS = 2000;

const ROW = row('A row: field names and JSON values.');

/** A row, or an array of up to WRITE_ROWS of them; past that, the refusal says where a bulk load goes. */
const rows = (description: string) =>
  z
    .union([ROW, z.array(ROW).min(1).max(WRITE_ROWS)])
    .describe(description)
    .optional()
    .register(TOO_MANY, {
      hint: 'split the rows over several calls; a bulk load goes through /query (insert into C $1) or fenec import',
    });

const INPUT = z.strictObject({
  collection: z.string().describe('The collection written.'),
  insert: rows(`A row, or an array of up to ${WRITE_ROWS} rows (all or none are written).`),
  put: rows(`A row with its id, or an array of up to ${WRITE_ROWS} of them (all or none are written).`),
  set: row('The fields to change and their new values; filter names the rows.').optional(),
  del: z.literal(true).describe('true: delete the rows filter matches.').optional(),
  filter: z
    .string()
    .describe(`For set and del, which rows (required; "true" for all of them). ${FILTER_TEXT}`)
    .optional(),
  params: PARAMS.describe('Values bound to $1, $2, … in filter.').optional(),
});

type WriteArguments = ArgumentsOf<typeof INPUT>;

const DESCRIPTION: ToolDescription = {
  title: 'Write rows',
  description:
    'Writes rows of a collection: exactly one of insert (a row or an array of rows; answers their ids), put (a row with its id, or an array of them: replaces each or creates it), ' +
    'set (the fields to change, on the rows filter matches) or del (true: deletes the rows filter matches). ' +
    'Example: {"collection": "notes", "set": {"done": true}, "filter": "id = $1", "params": [7]}. Never changes a collection\'s schema.',
  outputSchema: WRITTEN_OUTPUT,
  annotations: {
    title: 'Write rows',
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: false,
    openWorldHint: false,
  },
};

const WRITE_VERBS = ['insert', 'put', 'set', 'del'] as const;

/** The statement a call writes with, and the values bound to its parameters. */
function writeStatement(args: WriteArguments): { statement: Statement; params: readonly unknown[] } {
  const collection = checkName('write', 'collection', args.collection);
  const verbs = WRITE_VERBS.filter((verb) => args[verb] !== undefined);
  const [verb] = verbs;
  if (verb === undefined || verbs.length !== 1) {
    throw new FenecError(
      'invalid_argument',
      `write takes exactly one of insert, put, set and del, not ${verbs.length === 0 ? 'none' : verbs.join(' and ')}`,
      {
        hint: 'e.g. {"collection": "notes", "insert": {"title": "…"}} or {"collection": "notes", "del": true, "filter": "id = $1", "params": [7]}',
      },
    );
  }
  const params = new Params(args.params);
  if (verb === 'insert' || verb === 'put') {
    if (args.filter !== undefined) {
      throw new FenecError('invalid_argument', `write: filter is for set and del; ${verb} names its rows itself`);
    }
    // A bulk write: the rows are one parameter, checked by the database as rows written out are.
    const written = checkedRows(verb, args[verb]);
    return {
      statement:
        verb === 'insert'
          ? { kind: 'Insert', collection, rows: param(1), many: true }
          : { kind: 'Put', collection, row: param(1) },
      params: [written],
    };
  }
  const where = filterOf(verb, args.filter, params);
  // Exactly one verb is given: without set, it is del.
  if (args.set === undefined) return { statement: { kind: 'Del', collection, where }, params: params.values };
  const changes = rowExpr('set', args.set, params);
  return { statement: { kind: 'Set', collection, changes, where }, params: params.values };
}

/** The rows set and del change: their filter, which they need. */
function filterOf(verb: 'set' | 'del', filter: string | undefined, params: Params): Cond {
  if (filter === undefined) {
    throw new FenecError('invalid_argument', `write: ${verb} needs a filter naming its rows`, {
      hint: 'e.g. "filter": "id = $1" with "params": [7]; "true" for every row',
    });
  }
  return parseFilter('write', filter, params.values.length);
}

/** A write's rows (a row or an array of them), their field names held to FenecQL's rule for a name. */
function checkedRows(verb: 'insert' | 'put', value: Row | readonly Row[] | undefined): unknown {
  const many = Array.isArray(value);
  const rows: readonly Row[] = value === undefined ? [] : many ? value : [value];
  rows.forEach((row, i) => {
    for (const key of Object.keys(row)) checkName('write', `${verb}${many ? `[${i}]` : ''}: a field`, key);
  });
  return value;
}

function rowExpr(path: string, row: Row, params: Params): ObjectExpr {
  const entries: ObjectEntry[] = [];
  for (const [key, value] of Object.entries(row)) {
    checkName('write', `${path}: a field`, key);
    entries.push({ key, value: value === null ? { kind: 'Literal', type: 'null', value: null } : params.add(value) });
  }
  return { kind: 'Object', entries };
}

function run(args: WriteArguments, context: ToolContext): ToolOutcome {
  const { statement, params } = writeStatement(args);
  return context.bounded(context.execute(statement, params), NO_NARROWING);
}

export const write = defineTool({
  name: 'write',
  input: INPUT,
  describe: () => DESCRIPTION,
  switch: 'write',
  instructions: 'write inserts, puts, sets or deletes rows.',
  audited: true,
  answersRows: false,
  run,
});
