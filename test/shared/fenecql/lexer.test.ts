import { expect } from 'chai';
import { FenecError } from '../../../shared/errors.js';
import type { ErrorCode } from '../../../shared/errors.js';
import { Lexer } from '../../../shared/fenecql/lexer.js';
import type { Token } from '../../../shared/fenecql/lexer.js';

/** Every token of `text` up to (not including) the end. */
function tokens(text: string): Token[] {
  const lexer = new Lexer(text);
  const out: Token[] = [];
  for (let token = lexer.next(); token.kind !== 'eof'; token = lexer.next()) out.push(token);
  return out;
}

function kindsAndValues(text: string): Array<[string, unknown]> {
  return tokens(text).map((t) => [t.kind, t.value]);
}

function lexError(text: string): FenecError {
  try {
    tokens(text);
  } catch (err) {
    expect(err).to.be.instanceOf(FenecError);
    return err as FenecError;
  }
  return expect.fail(`expected ${JSON.stringify(text)} to be refused`);
}

function expectRefused(text: string, code: ErrorCode, line: number, column: number): FenecError {
  const err = lexError(text);
  expect(err.code, text).to.equal(code);
  expect(err.position, text).to.include({ line, column });
  expect(err.message, text).to.contain(`line ${line}, column ${column}`);
  return err;
}

describe('Lexer', () => {
  describe('names and punctuation', () => {
    it('reads names as written, keeping their case', () => {
      expect(kindsAndValues('GET notes _x a1_b')).to.deep.equal([
        ['name', 'GET'],
        ['name', 'notes'],
        ['name', '_x'],
        ['name', 'a1_b'],
      ]);
    });

    it('reads every punctuation mark, the two-character ones whole', () => {
      const marks = '( ) [ ] { } , : ; = != < <= > >= + - * / @';
      expect(tokens(marks).map((t) => [t.kind, t.value])).to.deep.equal(marks.split(' ').map((m) => ['punct', m]));
      expect(kindsAndValues('a<=b')).to.deep.equal([
        ['name', 'a'],
        ['punct', '<='],
        ['name', 'b'],
      ]);
    });

    it('leaves a minus before a number to the parser', () => {
      expect(kindsAndValues('-5')).to.deep.equal([
        ['punct', '-'],
        ['number', 5],
      ]);
    });

    it('accepts a name of 64 characters and refuses one of 65', () => {
      expect(tokens('a'.repeat(64))[0]?.value).to.equal('a'.repeat(64));
      const err = expectRefused(`get ${'b'.repeat(65)}`, 'invalid_name', 1, 5);
      expect(err.message).to.contain('at most 64');
    });

    it('answers eof at the end, and again on every later call', () => {
      const lexer = new Lexer('a');
      lexer.next();
      expect(lexer.next()).to.deep.include({ kind: 'eof', pos: { line: 1, column: 2, offset: 1 } });
      expect(lexer.next().kind).to.equal('eof');
    });
  });

  describe('positions', () => {
    it('gives each token its 1-based line and column and its 0-based offset', () => {
      const [get, notes, where, a] = tokens('get notes\n  where\r\n\ta');
      expect(get?.pos).to.deep.equal({ line: 1, column: 1, offset: 0 });
      expect(notes?.pos).to.deep.equal({ line: 1, column: 5, offset: 4 });
      expect(where?.pos).to.deep.equal({ line: 2, column: 3, offset: 12 });
      expect(a?.pos).to.deep.equal({ line: 3, column: 2, offset: 20 });
    });
  });

  describe('comments and whitespace', () => {
    it('skips a comment to the end of its line', () => {
      expect(kindsAndValues('get -- the notes\nnotes -- → 1')).to.deep.equal([
        ['name', 'get'],
        ['name', 'notes'],
      ]);
    });

    it('takes two minus signs as a comment even straight after a value, as SQL does', () => {
      expect(kindsAndValues('a--1')).to.deep.equal([['name', 'a']]);
    });

    it('refuses whitespace that JSON does not know, naming it', () => {
      const err = expectRefused('a\u00a0b', 'invalid_character', 1, 2);
      expect(err.message).to.contain('U+00A0');
    });
  });

  describe('strings', () => {
    it('decodes every JSON escape', () => {
      const [token] = tokens(String.raw`"q\" b\\ s\/ \b\f\n\r\t \u00e9\u00E9"`);
      expect(token).to.deep.include({ kind: 'string', value: 'q" b\\ s/ \b\f\n\r\t éé' });
    });

    it('keeps the string as written in the token text', () => {
      expect(tokens(String.raw`"a\nb"`)[0]?.text).to.equal(String.raw`"a\nb"`);
    });

    it('reads the empty string and characters outside ASCII', () => {
      expect(kindsAndValues('"" "héllo 🦊"')).to.deep.equal([
        ['string', ''],
        ['string', 'héllo 🦊'],
      ]);
    });

    it('refuses a string without its closing quote, pointing at the opening one', () => {
      expectRefused('a = "abc', 'unterminated_string', 1, 5);
    });

    it('refuses a string that runs into a line break', () => {
      const err = expectRefused('a = "abc\n"', 'unterminated_string', 1, 5);
      expect(err.message).to.contain('cannot span lines');
    });

    it('refuses an escape JSON does not define, pointing at the backslash', () => {
      const err = expectRefused(String.raw`"ab\x"`, 'invalid_escape', 1, 4);
      expect(err.message).to.contain('"\\x"');
    });

    it('refuses \\u without four hex digits', () => {
      expectRefused(String.raw`"\u12"`, 'invalid_escape', 1, 2);
      expectRefused(String.raw`"\u12g4"`, 'invalid_escape', 1, 2);
    });

    it('refuses a string holding a lone surrogate, escaped or raw, pointing at the string; takes a pair', () => {
      const escaped = expectRefused(String.raw`a = "fox \ud83e"`, 'invalid_escape', 1, 5);
      expect(escaped.message).to.contain(String.raw`a lone surrogate (\ud83e) as its character 4`);
      expectRefused('a = "x\udc00y"', 'invalid_escape', 1, 5);
      expect(kindsAndValues(String.raw`"\ud83e\udd8a"`)).to.deep.equal([['string', '🦊']]);
    });

    it('refuses a raw control character inside a string, naming it', () => {
      const err = expectRefused('"a\tb"', 'invalid_character', 1, 3);
      expect(err.message).to.contain('U+0009');
    });
  });

  describe('numbers', () => {
    it('reads integers and floats, marking which is which', () => {
      const read = tokens('0 42 1.5 2e3 2.5E-2 9007199254740991').map(
        (t) => t.kind === 'number' && [t.value, t.integer],
      );
      expect(read).to.deep.equal([
        [0, true],
        [42, true],
        [1.5, false],
        [2000, false],
        [0.025, false],
        [9007199254740991, true],
      ]);
    });

    it('refuses an integer outside ±2^53', () => {
      expectRefused('9007199254740992', 'invalid_number', 1, 1);
    });

    it('refuses leading zeros', () => {
      expectRefused('x = 01', 'invalid_number', 1, 5);
    });

    it('refuses a decimal point without digits after it', () => {
      expectRefused('1.', 'invalid_number', 1, 1);
      expectRefused('1.e5', 'invalid_number', 1, 1);
    });

    it('refuses an exponent sign without digits', () => {
      expectRefused('1e+', 'invalid_number', 1, 1);
    });

    it('refuses a float that overflows', () => {
      expectRefused('1e400', 'invalid_number', 1, 1);
    });
  });

  describe('durations', () => {
    it('reads each unit as milliseconds', () => {
      expect(kindsAndValues('1ms 10s 30m 12h 7d 2w 0s')).to.deep.equal([
        ['duration', 1],
        ['duration', 10_000],
        ['duration', 1_800_000],
        ['duration', 43_200_000],
        ['duration', 604_800_000],
        ['duration', 1_209_600_000],
        ['duration', 0],
      ]);
    });

    it('refuses a duration that is not a whole number, listing the units', () => {
      const err = expectRefused('@ttl(1.5s)', 'invalid_duration', 1, 6);
      expect(err.message).to.contain('ms, s, m, h, d, w');
    });

    it('refuses an unknown unit, listing the units', () => {
      const err = expectRefused('10x', 'invalid_duration', 1, 1);
      expect(err.message).to.contain('ms, s, m, h, d, w').and.to.contain('"10x"');
    });

    it('takes units in lower case only, as "m" and "M" could be mistaken', () => {
      expectRefused('10S', 'invalid_duration', 1, 1);
    });

    it('refuses a duration past ±2^53 milliseconds', () => {
      expectRefused('9007199254740w', 'invalid_number', 1, 1);
    });
  });

  describe('parameters', () => {
    it('reads $1 to $99', () => {
      expect(kindsAndValues('$1 $9 $10 $99')).to.deep.equal([
        ['param', 1],
        ['param', 9],
        ['param', 10],
        ['param', 99],
      ]);
    });

    it('refuses $0, $100, $01, a lone $ and a parameter run into letters', () => {
      for (const text of ['$0', '$100', '$01', '$', '$ 1', '$1a', '$x']) expectRefused(text, 'invalid_parameter', 1, 1);
    });

    it('reads a $jwt claim', () => {
      expect(tokens('$jwt.sub')[0]).to.deep.include({ kind: 'jwt', value: 'sub', text: '$jwt.sub' });
    });

    it('refuses a malformed $jwt claim', () => {
      for (const text of ['$jwt', '$jwt.', '$jwt.1a', `$jwt.${'c'.repeat(65)}`, '$jwtx.sub']) {
        expectRefused(text, 'invalid_parameter', 1, 1);
      }
    });
  });

  describe('other characters', () => {
    it('refuses a character that starts no token, naming it', () => {
      const err = expectRefused('get notes where a = #', 'invalid_character', 1, 21);
      expect(err.message).to.contain('"#"');
    });

    it('refuses a lone "!" with a hint at "!="', () => {
      const err = expectRefused('a ! b', 'invalid_character', 1, 3);
      expect(err.message).to.contain('"!="');
    });

    it('reports the first bad character in reading order only when it is reached', () => {
      const lexer = new Lexer('get # ');
      expect(lexer.next().value).to.equal('get');
      expect(() => lexer.next())
        .to.throw(FenecError)
        .with.property('code', 'invalid_character');
    });
  });
});
