/**
 * What a model is told of arguments a tool does not take: which argument, what it wants, and the
 * name it likely meant — each message as a model reads it, through the runner on a real database.
 */
import { expect } from 'chai';
import { FenecDatabase, type ExecuteOptions } from '../../../node/database.js';
import { DURATION_PATTERN } from '../../../shared/duration.js';
import { ToolRunner } from '../../../shared/mcp/tool-runner.js';
import { tempDir } from '../../helpers/temp.js';

const SEARCH_TAKES = 'search takes collection, text, vector, filter, params, fields, detail, limit, cursor';
const BULK = 'split the rows over several calls; a bulk load goes through /query (insert into C $1) or fenec import';

/** A call, and the message (and hint, when there is one) of its refusal, all `invalid_argument`. */
const REFUSALS: readonly [string, unknown, string, string?][] = [
  ['search', 'x', 'search takes its arguments as a JSON object, not the string "x"'],
  ['search', [1], 'search takes its arguments as a JSON object, not an array'],
  ['search', {}, 'search needs the argument collection: The collection to search (schema lists them).'],
  ['search', { collection: 'd', txt: 'a' }, 'search takes no argument "txt" (did you mean text?)', SEARCH_TAKES],
  ['search', { collection: 'd', Text: 'a' }, 'search takes no argument "Text" (did you mean text?)', SEARCH_TAKES],
  ['search', { collection: 'd', param: [1] }, 'search takes no argument "param" (did you mean params?)', SEARCH_TAKES],
  ['search', { collection: 'd', limt: 3 }, 'search takes no argument "limt" (did you mean limit?)', SEARCH_TAKES],
  ['search', { collection: 'd', xyzzy: 1 }, 'search takes no argument "xyzzy"', SEARCH_TAKES],
  ['search', { collection: 7 }, 'search: collection takes a string, not the number 7'],
  ['search', { collection: 'd', limit: 2.5 }, 'search: limit takes an integer, not the number 2.5 (not an integer)'],
  ['search', { collection: 'd', limit: 0 }, 'search: limit takes 1 or more, not 0'],
  ['search', { collection: 'd', vector: ['a'] }, 'search: vector[0] takes a number, not the string "a"'],
  ['search', { collection: 'd', vector: [] }, 'search: vector takes at least 1 item'],
  ['search', { collection: 'd', detail: 'all' }, 'search: detail takes "ids", "fields", "full", not the string "all"'],
  ['search', { collection: 'd', fields: 'title' }, 'search: fields takes an array, not the string "title"'],
  ['search', { collection: 'd', cursor: 3 }, 'search: cursor takes a string, not the number 3'],
  ['write', { collection: 'd', insert: 'x' }, 'write: insert takes an object or an array, not the string "x"'],
  ['write', { collection: 'd', insert: [] }, 'write: insert takes at least 1 item'],
  [
    'write',
    { collection: 'd', insert: Array(2001).fill({}) },
    'write: insert takes at most 2000 items; it has 2001',
    BULK,
  ],
  [
    'write',
    { collection: 'd', put: Array(2001).fill({ id: 1 }) },
    'write: put takes at most 2000 items; it has 2001',
    BULK,
  ],
  ['write', { collection: 'd', insert: [1] }, 'write: insert[0] takes an object, not the number 1'],
  ['write', { collection: 'd', del: false }, 'write: del takes only true'],
  ['write', { collection: 'd', del: 'yes' }, 'write: del takes a boolean, not the string "yes"'],
  [
    'write',
    { collection: 'd', sett: {} },
    'write takes no argument "sett" (did you mean set?)',
    'write takes collection, insert, put, set, del, filter, params',
  ],
  [
    'remember',
    { text: 'a', expires_in: '3y' },
    'remember: expires_in is "3y"; How long it is kept: 30m, 12h, 7d. Default: for good.',
  ],
  ['remember', {}, 'remember needs the argument text: The memory, one self-contained sentence.'],
  ['remember', { text: null }, 'remember needs the argument text: The memory, one self-contained sentence.'],
  ['forget', { id: 'a' }, 'forget: id takes an integer, not the string "a"'],
  ['forget', {}, "forget needs the argument id: The memory's id."],
  [
    'query',
    {},
    'query needs the argument statement: One FenecQL read: get COLLECTION [select …] [match …] [near …] [where …] [order …] [limit N], or schema [COLLECTION].',
  ],
  ['query', { statement: 'get x', params: 3 }, 'query: params takes an array, not the number 3'],
  [
    'query',
    { statement: 'get x', include_vectors: 'yes' },
    'query: include_vectors takes a boolean, not the string "yes"',
  ],
  [
    'query',
    { statment: 'get x' },
    'query takes no argument "statment" (did you mean statement?)',
    'query takes statement, params, include_vectors, cursor',
  ],
  ['recall', { tags: [1] }, 'recall: tags[0] takes a string, not the number 1'],
  ['recall', { tags: 'a' }, 'recall: tags takes an array, not the string "a"'],
  ['recall', { text: 'x', limit: -1 }, 'recall: limit takes 1 or more, not -1'],
  [
    'schema',
    { colection: 'x' },
    'schema takes no argument "colection" (did you mean collection?)',
    'schema takes collection',
  ],
];

describe('tool arguments', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let runner: ToolRunner<ExecuteOptions>;

  before(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('t.fenec'), readOnly: false, program: 'test' });
    db.execute('create collection d (title text @text)');
    runner = new ToolRunner<ExecuteOptions>(db, { write: true, memory: 'memories', readOnly: false });
  });
  after(() => {
    db.close();
    temp.remove();
  });

  for (const [tool, args, message, hint] of REFUSALS) {
    it(`refuses ${tool} ${JSON.stringify(args).slice(0, 60)}: ${message.slice(0, 50)}…`, () => {
      const outcome = runner.call(runner.tool(tool)!, args, { options: {}, scoped: false });
      if (outcome.ok) expect.fail(`answered ${outcome.text}`);
      expect(outcome.error.code).to.equal('invalid_argument');
      expect(outcome.error.message).to.equal(message);
      expect(outcome.error.hint).to.equal(hint);
    });
  }

  it("passes a row on as it came, every field the database's to check (none dropped, __proto__ included)", () => {
    for (const args of [
      '{"collection": "d", "insert": {"__proto__": {"x": 1}, "title": "a"}}',
      '{"collection": "d", "insert": [{"title": "a", "__proto__": 5}]}',
      '{"collection": "d", "set": {"__proto__": 1}, "filter": "true"}',
    ]) {
      const outcome = runner.call(runner.tool('write')!, JSON.parse(args), { options: {}, scoped: false });
      if (outcome.ok) expect.fail(`${args} answered ${outcome.text}`);
      expect(outcome.error.code).to.equal('unknown_field');
      expect(outcome.error.message).to.contain('d has no field __proto__');
    }
    expect(db.execute('get d count')).to.deep.equal({ count: 0 });
  });

  it('shows each input schema as JSON Schema written for a model: no safe-integer range, the pattern as given', () => {
    const schemas = Object.fromEntries(runner.tools.map((tool) => [tool.name, tool.inputSchema]));
    expect(schemas.forget).to.deep.equal({
      type: 'object',
      properties: { id: { type: 'integer', description: "The memory's id." } },
      required: ['id'],
      additionalProperties: false,
    });
    expect(schemas.search!.properties.limit).to.deep.equal({
      type: 'integer',
      minimum: 1,
      description: 'How many rows, best first: the page size. Default 10.',
    });
    expect(schemas.remember!.properties.expires_in).to.deep.include({ type: 'string', pattern: DURATION_PATTERN });
    expect(schemas.query!.properties.params).to.deep.equal({
      type: 'array',
      description: 'Values bound to $1, $2, … in the statement or filter: values go here, never into the text.',
    });
    expect(schemas.write!.properties.insert).to.deep.include({
      anyOf: [
        { type: 'object', description: 'A row: field names and JSON values.' },
        {
          minItems: 1,
          maxItems: 2000,
          type: 'array',
          items: { type: 'object', description: 'A row: field names and JSON values.' },
        },
      ],
    });
  });

  it('takes null for an argument not given', () => {
    const outcome = runner.call(
      runner.tool('search')!,
      { collection: 'd', text: null, limit: null, cursor: null },
      { options: {}, scoped: false },
    );
    expect(outcome.ok).to.equal(true);
  });
});
