/**
 * `write`: one insert, put, set or del, built here as a tree — never a schema change or compact,
 * whatever the token. Each field value of a row is a parameter.
 */
import type { ObjectEntry, ObjectExpr, Statement } from '../../fenecql/ast.js';
import { Params, param } from '../../fenecql/bind.js';
import { FenecError } from '../../errors.js';
import { checkName } from '../arguments.js';
import { NO_NARROWING } from '../bounds.js';
import { parseFilter } from '../statements.js';
import type { ArgSchema, Arguments, Tool, ToolContext, ToolDefinition, ToolOutcome } from '../tool.js';
import { FILTER_TEXT, PARAMS, WRITTEN_OUTPUT } from '../tool-schemas.js';

/**
 * The most rows one `write` takes: its answer names every id, and 2 000 ids of up to 16 digits stay
 * inside the byte bound, so a write is never refused after it has committed. Larger loads go
 * through /query (`insert into C $1`) or `fenec import`.
 */
export const WRITE_ROWS = 2000;

const ROW: ArgSchema = { type: 'object', description: 'A row: field names and JSON values.' };

const DEFINITION: ToolDefinition<'write'> = {
  name: 'write',
  title: 'Write rows',
  description:
    'Writes rows of a collection: exactly one of insert (a row or an array of rows; answers their ids), put (a row with its id, or an array of them: replaces each or creates it), ' +
    'set (the fields to change, on the rows filter matches) or del (true: deletes the rows filter matches). ' +
    'Example: {"collection": "notes", "set": {"done": true}, "filter": "id = $1", "params": [7]}. Never changes a collection\'s schema.',
  inputSchema: {
    type: 'object',
    properties: {
      collection: { type: 'string', description: 'The collection written.' },
      insert: {
        type: ['object', 'array'],
        items: ROW,
        minItems: 1,
        maxItems: WRITE_ROWS,
        description: `A row, or an array of up to ${WRITE_ROWS} rows (all or none are written).`,
      },
      put: {
        type: ['object', 'array'],
        items: ROW,
        minItems: 1,
        maxItems: WRITE_ROWS,
        description: `A row with its id, or an array of up to ${WRITE_ROWS} of them (all or none are written).`,
      },
      set: { type: 'object', description: 'The fields to change and their new values; filter names the rows.' },
      del: { type: 'boolean', const: true, description: 'true: delete the rows filter matches.' },
      filter: {
        type: 'string',
        description: `For set and del, which rows (required; "true" for all of them). ${FILTER_TEXT}`,
      },
      params: { ...PARAMS, description: 'Values bound to $1, $2, … in filter.' },
    },
    required: ['collection'],
    additionalProperties: false,
  },
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
function writeStatement(args: Arguments): { statement: Statement; params: readonly unknown[] } {
  const collection = checkName('write', 'collection', args.collection as string);
  const verbs = WRITE_VERBS.filter((verb) => args[verb] != null);
  if (verbs.length !== 1) {
    throw new FenecError(
      'invalid_argument',
      `write takes exactly one of insert, put, set and del, not ${verbs.length === 0 ? 'none' : verbs.join(' and ')}`,
      {
        hint: 'e.g. {"collection": "notes", "insert": {"title": "…"}} or {"collection": "notes", "del": true, "filter": "id = $1", "params": [7]}',
      },
    );
  }
  const verb = verbs[0]!;
  const params = new Params(args.params);
  const needsFilter = verb === 'set' || verb === 'del';
  if (!needsFilter && args.filter != null) {
    throw new FenecError('invalid_argument', `write: filter is for set and del; ${verb} names its rows itself`);
  }
  if (needsFilter && args.filter == null) {
    throw new FenecError('invalid_argument', `write: ${verb} needs a filter naming its rows`, {
      hint: 'e.g. "filter": "id = $1" with "params": [7]; "true" for every row',
    });
  }
  const where = needsFilter ? parseFilter('write', args.filter as string, params.values.length) : undefined;
  switch (verb) {
    case 'insert':
    case 'put':
      // A bulk write: the rows are one parameter, checked by the database as rows written out are.
      return {
        statement:
          verb === 'insert'
            ? { kind: 'Insert', collection, rows: param(1), many: true }
            : { kind: 'Put', collection, row: param(1) },
        params: [checkedRows(verb, args[verb])],
      };
    case 'set':
      return {
        statement: {
          kind: 'Set',
          collection,
          changes: rowExpr('set', args.set as Record<string, unknown>, params),
          where: where!,
        },
        params: params.values,
      };
    case 'del':
      return { statement: { kind: 'Del', collection, where: where! }, params: params.values };
  }
}

/**
 * A write's rows (a row or an array of them, objects as the tool's schema checked), their field names held to FenecQL's
 * rule for a name.
 */
function checkedRows(verb: 'insert' | 'put', value: unknown): unknown {
  const rows = (Array.isArray(value) ? value : [value]) as Record<string, unknown>[];
  rows.forEach((row, i) => {
    for (const key of Object.keys(row))
      checkName('write', `${verb}${Array.isArray(value) ? `[${i}]` : ''}: a field`, key);
  });
  return value;
}

function rowExpr(path: string, row: Record<string, unknown>, params: Params): ObjectExpr {
  const entries: ObjectEntry[] = [];
  for (const [key, value] of Object.entries(row)) {
    checkName('write', `${path}: a field`, key);
    entries.push({ key, value: value === null ? { kind: 'Literal', type: 'null', value: null } : params.add(value) });
  }
  return { kind: 'Object', entries };
}

function run(args: Arguments, context: ToolContext): ToolOutcome {
  const { statement, params } = writeStatement(args);
  return context.bounded(context.execute(statement, params), NO_NARROWING);
}

export const write: Tool<'write'> = {
  name: 'write',
  define: () => DEFINITION,
  switch: 'write',
  instructions: 'write inserts, puts, sets or deletes rows.',
  audited: true,
  answersRows: false,
  run,
};
