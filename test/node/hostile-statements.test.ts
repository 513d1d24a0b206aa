import { expect } from 'chai';
import { FenecDatabase } from '../../node/database.js';
import { MAX_LIKE_PATTERN_BYTES } from '../../node/query/compile/compiler.js';
import { MAX_DEPTH, MAX_TERMS } from '../../shared/fenecql/limits.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

const repeat = (n: number, text: string, separator = ''): string => Array<string>(n).fill(text).join(separator);

/** `leaf or leaf or …` as a balanced tree of parentheses: 2^levels leaves, `levels` deep. */
function balancedOr(levels: number, leaf: string): string {
  return levels === 0 ? leaf : `(${balancedOr(levels - 1, leaf)} or ${balancedOr(levels - 1, leaf)})`;
}

/** Milliseconds a call takes (the best of three, so that a busy machine's pauses do not count). */
function bestOf3(fn: () => unknown): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    fn();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

describe('hostile statements against a database', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const q = (statement: string, ...params: unknown[]) => db.execute(statement, params);

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('h.fenec'), readOnly: false, program: 'test' });
    q('create collection docs (year int, price float, title text, at timestamp, tags [text], j json, v vector<4>)');
    q(
      'insert into docs [{year: 250, price: 1.5, title: "a", at: 0, tags: ["x"], j: {}, v: [1, 2, 3, 4]}, {year: 2, title: "b"}]',
    );
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  describe('planning costs what the statement is long', () => {
    // Before, the planner compiled each side of an operator twice (once to learn its type): 2^n for n terms.
    it('plans and runs a chain of 250 terms, and 250 nested coalesce, at once', () => {
      expect(
        bestOf3(() => expect(q(`get docs where year = ${repeat(250, '1', ' + ')} count`)).to.deep.equal({ count: 1 })),
      ).to.be.below(1000);
      expect(
        bestOf3(() =>
          expect(q(`get docs where year = ${repeat(250, 'coalesce(')}250${repeat(250, ', 1)')} count`)).to.deep.equal({
            count: 1,
          }),
        ),
      ).to.be.below(1000);
      expect(bestOf3(() => q(`get docs where year = ${repeat(200, '1.5', ' * ')} * 0 + year count`))).to.be.below(1000);
      expect(
        bestOf3(() => q(`get docs where at + ${repeat(120, '1d', ' + ')} > at - ${repeat(120, '1d', ' - ')} count`)),
      ).to.be.below(1000);
    });

    it('grows linearly: 240 terms cost about 8 times 30 terms, not 2^210 times', () => {
      const fresh = (n: number, salt: number) => `get docs where year = ${repeat(n, '1', ' + ')} + ${salt} count`;
      let salt = 0;
      // Each run plans a statement not seen before, so that the plan cache does not answer it.
      const cost = (n: number) => bestOf3(() => q(fresh(n, salt++)));
      cost(30);
      const small = Math.max(cost(30), 0.5);
      const large = cost(240);
      expect(large / small).to.be.below(64);
    });

    it('puts values to their types once, in insert and set as in where', () => {
      expect(
        q(`insert into docs {year: ${repeat(200, '1', ' + ')}, at: now() + ${repeat(100, '1h', ' + ')}}`),
      ).to.deep.include({ count: 1 });
      expect(q(`set docs {price: ${repeat(200, '0.5', ' + ')}} where year = 200`)).to.deep.equal({ count: 1 });
      expect(q('get docs select price where year = 200')).to.deep.equal({ rows: [{ id: 3, price: 100 }], count: 1 });
    });
  });

  describe('limits past which a statement is refused whole', () => {
    it('refuses nesting past the limit in every statement, changing nothing', () => {
      for (const statement of [
        `insert into docs {year: ${repeat(MAX_DEPTH + 1, '1', ' + ')}}`,
        `insert into docs {j: ${repeat(1958, '[')}1${repeat(1958, ']')}}`,
        `insert into docs {j: ${repeat(1582, '{a: ')}1${repeat(1582, '}')}}`,
        `set docs {year: 1} where ${repeat(999, 'year = 1', ' or ')}`,
        `del docs where ${repeat(497, 'not ')}year = 1`,
      ]) {
        expect(refusal(() => q(statement)).code).to.equal('too_complex');
      }
      expect(q('get docs count')).to.deep.equal({ count: 2 });
    });

    it(`refuses a condition of more than ${MAX_TERMS} terms, shallow as it may be, and takes one of fewer`, () => {
      // 512 comparisons of 3 terms each and 511 ors: 2 047 terms, 9 levels deep.
      const err = refusal(() => q(`get docs where ${balancedOr(9, 'year = 1')} count`));
      expect(err.code).to.equal('too_complex');
      expect(err.message).to.contain(`more than ${MAX_TERMS} terms in one condition or row`);
      expect(err.position?.line).to.equal(1);
      expect(q(`get docs where ${balancedOr(8, 'year = 2')} count`)).to.deep.equal({ count: 1 });
      // The values of one written row are held to it as well; a bulk insert's rows each on their own.
      expect(
        refusal(() => q(`insert into docs {year: ${balancedOr(10, '1').replaceAll(' or ', ' + ')}}`)).code,
      ).to.equal('too_complex');
      expect(q(`insert into docs [${repeat(3000, '{year: 1 + 1}', ', ')}]`)).to.deep.include({ count: 3000 });
    });

    it('refuses a condition 1000 times the usual size (32 768 comparisons) at once', () => {
      const started = performance.now();
      expect(refusal(() => q(`get docs where ${balancedOr(15, 'year = 1')} count`)).code).to.equal('too_complex');
      // Planning it would take SQLite minutes; the limit stops the compiler at its 2 001st term.
      expect(performance.now() - started).to.be.below(5000);
    });

    it(`refuses a like pattern over ${MAX_LIKE_PATTERN_BYTES} bytes, and takes one of exactly that`, () => {
      const err = refusal(() => q(`get docs where title like "${'%a'.repeat(25_001)}" count`));
      expect(err.code).to.equal('too_complex');
      expect(err.position).to.include({ line: 1, column: 16 });
      expect(q(`get docs where title like "${'%'.repeat(MAX_LIKE_PATTERN_BYTES)}" count`)).to.deep.equal({ count: 2 });
      // Bytes of UTF-8, as SQLite counts them: 25 001 two-byte letters are over.
      expect(refusal(() => q(`get docs where title like "${'é'.repeat(25_001)}" count`)).code).to.equal('too_complex');
    });
  });

  describe('numbers past their range are refused, never stored', () => {
    const invalid = (statement: string, ...params: unknown[]) => {
      const err = refusal(() => q(statement, ...params));
      expect(err.code, err.message).to.equal('invalid_number');
      return err;
    };

    it('refuses a vector component past float32 (1e39 became Infinity, read back as null) in insert, put, set, params and near', () => {
      expect(invalid('insert into docs {v: [1e39, 1, 1, 1]}').message).to.contain(
        'component 0 of field v is 1e+39, past the range',
      );
      invalid('put docs {id: 9, v: [1, -3.5e38, 1, 1]}');
      invalid('set docs {v: [1, 1, 1, 1e39]} where true');
      invalid('insert into docs {v: $1}', [1e39, 1, 1, 1]);
      expect(invalid('get docs near v [3.5e38, 1, 1, 1] limit 1').message).to.contain(
        'component 0 of the vector near v is 3.5e+38',
      );
      invalid('get docs near v $1 limit 1', [1, 1, 1, -1e39]);
      // float32's largest is taken.
      expect(q('insert into docs {v: [3.4028234663852886e38, 1, 1, 1]}')).to.deep.include({ count: 1 });
      expect(q('get docs select v where id = 3')).to.deep.equal({
        rows: [{ id: 3, v: [3.4028235e38, 1, 1, 1] }],
        count: 1,
      });
    });

    it('refuses arithmetic that overflows, where it is written and where it is read', () => {
      expect(invalid('insert into docs {price: 1e308 * 10}').message).to.equal(
        'the * of the expression at line 1, column 26 overflows: its result is past ±1.8e308',
      );
      invalid('insert into docs {price: 1e308 / 1e-10}');
      invalid('insert into docs {price: 1e308 * 10 - 1e308 * 10}');
      invalid('set docs {price: price * 1e308 * 10} where true');
      invalid('get docs where price * 1e308 * 1e308 > 1 count');
      invalid('insert into docs {price: $1 * $1}', 1e200);
      // ints stay exact inside ±2^53, as when they are given.
      invalid('insert into docs {year: 9007199254740991 + 1}');
      invalid('get docs where year * 9007199254740991 > 1 count');
      invalid('insert into docs {at: now() + 9007199254740991}');
      expect(q('get docs select price where price > 1e300 count')).to.deep.equal({ count: 0 });
      expect(q('get docs count')).to.deep.equal({ count: 2 });
    });

    it('keeps arithmetic inside the range exact, and an index serving now() - 7d', () => {
      expect(q('get docs select id where year * 36028797018963 + 1 = 9007199254740751')).to.deep.equal({
        rows: [{ id: 1 }],
        count: 1,
      });
      expect(q('get docs where price * 1e307 > 1e307 count')).to.deep.equal({ count: 1 });
      expect(q('get docs where 7 / 0 is null count')).to.deep.equal({ count: 2 });
      q('alter collection docs add seen timestamp @sorted');
      expect(db.explain('get docs where seen > now() - 7d count').join()).to.contain('INDEX');
    });

    it("refuses a timestamp past a date's range (it made every read of the collection fail)", () => {
      const err = refusal(() => q('insert into docs {at: 8640000000000001}'));
      expect(err.code).to.equal('invalid_value');
      expect(err.message).to.contain('past ±8640000000000000');
      expect(refusal(() => q('insert into docs {at: $1}', -9007199254740991)).code).to.equal('invalid_value');
      expect(q('insert into docs {at: -8640000000000000}')).to.deep.include({ count: 1 });
      expect(q('get docs select at where id = 3')).to.deep.equal({
        rows: [{ id: 3, at: '-271821-04-20T00:00:00.000Z' }],
        count: 1,
      });
    });

    it('refuses a parameter JSON reads as Infinity', () => {
      expect(invalid('insert into docs {price: $1}', Infinity).message).to.contain(
        '$1 is a number beyond the range of a double',
      );
      invalid('get docs where year in $1 count', [1, -Infinity]);
    });
  });

  describe('parameters', () => {
    const nested = (n: number): unknown => JSON.parse(`${'['.repeat(n)}1${']'.repeat(n)}`);

    it(`stores a JSON parameter ${MAX_DEPTH} levels deep, and refuses a deeper one (4 111, 100 000) with too_complex`, () => {
      expect(q('insert into docs {j: $1}', nested(MAX_DEPTH))).to.deep.include({ count: 1 });
      expect(JSON.stringify(q('get docs select j where id = 3'))).to.contain(`${'['.repeat(MAX_DEPTH)}1`);
      for (const depth of [MAX_DEPTH + 1, 4111, 100_000]) {
        const err = refusal(() => q('insert into docs {j: $1}', nested(depth)));
        expect(err.code).to.equal('too_complex');
        expect(err.message).to.match(/^\$1(\[0\])+ nests deeper than 256 levels/);
      }
      const objects = JSON.parse(`${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`);
      expect(refusal(() => q('get docs where j = $2 count', 1, objects)).message).to.match(/^\$2(\.a)+ nests deeper/);
      expect(refusal(() => q('get docs where year in $1 count', [nested(300)])).code).to.equal('too_complex');
      expect(q('get docs count')).to.deep.equal({ count: 3 });
    });
  });
});
