import { expect } from 'chai';
import type { Cond, Expr } from '../../../shared/fenecql/ast.js';
import { parseCondition, parseStatement } from '../../../shared/fenecql/parser.js';
import { withoutPos } from '../../helpers/assertions.js';
import {
  printAnnotation,
  printCondition,
  printExpr,
  printFieldType,
  printStatement,
} from '../../../shared/fenecql/print.js';

/** The canonical text of a statement, by way of its tree. */
const canonical = (text: string): string => printStatement(parseStatement(text));
const canonicalCondition = (text: string): string => printCondition(parseCondition(text));

const int = (value: number): Expr => ({ kind: 'Literal', type: 'int', value });

describe('print', () => {
  describe('printFieldType', () => {
    it('prints every kind of type as the parser reads it', () => {
      expect(printFieldType({ kind: 'scalar', scalar: 'timestamp' })).to.equal('timestamp');
      expect(printFieldType({ kind: 'vector', dims: 3 })).to.equal('vector<3>');
      expect(printFieldType({ kind: 'array', element: 'text' })).to.equal('[text]');
    });
  });

  describe('printAnnotation', () => {
    it('prints annotations without arguments', () => {
      expect(printAnnotation({ kind: 'hash' })).to.equal('@hash');
      expect(printAnnotation({ kind: 'sorted' })).to.equal('@sorted');
      expect(printAnnotation({ kind: 'text' })).to.equal('@text');
    });

    it("prints @text's tokenizer when it has one", () => {
      expect(printAnnotation({ kind: 'text', tokenizer: 'english' })).to.equal('@text(english)');
      expect(printAnnotation({ kind: 'text', tokenizer: 'exact' })).to.equal('@text(exact)');
      expect(printAnnotation({ kind: 'text', tokenizer: 'porter' })).to.equal('@text(porter)');
    });

    it('prints a ttl in the largest unit that states it exactly', () => {
      const printed = [1, 1000, 10_000, 90_000, 60_000, 3_600_000, 86_400_000, 1_209_600_000, 1_500].map((ms) =>
        printAnnotation({ kind: 'ttl', ms }),
      );
      expect(printed).to.deep.equal([
        '@ttl(1ms)',
        '@ttl(1s)',
        '@ttl(10s)',
        '@ttl(90s)',
        '@ttl(1m)',
        '@ttl(1h)',
        '@ttl(1d)',
        '@ttl(2w)',
        '@ttl(1500ms)',
      ]);
    });

    it('prints hnsw with the options it has', () => {
      expect(printAnnotation({ kind: 'hnsw', metric: 'cosine' })).to.equal('@hnsw(cosine)');
      expect(printAnnotation({ kind: 'hnsw', metric: 'cosine', m: 16 })).to.equal('@hnsw(cosine, m = 16)');
      expect(printAnnotation({ kind: 'hnsw', metric: 'l2', ef: 64, m: 8 })).to.equal('@hnsw(l2, m = 8, ef = 64)');
      expect(printAnnotation({ kind: 'hnsw', metric: 'ip', efConstruction: 200, ef: 512 })).to.equal(
        '@hnsw(ip, ef = 512, ef_construction = 200)',
      );
    });
  });

  describe('printExpr', () => {
    it('prints strings as JSON does', () => {
      expect(printExpr({ kind: 'Literal', type: 'text', value: 'a "b"\n\u0001é' })).to.equal('"a \\"b\\"\\n\\u0001é"');
    });

    it('keeps a float a float', () => {
      expect(printExpr({ kind: 'Literal', type: 'float', value: 1 })).to.equal('1.0');
      expect(printExpr({ kind: 'Literal', type: 'float', value: -0 })).to.equal('-0.0');
      expect(printExpr({ kind: 'Literal', type: 'float', value: 1e21 })).to.equal('1e+21');
      expect(printExpr({ kind: 'Literal', type: 'float', value: 0.5 })).to.equal('0.5');
    });

    it('prints durations as their milliseconds', () => {
      expect(canonicalCondition('at > now() - 7d')).to.equal('at > now() - 604800000');
    });

    it('parenthesises a negation so that it reads back as one', () => {
      const negate = (operand: Expr): Expr => ({ kind: 'Negate', operand });
      expect(printExpr(negate(int(5)))).to.equal('-(5)');
      expect(printExpr(negate(int(-5)))).to.equal('-(-5)');
      expect(printExpr(negate(negate({ kind: 'Field', name: 'a' })))).to.equal('-(-a)');
      expect(
        printExpr(negate({ kind: 'Binary', op: '+', left: int(1), right: { kind: 'Field', name: 'a' } })),
      ).to.equal('-(1 + a)');
    });

    it('writes only the parentheses the precedence needs', () => {
      expect(canonicalCondition('((a + b)) * (c - (d - e)) = (((f)))')).to.equal('(a + b) * (c - (d - e)) = f');
      expect(canonicalCondition('(a * b) + (c / d) = 1')).to.equal('a * b + c / d = 1');
      expect(canonicalCondition('a - (b + c) = a - b - c')).to.equal('a - (b + c) = a - b - c');
    });

    it('quotes object keys that are not names', () => {
      expect(canonical('insert into t {"a": 1, "key 2": 2, "": 3}')).to.equal(
        'insert into t {a: 1, "key 2": 2, "": 3}',
      );
    });
  });

  describe('printCondition', () => {
    it('writes only the parentheses the precedence needs', () => {
      expect(canonicalCondition('(a and b) or (c and d)')).to.equal('a and b or c and d');
      expect(canonicalCondition('a and (b or c)')).to.equal('a and (b or c)');
      expect(canonicalCondition('a or (b or c)')).to.equal('a or (b or c)');
      expect(canonicalCondition('not (a and b)')).to.equal('not (a and b)');
      expect(canonicalCondition('(not a) and b')).to.equal('not a and b');
    });

    it('prints the negation of in, like and has as SQL writes it', () => {
      expect(canonicalCondition('not n in [1, 2]')).to.equal('n not in [1, 2]');
      expect(canonicalCondition('not (t like "a%") and not tags has "x"')).to.equal(
        't not like "a%" and tags not has "x"',
      );
      expect(canonicalCondition('not n not in $1')).to.equal('not n not in $1');
    });
  });

  describe('printStatement', () => {
    it('prints the seed collection as it is written', () => {
      const text =
        'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))';
      expect(canonical(text)).to.equal(text);
    });

    it('writes keywords in lower case and leaves asc out', () => {
      expect(canonical('GET notes SELECT a ORDER a ASC, b DESC LIMIT 1;')).to.equal(
        'get notes select a order a, b desc limit 1',
      );
    });
  });

  describe('round trip', () => {
    // parse(print(parse(s))) is parse(s), positions aside.
    const corpus = [
      'create collection notes (title text)',
      'create collection if not exists memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms), vector vector<3> @hnsw(cosine))',
      'create collection t (a int required unique default 3 @hash @sorted, b float default -1.5, c bool default true, d json default {x: [1, {y: null}]})',
      'create collection t (a vector<4096> @hnsw(ip, m = 2, ef = 4096), b [timestamp] @sorted, c timestamp @ttl(90m), d [bool], e [float], f [int] @hash)',
      'create collection t (a timestamp default now() @ttl(2w), b text default "x\\ty" @text)',
      'create collection t (a text @text(exact), b [text] @text(exact) @hash)',
      'create collection t (a text @text(porter))',
      'alter collection notes add body text required @text(english)',
      'drop collection notes',
      'drop collection if exists notes',
      'alter collection notes add rank int default 0 @sorted',
      'alter collection notes drop rank',
      'insert into notes {title: "hi"}',
      'insert into notes [{title: "a"}, {title: "b", tags: ["x", "y"]}]',
      'insert into memories {text: $1, tags: $2, at: now(), expires: now() + $3, vector: $4}',
      'insert into memories {text: "the deploy runs on fridays", tags: ["ops"], at: now(), expires: null, vector: [0.9, 0.1, 0]}',
      'insert into memories {text: "the user is debugging the login page", tags: ["session"], at: now(), expires: now() + 10000}',
      'insert into t {a: -5, b: -0.0, c: 1.0, d: 1e21, e: 2.5e-7, f: -(5), g: - -5, h: -x, i: "\\u0000\\"\\\\"}',
      'insert into t {"key 2": {"": 1, _raw: [], true: false}}',
      'put notes {id: 7, title: "x", n: $1}',
      'set notes {done: true, n: n + 1} where id = $1',
      'set notes {title: upper(title)} where true',
      'del notes where true',
      'del notes where at < now() - 7d and not pinned',
      'get notes',
      'get notes select *',
      'get memories select text, tags, at match text "when do we deploy" limit 5',
      'get memories select text, tags, at match text "which region" near vector [0, 0.1, 1] fuse limit 5',
      'get memories select text where tags has "session" limit 5',
      'get memories select text, tags, at order at desc, id desc limit 5',
      'get memories where tags has "session" count',
      'get notes match * $1 where owner = $jwt.sub limit $2 offset $3',
      'get notes near v $1 where n in [1, 2, 3] limit 10',
      'get notes where a = 1 or b = 2 and c = 3',
      'get notes where (a = 1 or b = 2) and c = 3',
      'get notes where a or (b or c)',
      'get notes where not (a and b) or not c',
      'get notes where not not a',
      'get notes where n not in $1 and title not like "%x%" and tags not has "y"',
      'get notes where a is null and b is not null',
      'get notes where (a + 1) * 2 > -3',
      'get notes where a - (b - c) = a / (b * c)',
      'get notes where -a = -(1 + b)',
      'get notes where len(tags) > 0 and lower(title) = coalesce($1, "x")',
      'get notes where (done)',
      'get notes where $1',
      'get notes where title = "x\\" or 1 = 1 --"',
      'get notes where a = [] and b = {}',
      'get order where limit = 1 order count limit 2',
      'schema',
      'schema notes',
      'compact',
      'compact notes',
    ];

    for (const text of corpus) {
      it(`keeps ${JSON.stringify(text.slice(0, 70))} the same tree`, () => {
        const tree = withoutPos(parseStatement(text));
        const printed = printStatement(tree);
        expect(withoutPos(parseStatement(printed)), printed).to.deep.equal(tree);
        expect(printStatement(parseStatement(printed)), 'printing is stable').to.equal(printed);
      });
    }

    const conditions = ['owner = $jwt.sub', 'year >= $1 and tags has $2', 'not (a = 1 or b)', 'x in [1, -2.5, "s"]'];
    for (const text of conditions) {
      it(`keeps the condition ${JSON.stringify(text)} the same tree`, () => {
        const tree: Cond = withoutPos(parseCondition(text));
        expect(withoutPos(parseCondition(printCondition(tree)))).to.deep.equal(tree);
      });
    }
  });
});
