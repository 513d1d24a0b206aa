import { expect } from 'chai';
import type { ErrorCode } from '../../../shared/errors.js';
import type { Cond } from '../../../shared/fenecql/ast.js';
import {
  checkJsonValue,
  checkTreeDepth,
  loneSurrogateAt,
  MAX_DEPTH,
  MAX_STATEMENT_LENGTH,
} from '../../../shared/fenecql/limits.js';
import { parseCondition, parseStatement } from '../../../shared/fenecql/parser.js';
import { printStatement } from '../../../shared/fenecql/print.js';
import { refusal } from '../../helpers/assertions.js';

const repeat = (n: number, text: string, separator = ''): string => Array<string>(n).fill(text).join(separator);

/** The statements of issue 9, nested or chained `n` levels deep. */
const SHAPES: Readonly<Record<string, (n: number) => string>> = {
  'a chain of +': (n) => `get docs where year = ${repeat(n + 1, '1', ' + ')} count`,
  'a chain of *': (n) => `get docs where year = ${repeat(n + 1, '1.5', ' * ')} count`,
  'nested coalesce': (n) => `get docs where year = ${repeat(n, 'coalesce(')}1${repeat(n, ', 1)')} count`,
  'nested parentheses': (n) => `get docs where year = ${repeat(n, '(')}1${repeat(n, ')')} count`,
  'a not chain': (n) => `get docs where ${repeat(n, 'not ')}year = 1 count`,
  'an or chain': (n) => `get docs where ${repeat(n + 1, 'year = 1', ' or ')} count`,
  'an and chain': (n) => `get docs where ${repeat(n + 1, 'year = 1', ' and ')} count`,
  'unary minus': (n) => `get docs where year = ${repeat(n, '- ')}year count`,
  'nested arrays': (n) => `insert into docs {j: ${repeat(n, '[')}1${repeat(n, ']')}}`,
  'nested objects': (n) => `insert into docs {j: ${repeat(n, '{a: ')}1${repeat(n, '}')}}`,
  'an insert value': (n) => `insert into docs {year: ${repeat(n + 1, '1', ' + ')}}`,
  'a set value': (n) => `set docs {year: ${repeat(n + 1, '1', ' - ')}} where true`,
};

/** The deepest nesting of a tree, counted as the limit counts it (objects with a kind); recursive, for small trees. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return Math.max(0, ...value.map(depthOf));
  if (value === null || typeof value !== 'object') return 0;
  const own = typeof (value as { kind?: unknown }).kind === 'string' ? 1 : 0;
  return (
    own +
    Math.max(
      0,
      ...Object.entries(value)
        .filter(([k]) => k !== 'pos')
        .map(([, v]) => depthOf(v)),
    )
  );
}

function expectTooComplex(run: () => unknown, code: ErrorCode = 'too_complex'): void {
  const err = refusal(run);
  expect(err.code, err.message).to.equal(code);
  expect(err.status).to.equal(400);
}

describe('the limits of a statement', () => {
  describe('nesting', () => {
    for (const [name, shape] of Object.entries(SHAPES)) {
      it(`takes ${name} well inside ${MAX_DEPTH} levels, and refuses it past them with too_complex, its line and column`, () => {
        const statement = parseStatement(shape(MAX_DEPTH - 8));
        expect(depthOf(statement)).to.be.at.most(MAX_DEPTH);
        const err = refusal(() => parseStatement(shape(MAX_DEPTH + 1)));
        expect(err.code, err.message).to.equal('too_complex');
        expect(err.message).to.contain(`deeper than ${MAX_DEPTH} levels`);
        expect(err.position?.line).to.equal(1);
        expect(err.message).to.contain(`at line 1, column ${err.position!.column}`);
        expect(err.hint).to.be.a('string');
      });
    }

    it('points at the level that goes past the limit: the 257th parenthesis, the 257th or', () => {
      const parens = refusal(() => parseStatement(SHAPES['nested parentheses']!(1000)));
      expect(parens.position?.column).to.equal('get docs where year = '.length + MAX_DEPTH + 1);
      const chain = refusal(() => parseCondition(repeat(1000, 'a = 1', ' or ')));
      // Each term and its " or " take 9 characters; the 257th "or" follows the 257th term.
      expect(chain.position?.column).to.equal(MAX_DEPTH * 9 + 7);
    });

    it('counts the tree as built, where a long chain puts its first term deepest', () => {
      // 200 minus signs and then 200 more terms: neither alone passes the limit, the tree does.
      const text = `get docs where year = ${repeat(200, '- ')}year${repeat(200, ' + 1')} count`;
      expectTooComplex(() => parseStatement(text));
      const fits = `get docs where year = ${repeat(100, '- ')}year${repeat(100, ' + 1')} count`;
      expect(depthOf(parseStatement(fits))).to.be.at.most(MAX_DEPTH);
    });

    it('holds conditions alone (MCP filters, policy lines) to the same limit', () => {
      expectTooComplex(() => parseCondition(`${repeat(300, 'not ')}a = 1`));
      expectTooComplex(() => parseCondition(`a = ${repeat(2000, '(')}1${repeat(2000, ')')}`));
      expect(parseCondition(`${repeat(200, 'not ')}a = 1`).kind).to.equal('Not');
    });

    it('answers inputs 1000 times the usual size (three levels) at once, without recursing through them', () => {
      for (const shape of Object.values(SHAPES)) {
        const started = performance.now();
        expectTooComplex(() => parseStatement(shape(3000)));
        // Bounded, and far from the seconds an exponential or stack-deep walk would take.
        expect(performance.now() - started).to.be.below(1000);
      }
      // A million parentheses: past any stack, refused at the 257th.
      expectTooComplex(() => parseStatement(`get docs where ${repeat(1_000_000, '(')}`));
    });

    it('keeps what it takes printable and parsable again', () => {
      for (const shape of Object.values(SHAPES)) {
        const statement = parseStatement(shape(100));
        expect(printStatement(parseStatement(printStatement(statement)))).to.equal(printStatement(statement));
      }
    });
  });

  describe('length', () => {
    it(`refuses a statement over ${MAX_STATEMENT_LENGTH} characters before reading it, pointing where the excess starts`, () => {
      const long = `get docs where title = "${'x'.repeat(MAX_STATEMENT_LENGTH)}"`;
      const err = refusal(() => parseStatement(long));
      expect(err.code).to.equal('too_complex');
      expect(err.position).to.deep.equal({ line: 1, column: MAX_STATEMENT_LENGTH + 1, offset: MAX_STATEMENT_LENGTH });
      const lines = `get docs\nwhere title = "${'x'.repeat(MAX_STATEMENT_LENGTH)}"`;
      expect(refusal(() => parseCondition(lines)).position).to.include({ line: 2, column: MAX_STATEMENT_LENGTH - 8 });
    });

    it('takes a statement of exactly the limit', () => {
      const filler = `get docs where title = ""`;
      const text = `${filler.slice(0, -1)}${'x'.repeat(MAX_STATEMENT_LENGTH - filler.length)}"`;
      expect(text.length).to.equal(MAX_STATEMENT_LENGTH);
      expect(parseStatement(text).kind).to.equal('Get');
    });
  });

  describe('trees built without the parser', () => {
    it('refuses a tree deeper than the limit, pointing at the first node past it', () => {
      let cond: Cond = {
        kind: 'Compare',
        op: '=',
        left: { kind: 'Field', name: 'a' },
        right: { kind: 'Literal', type: 'int', value: 1 },
      };
      for (let i = 0; i < 100_000; i++)
        cond = { kind: 'Not', operand: cond, pos: { line: 1, column: i + 1, offset: i } };
      const err = refusal(() => checkTreeDepth(cond));
      expect(err.code).to.equal('too_complex');
      expect(err.position?.column).to.equal(100_000 - MAX_DEPTH);
    });
  });

  describe('JSON values (params, tool arguments)', () => {
    const nested = (n: number, open: string, close: string): unknown =>
      JSON.parse(`${open.repeat(n)}1${close.repeat(n)}`);

    it(`takes ${MAX_DEPTH} levels of arrays and objects, and refuses more with too_complex naming where`, () => {
      checkJsonValue(nested(MAX_DEPTH, '[', ']'), '$1');
      checkJsonValue(nested(MAX_DEPTH, '{"a":', '}'), '$1');
      const err = refusal(() => checkJsonValue({ rows: [nested(MAX_DEPTH, '{"a":', '}')] }, 'write arguments'));
      expect(err.code).to.equal('too_complex');
      expect(err.message).to.match(/^write arguments\.rows\[0\](\.a)+ nests deeper than 256 levels/);
    });

    it('walks a value 100 000 levels deep without recursing', () => {
      expectTooComplex(() => checkJsonValue(nested(100_000, '[', ']'), '$1'));
    });

    it('refuses a number JSON reads as Infinity with invalid_number, naming where it is', () => {
      const err = refusal(() => checkJsonValue(JSON.parse('[1, {"v": [2, 1e400]}]'), '$2'));
      expect(err.code).to.equal('invalid_number');
      expect(err.message).to.contain('$2[1].v[1] is a number beyond the range of a double');
      expectTooComplex(() => checkJsonValue({ 'odd key': -Infinity }, '$1'), 'invalid_number');
      checkJsonValue([1.7976931348623157e308, -5e-324, 0, 'Infinity', null, true], '$1');
    });

    it('refuses a string or key holding a lone surrogate with invalid_value, naming where and which; takes pairs', () => {
      const inArray = refusal(() =>
        checkJsonValue(JSON.parse(String.raw`[{"title": "ok"}, {"title": "fox \ud83e!"}]`), '$1'),
      );
      expect(inArray.code).to.equal('invalid_value');
      expect(inArray.message).to.equal(
        String.raw`$1[1].title holds a lone surrogate (\ud83e) at character 4: text must be valid Unicode`,
      );
      expect(inArray.hint).to.contain(String.raw`\ud83d\ude00`);
      expect(refusal(() => checkJsonValue(JSON.parse(String.raw`"\udc00"`), 'search.text')).message).to.contain(
        String.raw`search.text holds a lone surrogate (\udc00) at character 0`,
      );
      expect(
        refusal(() => checkJsonValue(JSON.parse(String.raw`["a", ["\ud800\ud800\udc00"]]`), '$2')).message,
      ).to.contain(String.raw`$2[1][0] holds a lone surrogate (\ud800) at character 0`);
      const key = refusal(() => checkJsonValue(JSON.parse(String.raw`{"meta": {"k\udfff": 1}}`), '$1'));
      expect(key.message).to.equal(
        String.raw`$1.meta has a key that holds a lone surrogate (\udfff) at character 1: text must be valid Unicode`,
      );
      checkJsonValue(JSON.parse(String.raw`["\ud83e\udd8a fox", {"\ud83d\ude00": "é"}, "\ufffd"]`), '$1');
    });

    it('finds the first lone surrogate of a string, and none in pairs', () => {
      expect(loneSurrogateAt('plain')).to.equal(-1);
      expect(loneSurrogateAt('🦊 and 😀')).to.equal(-1);
      expect(loneSurrogateAt('a\ud83d')).to.equal(1);
      expect(loneSurrogateAt('\ude00a')).to.equal(0);
      expect(loneSurrogateAt('🦊\ude00')).to.equal(2);
      expect(loneSurrogateAt('\ud83d\ud83d\ude00')).to.equal(0);
    });
  });
});
