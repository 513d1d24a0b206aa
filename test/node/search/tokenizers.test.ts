/**
 * The tokenizer an `@text` field gets (node/search/tokenizers.ts), and the tokenizers themselves in a
 * real SQLite with the fenec_fts5 extension (native/fts5/src/stem.c).
 */
import { expect } from 'chai';
import type { CreateCollectionStmt, FieldDef } from '../../../shared/fenecql/ast.js';
import { parseStatement } from '../../../shared/fenecql/parser.js';
import {
  DEFAULT_TOKENIZER,
  FTS5_TOKENIZE,
  isStopWord,
  STOP_WORDS,
  storedTokenizer,
  withTokenizers,
} from '../../../node/search/tokenizers.js';
import { openWritable, type Connection } from '../../../node/storage/sqlite.js';
import { refusal } from '../../helpers/assertions.js';
import { tempDir } from '../../helpers/temp.js';

const fields = (definition: string): FieldDef[] =>
  (parseStatement(`create collection c (${definition})`) as CreateCollectionStmt).fields.map((f) => ({
    ...f,
    pos: undefined,
  }));
const tokenizers = (defs: readonly FieldDef[]): unknown[] =>
  defs.flatMap((d) => d.annotations.filter((a) => a.kind === 'text').map((a) => a.tokenizer));

describe('the tokenizer of @text fields', () => {
  it('writes english into a bare @text of a new collection, and keeps a named one', () => {
    expect(DEFAULT_TOKENIZER).to.equal('english');
    expect(tokenizers(withTokenizers('c', fields('a text @text, b [text] @text, n int'), undefined))).to.deep.equal([
      'english',
      'english',
    ]);
    expect(
      tokenizers(withTokenizers('c', fields('a text @text(exact) @hash, b [text] @text(exact)'), undefined)),
    ).to.deep.equal(['exact', 'exact']);
    const [def] = withTokenizers('c', fields('a text @text(exact) @hash'), undefined);
    expect(def!.annotations).to.deep.equal([{ kind: 'text', tokenizer: 'exact' }, { kind: 'hash' }]);
  });

  it("reads a stored @text without one as porter (files written before), and gives an added bare @text the collection's", () => {
    const stored = fields('a text @text, n int');
    expect(storedTokenizer(stored)).to.equal('porter');
    expect(storedTokenizer(fields('n int'))).to.equal(undefined);
    expect(tokenizers(withTokenizers('c', stored, storedTokenizer(stored)))).to.deep.equal(['porter']);
    expect(tokenizers(withTokenizers('c', fields('b text @text'), 'porter'))).to.deep.equal(['porter']);
    expect(tokenizers(withTokenizers('c', fields('b text @text(porter)'), 'porter'))).to.deep.equal(['porter']);
  });

  it('refuses two tokenizers in one collection, naming both fields', () => {
    const mixed = refusal(() => withTokenizers('c', fields('a text @text(porter), b text @text'), undefined));
    expect(mixed.code).to.equal('invalid_annotation');
    expect(mixed.message).to.equal(
      "a collection's @text fields share one tokenizer: c.b asks for english, c.a for porter",
    );
    const added = refusal(() => withTokenizers('c', fields('b text @text(exact)'), 'english'));
    expect(added.message).to.equal(
      "a collection's @text fields share one tokenizer: c.b asks for exact, the @text fields of c for english",
    );
  });

  it('leaves stop words out for english only, in lower case as queryWords compares them', () => {
    expect(isStopWord('english', 'the')).to.equal(true);
    expect(isStopWord('english', 'deploy')).to.equal(false);
    expect(isStopWord('porter', 'the')).to.equal(false);
    expect(isStopWord('exact', 'the')).to.equal(false);
    for (const word of STOP_WORDS) expect(word, word).to.match(/^[a-z]+$/);
    expect(STOP_WORDS.size).to.be.above(140);
  });

  describe('in SQLite', () => {
    let temp: ReturnType<typeof tempDir>;
    let db: Connection;
    before(() => {
      temp = tempDir('fenec-tokenizers-');
      db = openWritable(temp.file('t.fenec'));
    });
    after(() => {
      db.close();
      temp.remove();
    });

    /** The terms a tokenizer indexes for a text. */
    function terms(tokenizer: string, text: string): string[] {
      db.exec('DROP TABLE IF EXISTS v; DROP TABLE IF EXISTS t');
      db.exec(`CREATE VIRTUAL TABLE t USING fts5(x, tokenize = '${tokenizer}')`);
      db.exec(`CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')`);
      db.prepare('INSERT INTO t (x) VALUES (?)').run(text);
      return db.prepare('SELECT term FROM v ORDER BY offset').pluck().all() as string[];
    }

    it("stems with Snowball's English where FTS5's porter disagrees with itself", () => {
      const text = 'Deploy deploys deployed deploying deployment Café';
      expect(terms(FTS5_TOKENIZE.english, text)).to.deep.equal([
        'deploy',
        'deploy',
        'deploy',
        'deploy',
        'deploy',
        'cafe',
      ]);
      expect(terms(FTS5_TOKENIZE.porter, text)).to.deep.equal([
        'deploi',
        'deploi',
        'deploi',
        'deploi',
        'deploy',
        'cafe',
      ]);
      expect(terms(FTS5_TOKENIZE.exact, text)).to.deep.equal([
        'deploy',
        'deploys',
        'deployed',
        'deploying',
        'deployment',
        'cafe',
      ]);
    });

    it('passes a token longer than 64 bytes on unstemmed, and leaves other scripts as they are', () => {
      const long = `${'a'.repeat(70)}ing`;
      expect(terms(FTS5_TOKENIZE.english, `${long} ёлки 東京`)).to.deep.equal([long, 'ёлки', '東京']);
    });

    it('refuses a language libstemmer does not have, and a missing parent', () => {
      expect(() => terms('fenec_stem klingon unicode61', 'x')).to.throw(/error in tokenizer constructor/);
      expect(() => terms('fenec_stem english', 'x')).to.throw(/error in tokenizer constructor/);
      expect(() => terms('fenec_stem english nosuch', 'x')).to.throw(/error in tokenizer constructor/);
    });

    it('tokenizes for fenec_snippet as the index does', () => {
      const snip = db.prepare(`SELECT fenec_snippet(?, ?, '[', ']', '…', 20, ?)`).pluck();
      expect(snip.get('deployment', FTS5_TOKENIZE.english, 'he deploys')).to.equal('he [deploys]');
      expect(snip.get('deployment', FTS5_TOKENIZE.porter, 'he deploys')).to.equal('he deploys');
    });
  });
});
