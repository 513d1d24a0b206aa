/**
 * fast-check generators for hostile input: FenecQL statements and conditions that follow the grammar
 * (docs/fenecql.md) over a known collection, the raw mutations of them that do not, `/query` bodies,
 * and MCP messages. Each generator draws from the grammar's whole surface — every clause, operator,
 * function, literal kind, parameter form and annotation — and from the edges of each value: huge and
 * non-finite numbers, empty and long strings, escapes, control and astral characters.
 */
import fc from 'fast-check';

/** The collection the fuzzers run against, made before every run (`FUZZ_SCHEMA`). */
export const FUZZ_COLLECTION = 'docs';
export const FUZZ_SCHEMA =
  'create collection if not exists docs (title text @text, body text @text, year int @sorted, score float, done bool, ' +
  'tags [text] @text, meta json, at timestamp, owner text @hash, code text unique, v vector<4> @hnsw(l2), w vector<2>)';
const FIELDS = ['id', 'title', 'body', 'year', 'score', 'done', 'tags', 'meta', 'at', 'owner', 'code', 'v', 'w'];
const SCRATCH = ['s1', 's2', 's3'];

/** Strings from every corner: plain words, quotes and backslashes, control, astral and lone surrogates. */
export const anyText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    'fox',
    'the quick brown fox',
    '%',
    '_',
    '%o%',
    'x" or true --',
    '\\',
    '"',
    '\u0000',
    '😀',
    '\ud800',
    'ä'.repeat(40),
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
);

/** Numbers at every edge: ints near 2^53, floats near float32's and float64's ends, -0, tiny ones. */
export const anyNumberText: fc.Arbitrary<string> = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom(
    '0',
    '-0',
    '9007199254740991',
    '9007199254740992',
    '-9007199254740993',
    '1e308',
    '1e309',
    '-1e400',
    '3.5e38',
    '3.4028235e38',
    '1e-320',
    '5e-324',
    '0.1',
    '1.5',
    '00',
    '1.',
    '.5',
    '1e',
    '0x10',
    '1_000',
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
);

/** A JSON value with its edges: deep arrays and objects, huge numbers, every string. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { depthSize: 'small' },
  fc.jsonValue({ maxDepth: 4 }),
  fc.constantFrom(1e308, -1e308, 3.5e38, Number.MAX_SAFE_INTEGER + 2, -0, 5e-324, [], {}, [[[]]], [1, 2, 3, 4], [1, 2]),
  anyText,
);

const literal: fc.Arbitrary<string> = fc.oneof(
  anyNumberText,
  anyText.map((s) => JSON.stringify(s)),
  fc.constantFrom(
    'true',
    'false',
    'null',
    '10s',
    '7d',
    '1ms',
    '2w',
    '5x',
    '[]',
    '[1, 2, 3, 4]',
    '[1, 2]',
    '["a", "b"]',
    '{}',
    '{a: 1, "b c": [null]}',
  ),
  fc.array(anyNumberText, { maxLength: 5 }).map((xs) => `[${xs.join(', ')}]`),
);

const parameter: fc.Arbitrary<string> = fc.oneof(
  fc.integer({ min: 1, max: 4 }).map((n) => `$${n}`),
  fc.constantFrom(
    '$0',
    '$99',
    '$100',
    '$-1',
    '$',
    '$jwt.sub',
    '$jwt.team',
    '$jwt.',
    '$jwt.sub.x',
    '$JWT.sub',
    '$jwt.__proto__',
  ),
);

const field: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...FIELDS),
  fc.constantFrom('nope', '_score', 'ID', 'len', 'order', 'x'.repeat(65)),
);

/** Expressions and conditions by the grammar of docs/fenecql.md, nested to a bounded depth. */
export const grammar = fc.letrec<{ expr: string; cond: string }>((tie) => ({
  expr: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    literal,
    parameter,
    field,
    fc.constant('now()'),
    fc.tuple(tie('expr'), fc.constantFrom('+', '-', '*', '/'), tie('expr')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('expr').map((e) => `-${e}`),
    tie('expr').map((e) => `(${e})`),
    fc.tuple(fc.constantFrom('len', 'lower', 'upper', 'LEN', 'abs'), tie('expr')).map(([f, e]) => `${f}(${e})`),
    fc.tuple(tie('expr'), tie('expr')).map(([a, b]) => `coalesce(${a}, ${b})`),
  ),
  cond: fc.oneof(
    { depthSize: 'small', maxDepth: 6 },
    fc
      .tuple(tie('expr'), fc.constantFrom('=', '!=', '<', '<=', '>', '>='), tie('expr'))
      .map(([a, op, b]) => `${a} ${op} ${b}`),
    fc
      .tuple(tie('expr'), fc.constantFrom('has', 'in', 'not in', 'not has'), tie('expr'))
      .map(([a, op, b]) => `${a} ${op} ${b}`),
    fc.tuple(tie('expr'), fc.constantFrom('is null', 'is not null')).map(([a, t]) => `${a} ${t}`),
    fc
      .tuple(tie('expr'), fc.constantFrom('like', 'not like'), anyText)
      .map(([a, op, p]) => `${a} ${op} ${JSON.stringify(p)}`),
    tie('expr'),
    fc
      .tuple(tie('cond'), fc.constantFrom('and', 'or', 'AND', 'Or'), tie('cond'))
      .map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('cond').map((c) => `not ${c}`),
    tie('cond').map((c) => `(${c})`),
  ),
}));

/**
 * The same grammar kept well-typed over the fuzz collection's fields, so that most statements pass the
 * parser and the type checker and reach the planner, SQLite, FTS5 and Faiss.
 */
export const typed = fc.letrec<{ num: string; text: string; cond: string }>((tie) => ({
  num: fc.oneof(
    { depthSize: 'small', maxDepth: 5 },
    fc.constantFrom('year', 'score', 'id'),
    fc.integer({ min: -3000, max: 3000 }).map(String),
    fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((n) => JSON.stringify(n)),
    tie('text').map((t) => `len(${t})`),
    fc.constant('len(tags)'),
    fc.tuple(tie('num'), fc.constantFrom('+', '-', '*', '/'), tie('num')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('num').map((n) => `-${n}`),
    tie('num').map((n) => `(${n})`),
    fc.tuple(tie('num'), tie('num')).map(([a, b]) => `coalesce(${a}, ${b})`),
  ),
  text: fc.oneof(
    { depthSize: 'small', maxDepth: 5 },
    fc.constantFrom('title', 'body', 'owner', 'code'),
    anyText.map((t) => JSON.stringify(t)),
    fc.tuple(fc.constantFrom('lower', 'upper'), tie('text')).map(([f, t]) => `${f}(${t})`),
    fc.tuple(tie('text'), tie('text')).map(([a, b]) => `coalesce(${a}, ${b})`),
  ),
  cond: fc.oneof(
    { depthSize: 'small', maxDepth: 5 },
    fc
      .tuple(tie('num'), fc.constantFrom('=', '!=', '<', '<=', '>', '>='), tie('num'))
      .map(([a, op, b]) => `${a} ${op} ${b}`),
    fc.tuple(tie('text'), fc.constantFrom('=', '!=', '<', '>='), tie('text')).map(([a, op, b]) => `${a} ${op} ${b}`),
    fc
      .tuple(fc.constantFrom('title', 'body', 'owner'), fc.constantFrom('like', 'not like'), anyText)
      .map(([f, op, p]) => `${f} ${op} ${JSON.stringify(p)}`),
    tie('text').map((t) => `tags has ${t}`),
    fc.tuple(fc.constantFrom(...FIELDS), fc.constantFrom('is null', 'is not null')).map(([f, t]) => `${f} ${t}`),
    fc.array(anyText, { maxLength: 4 }).map((xs) => `owner in ${JSON.stringify(xs)}`),
    fc.array(fc.integer({ min: 1990, max: 2040 }), { maxLength: 4 }).map((xs) => `year in ${JSON.stringify(xs)}`),
    fc.constantFrom(
      'done',
      'not done',
      'true',
      'false',
      'at > now() - 7d',
      'at < "2030-01-01"',
      'meta is null',
      'id = $1',
      'owner = $jwt.sub',
    ),
    fc.tuple(tie('cond'), fc.constantFrom('and', 'or'), tie('cond')).map(([a, op, b]) => `${a} ${op} ${b}`),
    tie('cond').map((c) => `not ${c}`),
    tie('cond').map((c) => `(${c})`),
  ),
}));

/** A row for the fuzz collection with values of the right types (some left out, some null). */
const typedRow: fc.Arbitrary<string> = fc
  .record(
    {
      title: typed.text,
      body: typed.text,
      year: typed.num,
      score: typed.num,
      done: fc.constantFrom('true', 'false', 'null'),
      tags: fc.array(anyText, { maxLength: 3 }).map((t) => JSON.stringify(t)),
      meta: anyJson.map((m) => JSON.stringify(m) ?? 'null'),
      at: fc.constantFrom('now()', 'now() - 1d', '"2026-01-01T00:00:00Z"', '1700000000000', 'null'),
      owner: fc.constantFrom('"ada"', '"bob"', '$jwt.sub', 'null'),
      code: fc.oneof(
        fc.constant('null'),
        fc.nat(30).map((n) => `"c${n}"`),
      ),
      v: fc
        .array(
          fc.oneof(
            { weight: 9, arbitrary: fc.double({ min: -10, max: 10, noNaN: true }).map((x) => JSON.stringify(x)) },
            { weight: 1, arbitrary: fc.constantFrom('3.5e38', '-1e39', '1e-46', '1e309') },
          ),
          { minLength: 4, maxLength: 4 },
        )
        .map((xs) => `[${xs.join(', ')}]`),
      w: fc.array(fc.integer({ min: -5, max: 5 }), { minLength: 2, maxLength: 2 }).map((xs) => JSON.stringify(xs)),
    },
    { requiredKeys: [] },
  )
  .map(
    (row) =>
      `{${Object.entries(row)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ')}}`,
  );

/** Well-typed statements: reads with every clause, and writes that fit the schema. */
const typedStatement: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(
      fc.option(fc.constantFrom('select title, year', 'select *', 'select id')),
      fc.option(
        fc
          .tuple(fc.constantFrom('*', 'title', 'body', 'tags'), anyText)
          .map(([f, t]) => `match ${f} ${JSON.stringify(t)}`),
      ),
      fc.option(
        fc
          .array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 4, maxLength: 4 })
          .map((xs) => `near v ${JSON.stringify(xs)}`),
      ),
      fc.option(typed.cond),
      fc.option(fc.constantFrom('order year desc', 'order title, id desc', 'order score')),
      fc.option(fc.nat(150)),
      fc.option(fc.nat(20)),
      fc.boolean(),
    )
    .map(([sel, match, near, cond, order, limit, offset, count]) =>
      [
        'get docs',
        sel,
        match,
        near,
        match !== null && near !== null ? 'fuse' : null,
        cond === null ? null : `where ${cond}`,
        order,
        limit === null ? null : `limit ${limit}`,
        offset === null ? null : `offset ${offset}`,
        count ? 'count' : null,
      ]
        .filter((c) => c !== null)
        .join(' '),
    ),
  typedRow.map((r) => `insert into docs ${r}`),
  fc.array(typedRow, { minLength: 1, maxLength: 5 }).map((rs) => `insert into docs [${rs.join(', ')}]`),
  fc.tuple(fc.nat(80), typedRow).map(([id, r]) => `put docs {id: ${id}${r === '{}' ? '' : `, ${r.slice(1, -1)}`}}`),
  fc.tuple(typedRow, typed.cond).map(([r, c]) => `set docs ${r} where ${c}`),
  typed.cond.map((c) => `del docs where (${c}) and year < 1990`),
);

const objectLiteral: fc.Arbitrary<string> = fc
  .array(fc.tuple(fc.oneof(field, fc.constant('"quoted name"')), grammar.expr), { maxLength: 6 })
  .map((pairs) => `{${pairs.map(([k, v]) => `${k}: ${v}`).join(', ')}}`);

const selectClause = fc.oneof(
  fc.constant('select *'),
  fc.array(field, { minLength: 1, maxLength: 4 }).map((fs) => `select ${fs.join(', ')}`),
);
const limitValue = fc.oneof(
  fc.nat(200).map(String),
  fc.constantFrom('-1', '1.5', '$1', '1e3', '99999999999999999', '0'),
);

/** A `get` with any subset of its clauses, in order, or now and then out of order. */
const getStatement: fc.Arbitrary<string> = fc
  .record(
    {
      select: selectClause,
      match: fc
        .tuple(fc.oneof(fc.constantFrom('*', 'title', 'body', 'tags'), field), grammar.expr)
        .map(([f, e]) => `match ${f} ${e}`),
      near: fc.tuple(fc.oneof(fc.constantFrom('v', 'w'), field), grammar.expr).map(([f, e]) => `near ${f} ${e}`),
      fuse: fc.constant('fuse'),
      where: grammar.cond.map((c) => `where ${c}`),
      order: fc
        .array(fc.tuple(field, fc.constantFrom('', ' asc', ' desc')), { minLength: 1, maxLength: 3 })
        .map((os) => `order ${os.map(([f, d]) => f + d).join(', ')}`),
      limit: limitValue.map((n) => `limit ${n}`),
      offset: limitValue.map((n) => `offset ${n}`),
      count: fc.constant('count'),
    },
    { requiredKeys: [] },
  )
  .chain((clauses) => {
    const inOrder = ['select', 'match', 'near', 'fuse', 'where', 'order', 'limit', 'offset', 'count']
      .map((k) => clauses[k as keyof typeof clauses])
      .filter((c): c is string => c !== undefined);
    return fc.oneof(
      { weight: 9, arbitrary: fc.constant(inOrder) },
      { weight: 1, arbitrary: fc.shuffledSubarray(inOrder, { minLength: inOrder.length }) },
    );
  })
  .chain((clauses) =>
    fc
      .oneof(
        { weight: 9, arbitrary: fc.constant(FUZZ_COLLECTION) },
        { weight: 1, arbitrary: fc.oneof(field, fc.constantFrom(...SCRATCH)) },
      )
      .map((c) => `get ${c} ${clauses.join(' ')}`),
  );

const typeName = fc.constantFrom(
  'text',
  'int',
  'float',
  'bool',
  'timestamp',
  'json',
  'vector<3>',
  'vector<0>',
  'vector<5000>',
  '[text]',
  '[int]',
  '[json]',
  'blob',
);
const annotation = fc.constantFrom(
  '',
  '@hash',
  '@sorted',
  '@text',
  '@ttl(1h)',
  '@ttl(0s)',
  '@hnsw(cosine)',
  '@hnsw(l2, m = 2, ef = 4096)',
  '@hnsw(ip, m = 999)',
  '@nope',
);
const fieldDef = fc
  .tuple(
    fc.oneof(field, fc.constantFrom('a', 'b', 'c')),
    typeName,
    fc.constantFrom('', ' required', ' unique', ' default 0', ' default now()', ' required unique'),
    annotation,
  )
  .map(([n, t, m, a]) => `${n} ${t}${m} ${a}`.trimEnd());

const writeStatement: fc.Arbitrary<string> = fc.oneof(
  objectLiteral.map((o) => `insert into ${FUZZ_COLLECTION} ${o}`),
  fc.array(objectLiteral, { maxLength: 4 }).map((os) => `insert into ${FUZZ_COLLECTION} [${os.join(', ')}]`),
  fc
    .tuple(fc.oneof(fc.nat(50).map(String), grammar.expr), objectLiteral)
    .map(([id, o]) => `put ${FUZZ_COLLECTION} {id: ${id}${o === '{}' ? '' : `, ${o.slice(1, -1)}`}}`),
  fc.tuple(objectLiteral, grammar.cond).map(([o, c]) => `set ${FUZZ_COLLECTION} ${o} where ${c}`),
  // A del that keeps some rows: the fuzz collection should not empty itself at every turn.
  grammar.cond.map((c) => `del ${FUZZ_COLLECTION} where (${c}) and id > 1000000`),
  grammar.cond.map((c) => `del ${FUZZ_COLLECTION} where ${c}`),
);

const schemaStatement: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(fc.constantFrom(...SCRATCH), fc.array(fieldDef, { minLength: 0, maxLength: 5 }), fc.boolean())
    .map(([n, fs, ine]) => `create collection ${ine ? 'if not exists ' : ''}${n} (${fs.join(', ')})`),
  fc.tuple(fc.constantFrom(...SCRATCH), fieldDef).map(([n, f]) => `alter collection ${n} add ${f}`),
  fc.tuple(fc.constantFrom(...SCRATCH), field).map(([n, f]) => `alter collection ${n} drop ${f}`),
  fc.tuple(fc.constantFrom(...SCRATCH), fc.boolean()).map(([n, ie]) => `drop collection ${ie ? 'if exists ' : ''}${n}`),
  fc.constantFrom('schema', `schema ${FUZZ_COLLECTION}`, 'schema nope', 'compact s1', 'compact nope'),
);

/** A statement by the grammar: reads most, writes, schema changes. */
export const statement: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: typedStatement },
  { weight: 3, arbitrary: getStatement },
  { weight: 3, arbitrary: writeStatement },
  { weight: 1, arbitrary: schemaStatement },
);

const SNIPPETS = [
  '(',
  ')',
  '"',
  '\\',
  '$',
  '$jwt.',
  '--',
  ';',
  '1e400',
  '\u0000',
  '[',
  ']',
  '{',
  '}',
  ',',
  ':',
  ' or true',
  ' and ',
  ' not ',
  'where',
  'get',
  '-',
  '*',
  '\n',
  '\u2028',
  '😀',
  '\ud800',
  '@',
  '<',
  '>=',
  '1 + ',
  'coalesce(',
  "'",
  '`',
];

/** A statement, then broken: cut, spliced with tokens, a piece repeated many times, halves swapped. */
export const mutated: fc.Arbitrary<string> = fc
  .tuple(
    statement,
    fc.array(fc.tuple(fc.nat(4), fc.nat(), fc.nat(), fc.constantFrom(...SNIPPETS), fc.integer({ min: 2, max: 60 })), {
      minLength: 1,
      maxLength: 4,
    }),
  )
  .map(([text, edits]) => {
    let s = text;
    for (const [kind, a, b, snippet, times] of edits) {
      const i = s.length === 0 ? 0 : a % (s.length + 1);
      const j = Math.min(s.length, i + (b % 12));
      if (kind === 0) s = s.slice(0, i) + s.slice(j);
      else if (kind === 1) s = s.slice(0, i) + snippet + s.slice(i);
      else if (kind === 2) s = s.slice(0, i) + s.slice(i, j).repeat(times) + s.slice(j);
      else if (kind === 3) s = s.slice(i) + s.slice(0, i);
      else s = s.slice(0, i);
    }
    return s;
  });

/** Conditions alone, grammatical or mutated: an MCP filter, a policy's shape. */
export const condition: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: typed.cond },
  { weight: 2, arbitrary: grammar.cond },
  {
    weight: 1,
    arbitrary: fc
      .tuple(grammar.cond, fc.constantFrom(...SNIPPETS), fc.nat())
      .map(([c, s, at]) => c.slice(0, at % (c.length + 1)) + s + c.slice(at % (c.length + 1))),
  },
);

/** Params for a statement: mostly values that fit the collection, some that do not. */
export const params: fc.Arbitrary<unknown[]> = fc.array(anyJson, { maxLength: 4 });

/** A `/query` body as sent on the wire: well-formed with a hostile statement, or malformed in any way. */
export const queryBody: fc.Arbitrary<{ body: string | Buffer; contentType: string }> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc
      .tuple(fc.oneof({ weight: 2, arbitrary: statement }, { weight: 1, arbitrary: mutated }), params)
      .map(([s, p]) => ({ body: JSON.stringify({ statement: s, params: p }), contentType: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .record({ statement: anyJson, params: anyJson }, { requiredKeys: [] })
      .map((b) => ({ body: JSON.stringify(b), contentType: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(statement, fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 2 }))
      .map(([s, extra]) => ({ body: JSON.stringify({ statement: s, ...extra }), contentType: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .jsonValue({ maxDepth: 3 })
      .map((v) => ({ body: JSON.stringify(v) ?? 'null', contentType: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc.string({ unit: 'binary', maxLength: 200 }).map((s) => ({ body: s, contentType: 'application/json' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .uint8Array({ maxLength: 200 })
      .map((b) => ({ body: Buffer.from(b), contentType: 'application/octet-stream' })),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        statement,
        fc.constantFrom('text/plain', '', 'application/x-www-form-urlencoded', 'application/json; charset=latin1'),
      )
      .map(([s, ct]) => ({ body: JSON.stringify({ statement: s }), contentType: ct })),
  },
);

const METHODS = [
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'server/discover',
  'notifications/initialized',
  'resources/list',
  'prompts/list',
  'completion/complete',
  'logging/setLevel',
  'nope',
  '',
];
const TOOLS = ['query', 'search', 'schema', 'write', 'remember', 'recall', 'forget', 'nope'];

/** Mostly the value a schema asks for, now and then any JSON at all in its place. */
function mostly<T>(good: fc.Arbitrary<T>, ...more: fc.Arbitrary<unknown>[]): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 6, arbitrary: good }, ...more.map((arbitrary) => ({ weight: 1, arbitrary })));
}

/** A tool's arguments: by its input schema, with hostile values in each place, or anything at all. */
const toolArguments: fc.Arbitrary<[string, unknown]> = fc.oneof(
  fc.tuple(
    fc.constant('query'),
    fc.record(
      {
        statement: mostly(statement, mutated, anyJson),
        params: mostly(params, anyJson),
        include_vectors: mostly(fc.boolean(), anyJson),
      },
      { requiredKeys: [] },
    ),
  ),
  fc.tuple(
    fc.constant('search'),
    fc.record(
      {
        collection: mostly(fc.constantFrom(FUZZ_COLLECTION, 'memories', 'nope', 'docs where true', ''), anyJson),
        text: mostly(anyText, anyJson),
        vector: mostly(
          fc.array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: 4, maxLength: 4 }),
          fc.array(fc.double(), { maxLength: 6 }),
          anyJson,
        ),
        filter: mostly(condition, anyJson),
        params: mostly(params, anyJson),
        fields: mostly(fc.array(field, { maxLength: 4 }), anyJson),
        limit: mostly(fc.integer({ min: -5, max: 500 }), anyJson),
      },
      { requiredKeys: [] },
    ),
  ),
  fc.tuple(
    fc.constant('schema'),
    fc.record({ collection: mostly(fc.constantFrom(FUZZ_COLLECTION, 'nope'), anyJson) }, { requiredKeys: [] }),
  ),
  fc.tuple(
    fc.constant('write'),
    fc
      .tuple(
        mostly(fc.constantFrom(FUZZ_COLLECTION, 'memories', 'nope'), anyJson),
        fc.oneof(
          mostly(
            fc.dictionary(field, anyJson, { maxKeys: 4 }),
            fc.array(fc.dictionary(field, anyJson, { maxKeys: 3 }), { maxLength: 3 }),
            anyJson,
          ).map((insert) => ({ insert })),
          mostly(fc.dictionary(field, anyJson, { maxKeys: 4 }), anyJson).map((put) => ({ put })),
          fc
            .tuple(mostly(fc.dictionary(field, anyJson, { maxKeys: 3 }), anyJson), mostly(condition, anyJson))
            .map(([set, filter]) => ({ set, filter })),
          fc
            .tuple(mostly(fc.constant(true), anyJson), mostly(condition, anyJson))
            .map(([del, filter]) => ({ del, filter })),
          fc.record(
            { insert: anyJson, put: anyJson, set: anyJson, del: anyJson, filter: anyJson },
            { requiredKeys: [] },
          ),
        ),
        fc.option(mostly(params, anyJson), { nil: undefined }),
      )
      .map(([collection, op, p]) => ({ collection, ...op, ...(p === undefined ? {} : { params: p }) })),
  ),
  fc.tuple(
    fc.constant('remember'),
    fc.record(
      {
        text: mostly(anyText, anyJson),
        tags: mostly(fc.array(anyText, { maxLength: 3 }), anyJson),
        expires_in: mostly(fc.constantFrom('30m', '12h', '7d', '0s', '-1d', '999999999w', 'x'), anyJson),
        vector: mostly(fc.array(fc.double(), { maxLength: 5 }), anyJson),
      },
      { requiredKeys: [] },
    ),
  ),
  fc.tuple(
    fc.constant('recall'),
    fc.record(
      {
        text: mostly(anyText, anyJson),
        vector: mostly(fc.array(fc.double(), { maxLength: 5 }), anyJson),
        tags: mostly(fc.array(anyText, { maxLength: 3 }), anyJson),
        limit: mostly(fc.integer({ min: -5, max: 500 }), anyJson),
      },
      { requiredKeys: [] },
    ),
  ),
  fc.tuple(
    fc.constant('forget'),
    fc.record({ id: mostly(fc.integer({ min: -5, max: 100 }), anyJson) }, { requiredKeys: [] }),
  ),
  fc.tuple(fc.constantFrom(...TOOLS), anyJson),
);

/** A JSON-RPC message for the MCP endpoint: a well-formed tools/call with hostile arguments, or broken anywhere. */
export const mcpMessage: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(toolArguments, fc.integer({ min: 1, max: 1e6 }))
      .map(([[name, args], id]) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })),
  },
  {
    weight: 2,
    arbitrary: fc.record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), anyJson),
        id: anyJson,
        method: fc.oneof(fc.constantFrom(...METHODS), anyJson),
        params: anyJson,
      },
      { requiredKeys: ['jsonrpc', 'method'] },
    ),
  },
  {
    weight: 1,
    arbitrary: fc.array(fc.record({ jsonrpc: fc.constant('2.0'), id: fc.nat(), method: fc.constantFrom(...METHODS) }), {
      maxLength: 3,
    }),
  },
  { weight: 1, arbitrary: anyJson },
);

/** A line for `fenec mcp`: a message as JSON, or text that is not one. */
export const mcpLine: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: mcpMessage.map((m) => JSON.stringify(m) ?? 'null') },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 100 }).map((s) => s.replace(/[\r\n]/g, ' ')) },
);
