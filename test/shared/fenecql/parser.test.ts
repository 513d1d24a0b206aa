import { expect } from 'chai';
import { FenecError } from '../../../shared/errors.js';
import type { ErrorCode } from '../../../shared/errors.js';
import type { Cond, Expr, FieldDef, FieldType, GetStmt, ObjectExpr, Statement } from '../../../shared/fenecql/ast.js';
import { parseCondition, parseStatement } from '../../../shared/fenecql/parser.js';
import { refusal as failure, withoutPos } from '../../helpers/assertions.js';

const parse = (text: string): Statement => withoutPos(parseStatement(text));
const cond = (text: string): Cond => withoutPos(parseCondition(text));

function expectRefused(run: () => unknown, code: ErrorCode, line: number, column: number): FenecError {
  const err = failure(run);
  expect(err.code, err.message).to.equal(code);
  expect(err.position, err.message).to.include({ line, column });
  expect(err.message).to.contain(`at line ${line}, column ${column}`);
  return err;
}

// Tree builders, so that expected trees read close to the text they come from.
const int = (value: number): Expr => ({ kind: 'Literal', type: 'int', value });
const float = (value: number): Expr => ({ kind: 'Literal', type: 'float', value });
const str = (value: string): Expr => ({ kind: 'Literal', type: 'text', value });
const bool = (value: boolean): Expr => ({ kind: 'Literal', type: 'bool', value });
const NULL: Expr = { kind: 'Literal', type: 'null', value: null };
const field = (name: string): Expr => ({ kind: 'Field', name });
const param = (index: number): Expr => ({ kind: 'Param', index });
const jwt = (claim: string): Expr => ({ kind: 'Jwt', claim });
const call = (fn: 'now' | 'len' | 'lower' | 'upper' | 'coalesce', ...args: Expr[]): Expr => ({
  kind: 'Call',
  fn,
  args,
});
const array = (...items: Expr[]): Expr => ({ kind: 'Array', items });
const object = (entries: Record<string, Expr>): ObjectExpr => ({
  kind: 'Object',
  entries: Object.entries(entries).map(([key, value]) => ({ key, value })),
});
const binary = (op: '+' | '-' | '*' | '/', left: Expr, right: Expr): Expr => ({ kind: 'Binary', op, left, right });
const negate = (operand: Expr): Expr => ({ kind: 'Negate', operand });
const truth = (expr: Expr): Cond => ({ kind: 'Truth', expr });
const compare = (op: '=' | '!=' | '<' | '<=' | '>' | '>=', left: Expr, right: Expr): Cond => ({
  kind: 'Compare',
  op,
  left,
  right,
});
const and = (left: Cond, right: Cond): Cond => ({ kind: 'And', left, right });
const or = (left: Cond, right: Cond): Cond => ({ kind: 'Or', left, right });
const not = (operand: Cond): Cond => ({ kind: 'Not', operand });
const scalar = (s: 'text' | 'int' | 'float' | 'bool' | 'timestamp' | 'json'): FieldType => ({
  kind: 'scalar',
  scalar: s,
});
const def = (name: string, type: FieldType, more: Partial<FieldDef> = {}): FieldDef => ({
  name,
  type,
  required: false,
  unique: false,
  annotations: [],
  ...more,
});
const get = (collection: string, more: Partial<GetStmt> = {}): GetStmt => ({
  kind: 'Get',
  collection,
  select: null,
  fuse: false,
  order: [],
  count: false,
  ...more,
});

describe('parseStatement', () => {
  describe('create collection', () => {
    it('parses a collection with one field', () => {
      expect(parse('create collection notes (title text)')).to.deep.equal({
        kind: 'CreateCollection',
        name: 'notes',
        ifNotExists: false,
        fields: [def('title', scalar('text'))],
      });
    });

    it('parses if not exists and every type', () => {
      const stmt = parse(
        'create collection if not exists t (a text, b int, c float, d bool, e timestamp, f json, g vector<768>, h [text], i [int], j [float], k [bool], l [timestamp])',
      );
      expect(stmt).to.deep.include({ kind: 'CreateCollection', name: 't', ifNotExists: true });
      expect(stmt.kind === 'CreateCollection' && stmt.fields.map((f) => f.type)).to.deep.equal([
        scalar('text'),
        scalar('int'),
        scalar('float'),
        scalar('bool'),
        scalar('timestamp'),
        scalar('json'),
        { kind: 'vector', dims: 768 },
        { kind: 'array', element: 'text' },
        { kind: 'array', element: 'int' },
        { kind: 'array', element: 'float' },
        { kind: 'array', element: 'bool' },
        { kind: 'array', element: 'timestamp' },
      ]);
    });

    it('takes required, unique and default in any order, then the annotations', () => {
      const stmt = parse(
        'create collection t (a int default 3 unique required @sorted @hash, b timestamp default now() @ttl(30d))',
      );
      expect(stmt).to.deep.equal({
        kind: 'CreateCollection',
        name: 't',
        ifNotExists: false,
        fields: [
          def('a', scalar('int'), {
            required: true,
            unique: true,
            default: int(3),
            annotations: [{ kind: 'sorted' }, { kind: 'hash' }],
          }),
          def('b', scalar('timestamp'), { default: call('now'), annotations: [{ kind: 'ttl', ms: 2_592_000_000 }] }),
        ],
      });
    });

    it('parses every annotation with its arguments', () => {
      const stmt = parse(
        'create collection t (a text @text @hash, b [text] @text, c vector<3> @hnsw(ip), d vector<3> @hnsw(l2, m = 16, ef = 200), e vector<3> @hnsw(cosine, ef = 1, m = 128), f vector<3> @hnsw(cosine, ef_construction = 200, EF = 600))',
      );
      expect(stmt.kind === 'CreateCollection' && stmt.fields.map((f) => f.annotations)).to.deep.equal([
        [{ kind: 'text' }, { kind: 'hash' }],
        [{ kind: 'text' }],
        [{ kind: 'hnsw', metric: 'ip' }],
        [{ kind: 'hnsw', metric: 'l2', m: 16, ef: 200 }],
        [{ kind: 'hnsw', metric: 'cosine', ef: 1, m: 128 }],
        [{ kind: 'hnsw', metric: 'cosine', efConstruction: 200, ef: 600 }],
      ]);
    });

    it('parses @text with a tokenizer, and leaves it out of a bare @text', () => {
      const stmt = parse(
        'create collection t (a text @text(english), b [text] @text(EXACT) @hash, c text @text(porter), d text @text)',
      );
      expect(stmt.kind === 'CreateCollection' && stmt.fields.map((f) => f.annotations)).to.deep.equal([
        [{ kind: 'text', tokenizer: 'english' }],
        [{ kind: 'text', tokenizer: 'exact' }, { kind: 'hash' }],
        [{ kind: 'text', tokenizer: 'porter' }],
        [{ kind: 'text' }],
      ]);
    });

    it('refuses a tokenizer it does not have, naming the ones it has', () => {
      const err = failure(() => parseStatement('create collection t (a text @text(french))'));
      expect(err.code).to.equal('invalid_annotation');
      expect(err.message).to.equal(
        'expected a tokenizer (english, porter, exact) after "(", found "french" (@text stems English words; @text(exact) matches words as written) at line 1, column 35',
      );
    });

    it('reads keywords, types and annotations in any case', () => {
      expect(
        parse('CREATE Collection IF NOT EXISTS Notes (Title TEXT REQUIRED @TEXT, v VECTOR<2> @HNSW(COSINE, M = 4))'),
      ).to.deep.equal({
        kind: 'CreateCollection',
        name: 'Notes',
        ifNotExists: true,
        fields: [
          def('Title', scalar('text'), { required: true, annotations: [{ kind: 'text' }] }),
          def('v', { kind: 'vector', dims: 2 }, { annotations: [{ kind: 'hnsw', metric: 'cosine', m: 4 }] }),
        ],
      });
    });

    it('takes keywords as names where a name is expected', () => {
      expect(parse('create collection if (text text, vector vector<2>, count int)')).to.deep.include({
        name: 'if',
        ifNotExists: false,
      });
    });

    it('puts the position of its name on each field', () => {
      const stmt = parseStatement('create collection t (\n  a int,\n  b text\n)');
      expect(stmt.kind === 'CreateCollection' && stmt.fields.map((f) => f.pos)).to.deep.equal([
        { line: 2, column: 3, offset: 24 },
        { line: 3, column: 3, offset: 33 },
      ]);
    });
  });

  describe('drop and alter', () => {
    it('parses drop collection, with and without if exists', () => {
      expect(parse('drop collection notes')).to.deep.equal({ kind: 'DropCollection', name: 'notes', ifExists: false });
      expect(parse('drop collection if exists notes')).to.deep.equal({
        kind: 'DropCollection',
        name: 'notes',
        ifExists: true,
      });
    });

    it('parses alter collection … add with a full field definition', () => {
      expect(parse('alter collection notes add score float default 0.5 @sorted')).to.deep.equal({
        kind: 'AlterAdd',
        collection: 'notes',
        field: def('score', scalar('float'), { default: float(0.5), annotations: [{ kind: 'sorted' }] }),
      });
    });

    it('parses alter collection … drop', () => {
      expect(parse('alter collection notes drop score')).to.deep.equal({
        kind: 'AlterDrop',
        collection: 'notes',
        field: 'score',
      });
    });
  });

  describe('writes', () => {
    it('parses insert of one object', () => {
      expect(parse('insert into notes {title: "hi", n: 1}')).to.deep.equal({
        kind: 'Insert',
        collection: 'notes',
        rows: [object({ title: str('hi'), n: int(1) })],
        many: false,
      });
    });

    it('parses insert of an array of objects', () => {
      expect(parse('insert into notes [{n: 1}, {n: 2}]')).to.deep.equal({
        kind: 'Insert',
        collection: 'notes',
        rows: [object({ n: int(1) }), object({ n: int(2) })],
        many: true,
      });
    });

    it('parses put', () => {
      expect(parse('put notes {id: 7, title: "x"}')).to.deep.equal({
        kind: 'Put',
        collection: 'notes',
        row: object({ id: int(7), title: str('x') }),
      });
    });

    it('parses set with its where', () => {
      expect(parse('set notes {done: true} where id = $1')).to.deep.equal({
        kind: 'Set',
        collection: 'notes',
        changes: object({ done: bool(true) }),
        where: compare('=', field('id'), param(1)),
      });
    });

    it('parses del, and where true as every row', () => {
      expect(parse('del notes where done')).to.deep.equal({
        kind: 'Del',
        collection: 'notes',
        where: truth(field('done')),
      });
      expect(parse('del notes where true')).to.deep.equal({
        kind: 'Del',
        collection: 'notes',
        where: truth(bool(true)),
      });
    });

    it('takes object keys as names or strings, keywords included', () => {
      expect(parse('insert into notes {"key 2": 1, where: 2, true: 3}')).to.deep.include({
        rows: [object({ 'key 2': int(1), where: int(2), true: int(3) })],
      });
    });

    it('lets nested objects hold any key, reserved ones included', () => {
      expect(parse('insert into notes {meta: {_raw: 1}}')).to.deep.include({
        rows: [object({ meta: object({ _raw: int(1) }) })],
      });
    });
  });

  describe('get', () => {
    it('parses a bare get', () => {
      expect(parse('get notes')).to.deep.equal(get('notes'));
    });

    it('parses select with names, and select *', () => {
      expect(parse('get notes select id, title')).to.deep.equal(get('notes', { select: ['id', 'title'] }));
      expect(parse('get notes select *')).to.deep.equal(get('notes', { select: '*' }));
    });

    it('parses match on a field and on every text field', () => {
      expect(parse('get notes match body "fox"')).to.deep.equal(
        get('notes', { match: { field: 'body', query: str('fox') } }),
      );
      expect(parse('get notes match * $1')).to.deep.equal(get('notes', { match: { field: '*', query: param(1) } }));
    });

    it('parses near', () => {
      expect(parse('get notes near v [1, 0.5]')).to.deep.equal(
        get('notes', { near: { field: 'v', vector: array(int(1), float(0.5)) } }),
      );
    });

    it('parses fuse between match and near', () => {
      expect(parse('get notes match body $1 near v $2 fuse')).to.deep.equal(
        get('notes', { match: { field: 'body', query: param(1) }, near: { field: 'v', vector: param(2) }, fuse: true }),
      );
    });

    it('parses where', () => {
      expect(parse('get notes where n > 2')).to.deep.equal(get('notes', { where: compare('>', field('n'), int(2)) }));
    });

    it('parses order with and without directions', () => {
      expect(parse('get notes order at desc, id, n asc')).to.deep.equal(
        get('notes', {
          order: [
            { field: 'at', direction: 'desc' },
            { field: 'id', direction: 'asc' },
            { field: 'n', direction: 'asc' },
          ],
        }),
      );
    });

    it('parses limit and offset as literals or parameters', () => {
      expect(parse('get notes limit 10 offset 20')).to.deep.equal(get('notes', { limit: int(10), offset: int(20) }));
      expect(parse('get notes limit $1 offset $2')).to.deep.equal(get('notes', { limit: param(1), offset: param(2) }));
      expect(parse('get notes limit 0')).to.deep.equal(get('notes', { limit: int(0) }));
    });

    it('parses count', () => {
      expect(parse('get notes where done count')).to.deep.equal(
        get('notes', { where: truth(field('done')), count: true }),
      );
    });

    it('parses every clause together, in order', () => {
      expect(
        parse(
          'get notes select title match body "fox" near v $1 fuse where n >= 1 order n desc limit 5 offset 10 count',
        ),
      ).to.deep.equal({
        kind: 'Get',
        collection: 'notes',
        select: ['title'],
        match: { field: 'body', query: str('fox') },
        near: { field: 'v', vector: param(1) },
        fuse: true,
        where: compare('>=', field('n'), int(1)),
        order: [{ field: 'n', direction: 'desc' }],
        limit: int(5),
        offset: int(10),
        count: true,
      });
    });

    it('reads clause keywords in any case', () => {
      expect(parse('GET notes SELECT a WHERE a IS NOT NULL ORDER a DESC LIMIT 1')).to.deep.equal(
        get('notes', {
          select: ['a'],
          where: { kind: 'IsNull', operand: field('a'), negated: true },
          order: [{ field: 'a', direction: 'desc' }],
          limit: int(1),
        }),
      );
    });

    it('keeps names case-sensitive', () => {
      expect(parse('get Notes where Title = title')).to.deep.equal(
        get('Notes', { where: compare('=', field('Title'), field('title')) }),
      );
    });

    it('takes clause keywords as names where a name is expected', () => {
      expect(parse('get order where limit = 1 order count limit 2')).to.deep.equal(
        get('order', {
          where: compare('=', field('limit'), int(1)),
          order: [{ field: 'count', direction: 'asc' }],
          limit: int(2),
        }),
      );
    });

    it('puts positions on clauses, conditions and expressions', () => {
      const stmt = parseStatement('get notes match body "fox"\n  where n > 1 + x\n  order n desc limit $1');
      expect(stmt.kind).to.equal('Get');
      const g = stmt as GetStmt;
      expect(g.match?.pos).to.deep.equal({ line: 1, column: 11, offset: 10 });
      expect(g.match?.query.pos).to.deep.equal({ line: 1, column: 22, offset: 21 });
      expect(g.where?.pos).to.deep.equal({ line: 2, column: 9, offset: 35 });
      const right = g.where?.kind === 'Compare' ? g.where.right : undefined;
      expect(right?.pos).to.deep.equal({ line: 2, column: 13, offset: 39 });
      expect(right?.kind === 'Binary' && right.right.pos).to.deep.equal({ line: 2, column: 17, offset: 43 });
      expect(g.order[0]?.pos).to.deep.equal({ line: 3, column: 9, offset: 53 });
      expect(g.limit?.pos).to.deep.equal({ line: 3, column: 22, offset: 66 });
    });
  });

  describe('schema and compact', () => {
    it('parses both with and without a collection', () => {
      expect(parse('schema')).to.deep.equal({ kind: 'Schema' });
      expect(parse('schema notes')).to.deep.equal({ kind: 'Schema', collection: 'notes' });
      expect(parse('compact')).to.deep.equal({ kind: 'Compact' });
      expect(parse('COMPACT notes;')).to.deep.equal({ kind: 'Compact', collection: 'notes' });
    });
  });

  describe('statement ends', () => {
    it('takes one trailing semicolon, and comments around the statement', () => {
      expect(parse('-- first\nget notes ; -- done')).to.deep.equal(get('notes'));
    });
  });

  describe('the seed', () => {
    // Every statement written in shared/seeds/000_3ee0ff42a4a9f504.txt, verbatim.
    const seed = [
      'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))',
      'insert into memories {text: $1, tags: $2, at: now(), expires: now() + $3, vector: $4}',
      'insert into memories {text: "the deploy runs on fridays", tags: ["ops"], at: now(), expires: null, vector: [0.9, 0.1, 0]}   -- → 1',
      'insert into memories {text: "staging is in eu-west-1", tags: ["ops"], at: now(), expires: null, vector: [0, 0.2, 1]}   -- → 1',
      'insert into memories {text: "the user is debugging the login page", tags: ["session"], at: now(), expires: now() + 10000}   -- → 1',
      'get memories select text, tags, at match text "when do we deploy" limit 5   -- → "the deploy runs on fridays"',
      'get memories select text, tags, at match text "which region" near vector [0, 0.1, 1] fuse limit 5   -- → "staging is in eu-west-1"',
      'get memories select text where tags has "session" limit 5   -- → "the user is debugging the login page"',
      'get memories select text, tags, at order at desc, id desc limit 5   -- → "the user is debugging the login page"',
      'get memories where tags has "session" count   -- → 1',
      '-- 20 s later\nget memories where tags has "session" count   -- → 0',
    ];
    const seedConditions = ['owner = $jwt.sub', 'year >= $1', 'year >= $1 and tags has $2'];

    for (const text of seed) {
      it(`parses ${JSON.stringify(text.split('\n').at(-1)?.slice(0, 60))}…`, () => {
        expect(() => parseStatement(text)).not.to.throw();
      });
    }

    for (const text of seedConditions) {
      it(`parses the condition ${JSON.stringify(text)}`, () => {
        expect(() => parseCondition(text)).not.to.throw();
      });
    }

    it('builds the memories collection as remember makes it', () => {
      expect(parse(seed[0] ?? '')).to.deep.equal({
        kind: 'CreateCollection',
        name: 'memories',
        ifNotExists: true,
        fields: [
          def('text', scalar('text'), { required: true, annotations: [{ kind: 'text' }] }),
          def('tags', { kind: 'array', element: 'text' }),
          def('owner', scalar('text'), { annotations: [{ kind: 'hash' }] }),
          def('at', scalar('timestamp'), { annotations: [{ kind: 'sorted' }] }),
          def('expires', scalar('timestamp'), { annotations: [{ kind: 'ttl', ms: 1 }] }),
          def('vector', { kind: 'vector', dims: 3 }, { annotations: [{ kind: 'hnsw', metric: 'cosine' }] }),
        ],
      });
    });

    it('builds the remember insert with its parameters', () => {
      expect(parse(seed[1] ?? '')).to.deep.equal({
        kind: 'Insert',
        collection: 'memories',
        rows: [
          object({
            text: param(1),
            tags: param(2),
            at: call('now'),
            expires: binary('+', call('now'), param(3)),
            vector: param(4),
          }),
        ],
        many: false,
      });
    });

    it('builds the fused recall', () => {
      expect(parse(seed[6] ?? '')).to.deep.equal(
        get('memories', {
          select: ['text', 'tags', 'at'],
          match: { field: 'text', query: str('which region') },
          near: { field: 'vector', vector: array(int(0), float(0.1), int(1)) },
          fuse: true,
          limit: int(5),
        }),
      );
    });

    it('builds the counted recall by tag', () => {
      expect(parse(seed[10] ?? '')).to.deep.equal(
        get('memories', { where: { kind: 'Has', left: field('tags'), right: str('session') }, count: true }),
      );
    });

    it('builds the policy line as a condition on a claim', () => {
      expect(cond('owner = $jwt.sub')).to.deep.equal(compare('=', field('owner'), jwt('sub')));
    });
  });

  describe('refusals', () => {
    // [statement, code, line, column]
    const cases: Array<[string, ErrorCode, number, number]> = [
      ['', 'syntax_error', 1, 1],
      ['-- only a comment', 'syntax_error', 1, 18],
      ['select * from notes', 'syntax_error', 1, 1],
      ['get', 'syntax_error', 1, 4],
      ['insert into {a: 1}', 'syntax_error', 1, 13],
      ['insert into notes', 'syntax_error', 1, 18],
      ['insert into notes []', 'syntax_error', 1, 20],
      ['insert into notes [1]', 'syntax_error', 1, 20],
      ['insert into notes [{a: 1},]', 'syntax_error', 1, 27],
      ['insert into notes {a: 1, a: 2}', 'duplicate_field', 1, 26],
      ['insert into notes {_a: 1}', 'invalid_name', 1, 20],
      ['insert into notes {a 1}', 'syntax_error', 1, 22],
      ['insert into notes {a: 1} {b: 2}', 'syntax_error', 1, 26],
      ['put notes [1]', 'syntax_error', 1, 11],
      ['set notes {a: 1}', 'syntax_error', 1, 17],
      ['del notes', 'syntax_error', 1, 10],
      ['del notes where', 'syntax_error', 1, 16],
      ['get notes limit 5 where a = 1', 'syntax_error', 1, 19],
      ['get notes where a = 1 where b = 2', 'syntax_error', 1, 23],
      ['get notes limit -1', 'invalid_value', 1, 17],
      ['get notes limit 1.5', 'invalid_value', 1, 17],
      ['get notes limit x', 'syntax_error', 1, 17],
      ['get notes match text "a" fuse', 'syntax_error', 1, 26],
      ['get notes select a, a', 'duplicate_field', 1, 21],
      ['get notes select _score', 'invalid_name', 1, 18],
      ['get _notes', 'invalid_name', 1, 5],
      ['get notes where a = 1 )', 'syntax_error', 1, 23],
      ['get notes where (a = 1', 'syntax_error', 1, 23],
      ['get notes where a = ', 'syntax_error', 1, 21],
      ['get notes where a = 1 = 2', 'syntax_error', 1, 23],
      ['get notes where (a = 1) * 2 > 0', 'syntax_error', 1, 17],
      ['get notes where foo(a)', 'syntax_error', 1, 17],
      ['get notes where len(a, b)', 'syntax_error', 1, 17],
      ['get notes where now > 1', 'syntax_error', 1, 21],
      ['get notes where a like b', 'syntax_error', 1, 24],
      ['get notes where a is 5', 'syntax_error', 1, 22],
      ['get notes where and = 1', 'syntax_error', 1, 17],
      ['get notes where _a = 1', 'invalid_name', 1, 17],
      ['get notes where a = "abc', 'unterminated_string', 1, 21],
      ['get notes where a = "a\\qb"', 'invalid_escape', 1, 23],
      ['get notes where a = "\\u12"', 'invalid_escape', 1, 22],
      ['get notes where a = 01', 'invalid_number', 1, 21],
      ['get notes where a = 99999999999999999', 'invalid_number', 1, 21],
      ['get notes where a > 1.5s', 'invalid_duration', 1, 21],
      ['get notes where a > 10x', 'invalid_duration', 1, 21],
      ['get notes where a = $0', 'invalid_parameter', 1, 21],
      ['get notes where a = $100', 'invalid_parameter', 1, 21],
      ['get notes where a = $jwt', 'invalid_parameter', 1, 21],
      ['get notes where a = #', 'invalid_character', 1, 21],
      ['get notes where a ! b', 'invalid_character', 1, 19],
      ['get notes where a = {b: 1, b: 2}', 'duplicate_field', 1, 28],
      ['get notes match text', 'syntax_error', 1, 21],
      ['get notes near * [1]', 'syntax_error', 1, 16],
      ['get notes frm x', 'syntax_error', 1, 11],
      [`get ${'n'.repeat(65)}`, 'invalid_name', 1, 5],
      ['get notes; get other', 'multiple_statements', 1, 12],
      ['get notes;;', 'multiple_statements', 1, 11],
      ['drop collection', 'syntax_error', 1, 16],
      ['drop notes', 'syntax_error', 1, 6],
      ['alter collection notes rename a', 'syntax_error', 1, 24],
      ['alter collection notes drop id', 'invalid_name', 1, 29],
      ['create collection notes ()', 'syntax_error', 1, 26],
      ['create collection notes (a)', 'syntax_error', 1, 27],
      ['create collection notes (a int,)', 'syntax_error', 1, 32],
      ['create collection notes (a strng)', 'invalid_type', 1, 28],
      ['create collection notes (a vector<0>)', 'invalid_type', 1, 35],
      ['create collection notes (a vector<4097>)', 'invalid_type', 1, 35],
      ['create collection notes (a vector 3)', 'syntax_error', 1, 35],
      ['create collection notes (a [json])', 'invalid_type', 1, 29],
      ['create collection notes (id int)', 'invalid_name', 1, 26],
      ['create collection notes (_a int)', 'invalid_name', 1, 26],
      ['create collection notes (a int, a text)', 'duplicate_field', 1, 33],
      ['create collection notes (a text @fast)', 'invalid_annotation', 1, 33],
      ['create collection notes (a text @ttl(1d))', 'invalid_annotation', 1, 33],
      ['create collection notes (a timestamp @ttl(5))', 'invalid_annotation', 1, 43],
      ['create collection notes (a timestamp @ttl(0s))', 'invalid_annotation', 1, 43],
      ['create collection notes (a timestamp @ttl)', 'invalid_annotation', 1, 42],
      ['create collection notes (a text @hash(1))', 'invalid_annotation', 1, 38],
      ['create collection notes (a vector<3> @hnsw(cosine, m = 1))', 'invalid_annotation', 1, 56],
      ['create collection notes (a vector<3> @hnsw(cosine, ef = 5000))', 'invalid_annotation', 1, 57],
      ['create collection notes (a vector<3> @hnsw(cosine, m = 4, m = 8))', 'invalid_annotation', 1, 59],
      ['create collection notes (a vector<3> @hnsw(cosine, size = 8))', 'invalid_annotation', 1, 52],
      ['create collection notes (a vector<3> @hnsw(cosine, ef_construction = 4))', 'invalid_annotation', 1, 70],
      [
        'create collection notes (a vector<3> @hnsw(cosine, ef_construction = 64, ef_construction = 64))',
        'invalid_annotation',
        1,
        74,
      ],
      ['create collection notes (a vector<3> @hnsw(cosine, efconstruction = 64))', 'invalid_annotation', 1, 52],
      ['create collection notes (a vector<3> @hnsw(manhattan))', 'invalid_annotation', 1, 44],
      ['create collection notes (a vector<3> @hash)', 'invalid_annotation', 1, 38],
      ['create collection notes (a text @hnsw(cosine))', 'invalid_annotation', 1, 33],
      ['create collection notes (a int @text)', 'invalid_annotation', 1, 32],
      ['create collection notes (a text @text @text)', 'invalid_annotation', 1, 39],
      ['create collection notes (a text @text(exact) @text)', 'invalid_annotation', 1, 46],
      ['create collection notes (a text @text())', 'invalid_annotation', 1, 39],
      ['create collection notes (a text @text(exact)', 'syntax_error', 1, 45],
      ['create collection notes (a text @text(exact, porter))', 'invalid_annotation', 1, 44],
      ['create collection notes (a int @text(exact))', 'invalid_annotation', 1, 32],
      ['create collection notes (a json @sorted)', 'invalid_annotation', 1, 33],
      ['create collection notes (a int required required)', 'syntax_error', 1, 41],
      ['create collection notes (a int @hash required)', 'syntax_error', 1, 38],
      // Over several lines: the line and column are those of the offending token.
      ['get notes\nwhere a = 1\nlimit 5 limit 6', 'syntax_error', 3, 9],
      ['create collection notes (\n  title text @text,\n  body text @ttl(1d)\n)', 'invalid_annotation', 3, 13],
      ['insert into notes {\n  title: "unterminated\n}', 'unterminated_string', 2, 10],
      ['get notes -- a comment\n  where a = 1;\nget notes', 'multiple_statements', 3, 1],
      ['get notes\r\nwhere a =\r\n  $0', 'invalid_parameter', 3, 3],
      ['get notes\nwhere\n  a = 1 and\n  b ? 2', 'invalid_character', 4, 5],
      ['set notes {a: 1}\n\n  where', 'syntax_error', 3, 8],
    ];

    for (const [text, code, line, column] of cases) {
      it(`refuses ${JSON.stringify(text)} with ${code} at ${line}:${column}`, () => {
        expectRefused(() => parseStatement(text), code, line, column);
      });
    }

    it('says what it expected and what it found, and where', () => {
      const err = failure(() => parseStatement('insert into {a: 1}'));
      expect(err.message).to.equal('expected a collection name after "into", found "{" at line 1, column 13');
    });

    it('says that where is required and that where true means every row', () => {
      const err = failure(() => parseStatement('del notes'));
      expect(err.message).to.contain('where is required').and.to.contain('"where true" means every row');
    });

    it('says which clause must come before which', () => {
      expect(failure(() => parseStatement('get notes order a where b')).message).to.contain(
        '"where" must come before "order"',
      );
      expect(failure(() => parseStatement('get notes limit 1 limit 2')).message).to.contain('"limit" given twice');
    });

    it('explains that fuse needs both match and near', () => {
      expect(failure(() => parseStatement('get notes near v [1] fuse')).message)
        .to.contain('"match" and "near"')
        .and.to.contain('only "near"');
    });

    it('lists the types for an unknown type', () => {
      expect(failure(() => parseStatement('create collection t (a string)')).message).to.contain(
        'text, int, float, bool, timestamp, json, vector<N>, [T]',
      );
    });

    it('states the ranges of @hnsw options', () => {
      expect(failure(() => parseStatement('create collection t (v vector<2> @hnsw(l2, m = 0))')).message).to.contain(
        'from 2 to 128',
      );
      expect(failure(() => parseStatement('create collection t (v vector<2> @hnsw(l2, ef = 0))')).message).to.contain(
        'from 1 to 4096',
      );
      expect(
        failure(() => parseStatement('create collection t (v vector<2> @hnsw(l2, ef_construction = 5000))')).message,
      ).to.contain('from 8 to 4096');
      expect(failure(() => parseStatement('create collection t (v vector<2> @hnsw(l2, size = 5))')).message).to.contain(
        'ef_construction = INT',
      );
    });

    it('names the field an annotation does not fit', () => {
      expect(failure(() => parseStatement('create collection t (due text @ttl(1d))')).message).to.contain(
        'field "due" of type text',
      );
    });

    it('lists the functions for an unknown one', () => {
      expect(failure(() => parseStatement('get t where size(a) > 1')).message).to.contain(
        'now(), len(x), lower(x), upper(x), coalesce(x, y)',
      );
    });

    it('says a condition cannot stand where a value is expected', () => {
      expect(failure(() => parseStatement('insert into t {a: b = 1}')).message).to.contain(
        'a condition cannot stand where a value is expected',
      );
    });

    it('points at the second statement', () => {
      const err = failure(() => parseStatement('get notes;\n  del notes where true'));
      expect(err.code).to.equal('multiple_statements');
      expect(err.position).to.deep.equal({ line: 2, column: 3, offset: 13 });
    });
  });
});

describe('parseCondition', () => {
  describe('precedence', () => {
    it('binds and tighter than or', () => {
      expect(cond('a or b and c')).to.deep.equal(or(truth(field('a')), and(truth(field('b')), truth(field('c')))));
    });

    it('groups or and and to the left', () => {
      expect(cond('a or b or c')).to.deep.equal(or(or(truth(field('a')), truth(field('b'))), truth(field('c'))));
      expect(cond('a and b and c')).to.deep.equal(and(and(truth(field('a')), truth(field('b'))), truth(field('c'))));
    });

    it('binds not tighter than and, looser than a comparison', () => {
      expect(cond('not a = 1 and b')).to.deep.equal(and(not(compare('=', field('a'), int(1))), truth(field('b'))));
      expect(cond('not not a')).to.deep.equal(not(not(truth(field('a')))));
    });

    it('lets parentheses regroup conditions', () => {
      expect(cond('(a or b) and c')).to.deep.equal(and(or(truth(field('a')), truth(field('b'))), truth(field('c'))));
      expect(cond('((a = 1))')).to.deep.equal(compare('=', field('a'), int(1)));
    });

    it('binds * and / tighter than + and -, each to the left', () => {
      expect(cond('a + b * c - d / 2 = 0')).to.deep.equal(
        compare(
          '=',
          binary('-', binary('+', field('a'), binary('*', field('b'), field('c'))), binary('/', field('d'), int(2))),
          int(0),
        ),
      );
      expect(cond('a - b - c = 0')).to.deep.equal(
        compare('=', binary('-', binary('-', field('a'), field('b')), field('c')), int(0)),
      );
    });
  });

  describe('parentheses around values', () => {
    it('takes a parenthesised arithmetic as a value', () => {
      expect(cond('(a + 1) > 2')).to.deep.equal(compare('>', binary('+', field('a'), int(1)), int(2)));
      expect(cond('(a) * 2 = 4')).to.deep.equal(compare('=', binary('*', field('a'), int(2)), int(4)));
      expect(cond('2 * (a + 1) = 4')).to.deep.equal(
        compare('=', binary('*', int(2), binary('+', field('a'), int(1))), int(4)),
      );
    });

    it('takes a parenthesised value standing alone as a Truth', () => {
      expect(cond('(done)')).to.deep.equal(truth(field('done')));
    });

    it('refuses a condition used as a value', () => {
      expectRefused(() => parseCondition('(a = 1) + 1 > 2'), 'syntax_error', 1, 1);
      expectRefused(() => parseCondition('a = (b and c)'), 'syntax_error', 1, 5);
      expectRefused(() => parseCondition('len(a = 1) > 0'), 'syntax_error', 1, 5);
    });
  });

  describe('predicates', () => {
    it('parses every comparison', () => {
      for (const op of ['=', '!=', '<', '<=', '>', '>='] as const)
        expect(cond(`a ${op} 1`)).to.deep.equal(compare(op, field('a'), int(1)));
    });

    it('parses has, in, is null, is not null and like', () => {
      expect(cond('tags has "ops"')).to.deep.equal({ kind: 'Has', left: field('tags'), right: str('ops') });
      expect(cond('n in [1, 2]')).to.deep.equal({ kind: 'In', left: field('n'), right: array(int(1), int(2)) });
      expect(cond('n in $1')).to.deep.equal({ kind: 'In', left: field('n'), right: param(1) });
      expect(cond('a is null')).to.deep.equal({ kind: 'IsNull', operand: field('a'), negated: false });
      expect(cond('a is not null')).to.deep.equal({ kind: 'IsNull', operand: field('a'), negated: true });
      expect(cond('title like "%fox_"')).to.deep.equal({ kind: 'Like', operand: field('title'), pattern: '%fox_' });
    });

    it('reads not in, not like and not has as the negation of the test', () => {
      expect(cond('n not in [1]')).to.deep.equal(not({ kind: 'In', left: field('n'), right: array(int(1)) }));
      expect(cond('t NOT LIKE "a%"')).to.deep.equal(not({ kind: 'Like', operand: field('t'), pattern: 'a%' }));
      expect(cond('tags not has "x"')).to.deep.equal(not({ kind: 'Has', left: field('tags'), right: str('x') }));
    });

    it('takes an arithmetic on either side of a predicate', () => {
      expect(cond('at < now() - 7d')).to.deep.equal(
        compare('<', field('at'), binary('-', call('now'), int(604_800_000))),
      );
      expect(cond('a + 1 is null')).to.deep.equal({
        kind: 'IsNull',
        operand: binary('+', field('a'), int(1)),
        negated: false,
      });
    });

    it('lets a bare expression stand as a condition', () => {
      expect(cond('true')).to.deep.equal(truth(bool(true)));
      expect(cond('done')).to.deep.equal(truth(field('done')));
      expect(cond('$1')).to.deep.equal(truth(param(1)));
    });
  });

  describe('values', () => {
    it('parses every literal', () => {
      expect(cond('a = [true, false, null, 1, -2, 1.5, -0.5, 2e3, "s", 10s, {k: 1, "k 2": []}]')).to.deep.equal(
        compare(
          '=',
          field('a'),
          array(
            bool(true),
            bool(false),
            NULL,
            int(1),
            int(-2),
            float(1.5),
            float(-0.5),
            float(2000),
            str('s'),
            int(10_000),
            {
              kind: 'Object',
              entries: [
                { key: 'k', value: int(1) },
                { key: 'k 2', value: array() },
              ],
            },
          ),
        ),
      );
    });

    it('folds a minus into the number after it, and negates anything else', () => {
      expect(cond('a = -5')).to.deep.equal(compare('=', field('a'), int(-5)));
      expect(cond('a = - 5s')).to.deep.equal(compare('=', field('a'), int(-5000)));
      expect(cond('a = -b')).to.deep.equal(compare('=', field('a'), negate(field('b'))));
      expect(cond('a = -(5)')).to.deep.equal(compare('=', field('a'), negate(int(5))));
      expect(cond('a = - -5')).to.deep.equal(compare('=', field('a'), negate(int(-5))));
      expect(cond('a - -5 = 0')).to.deep.equal(compare('=', binary('-', field('a'), int(-5)), int(0)));
    });

    it('gives an int no negative zero', () => {
      const c = cond('a = -0');
      expect(c.kind === 'Compare' && Object.is(c.right.kind === 'Literal' && c.right.value, 0)).to.equal(true);
    });

    it('parses parameters, claims and every function', () => {
      expect(cond('coalesce(lower(a), upper($1)) = $jwt.sub and len(tags) > 0 and at < NOW()')).to.deep.equal(
        and(
          and(
            compare('=', call('coalesce', call('lower', field('a')), call('upper', param(1))), jwt('sub')),
            compare('>', call('len', field('tags')), int(0)),
          ),
          compare('<', field('at'), call('now')),
        ),
      );
    });

    it('keeps an injection-like string a value', () => {
      expect(cond('title = "x\\" or 1 = 1 --"')).to.deep.equal(compare('=', field('title'), str('x" or 1 = 1 --')));
      expect(cond('title = "a); drop collection notes; --"')).to.deep.equal(
        compare('=', field('title'), str('a); drop collection notes; --')),
      );
      expect(parse('insert into notes {body: "\\"}; del notes where true; --"}')).to.deep.equal({
        kind: 'Insert',
        collection: 'notes',
        rows: [object({ body: str('"}; del notes where true; --') })],
        many: false,
      });
    });

    it('puts positions on conditions and their operands', () => {
      const c = parseCondition('a = 1\n  or -b > 2');
      expect(c.pos).to.deep.equal({ line: 1, column: 1, offset: 0 });
      const right = c.kind === 'Or' ? c.right : undefined;
      expect(right?.pos).to.deep.equal({ line: 2, column: 6, offset: 11 });
      expect(right?.kind === 'Compare' && right.right.pos).to.deep.equal({ line: 2, column: 11, offset: 16 });
    });
  });

  describe('a condition alone', () => {
    it('refuses a parenthesis that closes on the statement around it', () => {
      expectRefused(() => parseCondition('x = 1) or (1 = 1'), 'syntax_error', 1, 6);
    });

    it('refuses a filter with a second statement', () => {
      expectRefused(() => parseCondition('x = 1; del notes where true'), 'multiple_statements', 1, 8);
    });

    it('refuses a clause after the condition', () => {
      expectRefused(() => parseCondition('x = 1 limit 5'), 'syntax_error', 1, 7);
      expectRefused(() => parseCondition('x = 1 where y = 2'), 'syntax_error', 1, 7);
      expectRefused(() => parseCondition('x = 1 order x'), 'syntax_error', 1, 7);
    });

    it('refuses an empty filter', () => {
      const err = expectRefused(() => parseCondition(''), 'syntax_error', 1, 1);
      expect(err.message).to.contain('expected a condition');
      expectRefused(() => parseCondition('  -- nothing'), 'syntax_error', 1, 13);
    });

    it('refuses an unclosed parenthesis', () => {
      const err = expectRefused(() => parseCondition('(x = 1'), 'syntax_error', 1, 7);
      expect(err.message).to.contain('to close the "(" at line 1, column 1');
    });

    it('refuses a trailing semicolon', () => {
      expectRefused(() => parseCondition('x = 1;'), 'syntax_error', 1, 6);
    });

    it('refuses a whole statement', () => {
      expectRefused(() => parseCondition('get notes'), 'syntax_error', 1, 5);
    });
  });
});
