/**
 * The tools fenecdb offers over MCP, as `tools/list` shows them: names, descriptions, input and
 * output schemas, annotations. The input schemas are also what arguments are checked against
 * (arguments.ts), so what a model is told and what it is held to cannot drift apart.
 */

/** The subset of JSON Schema the tools' arguments use, and that arguments.ts checks. */
export interface ArgSchema {
  readonly type: 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object' | readonly ('array' | 'object')[];
  readonly description?: string;
  readonly items?: ArgSchema;
  readonly minimum?: number;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly pattern?: string;
  readonly const?: unknown;
  readonly enum?: readonly string[];
}

export interface InputSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, ArgSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties: false;
}

/** Every tool a fenecdb server can offer, in the order tools/list shows them. */
export const TOOL_NAMES = Object.freeze(['query', 'search', 'schema', 'write', 'remember', 'recall', 'forget'] as const);
export type ToolName = (typeof TOOL_NAMES)[number];

export interface ToolDefinition {
  readonly name: ToolName;
  readonly title: string;
  readonly description: string;
  readonly inputSchema: InputSchema;
  readonly outputSchema: { readonly type: 'object'; readonly properties?: Readonly<Record<string, unknown>> };
  readonly annotations: {
    readonly title: string;
    readonly readOnlyHint: boolean;
    readonly destructiveHint: boolean;
    readonly idempotentHint: boolean;
    readonly openWorldHint: false;
  };
}

/** What a tool's answer may be past: beyond these it is refused whole, with a narrower call to make. */
export const BOUNDS = Object.freeze({ rows: 100, bytes: 64 * 1024 });

/**
 * The most rows one `write` takes: its answer names every id, and 2 000 ids of up to 16 digits stay
 * inside the byte bound, so a write is never refused after it has committed. Larger loads go
 * through /query (`insert into C $1`) or `fenec import`.
 */
export const WRITE_ROWS = 2000;

export const DEFAULT_SEARCH_LIMIT = 10;
export const DEFAULT_RECALL_LIMIT = 5;

const PARAMS: ArgSchema = {
  type: 'array',
  description: 'Values bound to $1, $2, … in the statement or filter: values go here, never into the text.',
};
const FILTER_TEXT =
  'A FenecQL condition alone, e.g. "year >= $1 and tags has $2", its values in params. Nothing else: no clause after it, no second statement.';
const VECTOR: ArgSchema = { type: 'array', items: { type: 'number' }, minItems: 1 };
const TEXT_LIMIT_NOTE = `At most ${BOUNDS.rows} rows and ${BOUNDS.bytes / 1024} KB are answered; a larger answer is refused with a narrower call that fits.`;

/** How much of each row `search` and `recall` answer. */
export type Detail = 'ids' | 'fields' | 'full';
const DETAIL = (fields: string): ArgSchema => ({
  type: 'string',
  enum: ['ids', 'fields', 'full'],
  description:
    `How much of each row: "ids" (id, _score and snippet only — a fraction of the bytes), "fields" (${fields}; the default) or "full" (every field, vectors too). ` +
    'Search with "ids" first, then read the rows you need by id.',
});

const CURSOR: ArgSchema = {
  type: 'string',
  description: 'next_cursor of the page before, to answer the rows after it; the other arguments as they were (limit and the fields answered may change).',
};
const PAGES_NOTE = 'When more rows follow, the answer carries next_cursor: call again with it as cursor for the next page.';

const ROWS_OUTPUT = {
  type: 'object',
  properties: {
    rows: { type: 'array', items: { type: 'object' } },
    count: { type: 'integer' },
    next_cursor: { type: 'string' },
  },
} as const;

const READ = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

const QUERY: ToolDefinition = {
  name: 'query',
  title: 'Run a FenecQL read',
  description:
    'Runs one FenecQL read statement (get … or schema) and answers its JSON: {"rows": [...], "count": n}, {"count": n} for get … count. ' +
    'Example: {"statement": "get notes select title, year where year >= $1 order year desc limit 20", "params": [2024]}. ' +
    `Vector fields are left out of rows unless include_vectors is true. The limit is the page size: ${PAGES_NOTE} ${TEXT_LIMIT_NOTE}`,
  inputSchema: {
    type: 'object',
    properties: {
      statement: { type: 'string', description: 'One FenecQL read: get COLLECTION [select …] [match …] [near …] [where …] [order …] [limit N], or schema [COLLECTION].' },
      params: PARAMS,
      include_vectors: { type: 'boolean', description: 'Keep vector fields in the rows (an embedding is kilobytes of numbers). Default false.' },
      cursor: CURSOR,
    },
    required: ['statement'],
    additionalProperties: false,
  },
  outputSchema: { type: 'object', properties: { ...ROWS_OUTPUT.properties, collections: { type: 'array' } } },
  annotations: { title: 'Run a FenecQL read', ...READ },
};

const SEARCH: ToolDefinition = {
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
      vector: { ...VECTOR, description: 'An embedding to find the nearest rows to, of the vector field\'s length.' },
      filter: { type: 'string', description: FILTER_TEXT },
      params: PARAMS,
      fields: { type: 'array', items: { type: 'string' }, description: 'The fields to answer (id is always kept), with detail "fields". Default: every field but vectors; naming a vector field keeps it.' },
      detail: DETAIL('every field but vectors, or those fields names'),
      limit: { type: 'integer', minimum: 1, description: `How many rows, best first: the page size. Default ${DEFAULT_SEARCH_LIMIT}.` },
      cursor: CURSOR,
    },
    required: ['collection'],
    additionalProperties: false,
  },
  outputSchema: ROWS_OUTPUT,
  annotations: { title: 'Search a collection', ...READ },
};

const SCHEMA: ToolDefinition = {
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

const ROW: ArgSchema = { type: 'object', description: 'A row: field names and JSON values.' };

const WRITE: ToolDefinition = {
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
      insert: { type: ['object', 'array'], items: ROW, minItems: 1, maxItems: WRITE_ROWS, description: `A row, or an array of up to ${WRITE_ROWS} rows (all or none are written).` },
      put: { type: ['object', 'array'], items: ROW, minItems: 1, maxItems: WRITE_ROWS, description: `A row with its id, or an array of up to ${WRITE_ROWS} of them (all or none are written).` },
      set: { type: 'object', description: 'The fields to change and their new values; filter names the rows.' },
      del: { type: 'boolean', const: true, description: 'true: delete the rows filter matches.' },
      filter: { type: 'string', description: `For set and del, which rows (required; "true" for all of them). ${FILTER_TEXT}` },
      params: { ...PARAMS, description: 'Values bound to $1, $2, … in filter.' },
    },
    required: ['collection'],
    additionalProperties: false,
  },
  outputSchema: { type: 'object', properties: { count: { type: 'integer' }, ids: { type: 'array', items: { type: 'integer' } } } },
  annotations: { title: 'Write rows', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
};

function memoryTools(collection: string): ToolDefinition[] {
  return [
    {
      name: 'remember',
      title: 'Remember a sentence',
      description:
        `Keeps a memory (a sentence worth recalling in a later conversation) in ${collection}. ` +
        'tags group memories, expires_in lets one go after a while (30m, 12h, 7d; kept for good without it), ' +
        'vector is its embedding if you have a model (all memories with vectors must share one model and length). ' +
        'Example: {"text": "the deploy runs on fridays", "tags": ["ops"]}. Answers its id.',
      inputSchema: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'The memory, one self-contained sentence.' },
          tags: { type: 'array', items: { type: 'string' }, description: 'Words to group and recall it by.' },
          expires_in: { type: 'string', pattern: '^[0-9]+(ms|s|m|h|d|w)$', description: 'How long it is kept: 30m, 12h, 7d. Default: for good.' },
          vector: { ...VECTOR, description: 'Its embedding, from the same model as the other memories.' },
        },
        required: ['text'],
        additionalProperties: false,
      },
      outputSchema: { type: 'object', properties: { count: { type: 'integer' }, ids: { type: 'array', items: { type: 'integer' } } } },
      annotations: { title: 'Remember a sentence', readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    {
      name: 'recall',
      title: 'Recall memories',
      description:
        `Finds memories in ${collection}: by words (text), by meaning (vector, fused with the words when both are given), by tags (every tag given), ` +
        `or, with none of these, the latest first. Example: {"text": "when do we deploy"}. ${PAGES_NOTE}`,
      inputSchema: {
        type: 'object',
        properties: {
          text: { type: 'string', description: 'What to recall, in words.' },
          vector: { ...VECTOR, description: 'An embedding of what to recall.' },
          tags: { type: 'array', items: { type: 'string' }, description: 'Only memories with every one of these tags.' },
          detail: DETAIL('text, tags and at'),
          limit: { type: 'integer', minimum: 1, description: `How many, best first: the page size. Default ${DEFAULT_RECALL_LIMIT}.` },
          cursor: CURSOR,
        },
        additionalProperties: false,
      },
      outputSchema: ROWS_OUTPUT,
      annotations: { title: 'Recall memories', ...READ },
    },
    {
      name: 'forget',
      title: 'Forget a memory',
      description: `Deletes a memory of ${collection} by its id (recall answers ids). Answers {"count": 1}, or 0 when there was none.`,
      inputSchema: {
        type: 'object',
        properties: { id: { type: 'integer', description: 'The memory\'s id.' } },
        required: ['id'],
        additionalProperties: false,
      },
      outputSchema: { type: 'object', properties: { count: { type: 'integer' } } },
      annotations: { title: 'Forget a memory', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
  ];
}

export interface ToolSetOptions {
  /** --mcp-write: offer `write`. */
  readonly write: boolean;
  /** --mcp-memory NAME: offer remember, recall and forget over this collection. */
  readonly memory: string | undefined;
  /** --http-read-only or a read-only file: no tool that writes is offered, whatever else is asked. */
  readonly readOnly: boolean;
}

/** The tools one server offers, in the order tools/list shows them. */
export function toolDefinitions(options: ToolSetOptions): readonly ToolDefinition[] {
  const tools = [QUERY, SEARCH, SCHEMA];
  if (options.write && !options.readOnly) tools.push(WRITE);
  if (options.memory !== undefined) {
    const memory = memoryTools(options.memory);
    tools.push(...(options.readOnly ? memory.filter((t) => t.annotations.readOnlyHint) : memory));
  }
  return Object.freeze(tools);
}
