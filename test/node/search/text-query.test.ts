import { expect } from 'chai';
import fc from 'fast-check';
import { refusal } from '../../helpers/assertions.js';
import { MAX_QUERY_WORDS, matchExpression, queryWords } from '../../../node/search/text-query.js';

const FIELDS = [{ name: 'text' }, { name: 'tags' }];
/** The words as an FTS5 query over every column (`match *`). */
const textQuery = (text: string): string | null => matchExpression(text, '*', FIELDS, 'exact');

describe('queryWords', () => {
  it('splits at everything but letters, digits and marks, as unicode61 does', () => {
    expect(queryWords("what's C++ (v2)?", 'exact')).to.deep.equal(['what', 's', 'C', 'v2']);
    expect(queryWords('x_y-z a·b', 'exact')).to.deep.equal(['x', 'y', 'z', 'a', 'b']);
    expect(queryWords('deploy 😀 on\u0000fridays\u0007', 'exact')).to.deep.equal(['deploy', 'on', 'fridays']);
  });

  it('keeps combining marks inside a word and drops words made of marks alone', () => {
    expect(queryWords('cafe\u0301 \u0301\u0302 नमस्ते', 'exact')).to.deep.equal(['cafe\u0301', 'नमस्ते']);
  });

  it('keeps each word once, compared without case', () => {
    expect(queryWords('Deploy deploy DEPLOY now', 'exact')).to.deep.equal(['Deploy', 'now']);
  });

  it('reads a text of ASCII as the Unicode reading does (its own faster pattern, no NFC)', () => {
    // The reading for every text: unicode61's word characters, a base among them, each word once by its NFC.
    const unicode = (text: string): string[] => {
      const words = [...text.matchAll(/[\p{L}\p{N}\p{M}\p{Co}]+/gu)]
        .map(([word]) => word)
        .filter((word) => /[\p{L}\p{N}\p{Co}]/u.test(word));
      const seen = new Set<string>();
      return words.filter((word) => {
        const key = word.normalize('NFC').toLowerCase();
        return seen.has(key) ? false : (seen.add(key), true);
      });
    };
    const ascii = fc.string({ unit: fc.constantFrom(...'aZ09 _-.\'"()?!:\u0000\u007fxyzXYZ'), maxLength: 40 });
    fc.assert(
      fc.property(ascii, (text) => {
        // A word followed by * is refused either way: left out here.
        expect(queryWords(text, 'exact')).to.deep.equal(unicode(text));
        expect(queryWords(`é ${text}`, 'exact')).to.deep.equal(unicode(`é ${text}`));
      }),
    );
  });

  it(`searches at most ${MAX_QUERY_WORDS} distinct words, the first ones`, () => {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`);
    expect(queryWords(words.join(' '), 'exact')).to.deep.equal(words.slice(0, MAX_QUERY_WORDS));
  });
});

describe('textQuery', () => {
  it('quotes every word and joins them with OR', () => {
    expect(textQuery('when do we deploy')).to.equal('"when" OR "do" OR "we" OR "deploy"');
    expect(textQuery('NEAR(a b) AND OR NOT')).to.equal('"NEAR" OR "a" OR "b" OR "AND" OR "OR" OR "NOT"');
  });

  it('is null when the text holds no word', () => {
    for (const text of ['', ' ', '"', '""', '*', '(((', '-', ':', '😀', '\u0000', '\u0301'])
      expect(textQuery(text), JSON.stringify(text)).to.equal(null);
  });
});

describe('matchExpression', () => {
  it('restricts a named field to its column', () => {
    expect(matchExpression('fox', 'text', FIELDS, 'exact')).to.equal('{"f.text"} : ("fox")');
  });

  it('searches every column for *', () => {
    expect(matchExpression('red fox', '*', FIELDS, 'exact')).to.equal('"red" OR "fox"');
  });

  it('is null when the text holds no word', () => {
    expect(matchExpression('?!', 'text', FIELDS, 'exact')).to.equal(null);
  });

  it('refuses a field that is not an @text field', () => {
    const err = refusal(() => matchExpression('fox', 'year', FIELDS, 'exact'));
    expect(err.code).to.equal('invalid_statement');
    expect(err.message).to.equal('match year: year is not an @text field');
    expect(err.hint).to.equal('the @text fields: text, tags; match * searches them all');
  });
});
