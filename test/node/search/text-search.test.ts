import { expect } from 'chai';
import {
  matchExpression,
  rankFunction,
  matchTerms,
  SNIPPET_TOKENS,
  textIndexName,
  textSearchSql,
  textTopSelect,
} from '../../../node/search/text-index.js';
import { FTS5_TOKENIZE, STOP_WORDS } from '../../../node/search/tokenizers.js';
import { FenecError } from '../../../shared/errors.js';
import { bm25Term } from '../../helpers/bm25.js';
import { fts5RankedRead } from '../../helpers/fts5-read.js';
import { tempDir } from '../../helpers/temp.js';
import { seededRandom } from '../../helpers/vectors.js';
import { NOTES, Store, type Where } from '../../helpers/text-store.js';

describe('text search', () => {
  let temp: ReturnType<typeof tempDir>;
  let store: Store;

  beforeEach(() => {
    temp = tempDir('fenec-text-');
    store = new Store(temp.file('t.fenec'), NOTES);
  });

  afterEach(() => {
    store.close();
    temp.remove();
  });

  it('finds "the deploy runs on fridays" for "when do we deploy" (the seed\'s memories)', () => {
    const deploy = store.insert('the deploy runs on fridays', ['ops']);
    store.insert('staging is in eu-west-1', ['ops']);
    store.insert('the user is debugging the login page', ['session']);
    const rows = store.search('when do we deploy', 'text', undefined, 5);
    expect(rows.map((r) => [r.id, r._snippet])).to.deep.equal([[deploy, 'the **deploy** runs on fridays']]);
    expect(rows[0]!._score).to.be.greaterThan(0);
  });

  it('stems English words: deploys, deployed, deploying and deployment are deploy', () => {
    const ids = [
      store.insert('he deploys'),
      store.insert('we deployed'),
      store.insert('deploying now'),
      store.insert('the deployment'),
    ];
    for (const query of ['deploy', 'DEPLOYMENT', 'deploys']) expect(store.ids(query), query).to.have.members(ids);
    const [row] = store.search('deployment', 'text', { sql: '"id" = ?', args: [ids[0]] });
    expect(row!._snippet).to.equal('he **deploys**');
  });

  it("keeps FTS5's porter for @text(porter), where deployment and deploys differ, and stems nothing for @text(exact)", () => {
    const porter = new Store(temp.file('porter.fenec'), 'old (text text @text(porter))');
    const exact = new Store(temp.file('exact.fenec'), 'words (text text @text(exact))');
    try {
      for (const s of [porter, exact]) {
        s.db
          .prepare(`INSERT INTO "c_${s.name}" ("text") VALUES (?), (?), (?)`)
          .run('he deploys', 'the deployment', 'the');
      }
      expect(porter.ids('deploying')).to.deep.equal([1]);
      expect(porter.ids('deployments')).to.deep.equal([2]);
      expect(porter.ids('the')).to.have.members([2, 3], 'porter searches every word');
      expect(exact.ids('deploy')).to.deep.equal([]);
      expect(exact.ids('Deploys')).to.deep.equal([1]);
      expect(exact.ids('the')).to.have.members([2, 3], 'exact searches every word');
    } finally {
      porter.close();
      exact.close();
    }
  });

  it('leaves English stop words out of the query: a row that shares only "the" is no answer', () => {
    const deploy = store.insert('the deploy runs on fridays');
    store.insert('the cat');
    store.insert('what is it');
    expect(store.ids('what day is the deploy?')).to.deep.equal([deploy]);
    expect(store.search('what day is the deploy?')[0]!._snippet).to.equal('the **deploy** runs on fridays');
    for (const query of ['the', 'What is it?', "what's this", 'to be or not to be'])
      expect(store.ids(query), query).to.deep.equal([]);
  });

  it('refuses a word followed by * (a prefix), and searches a word in *emphasis* as the word', () => {
    const data = store.insert('data lake');
    for (const query of ['data*', 'big data* lake', 'dat*'])
      expect(() => store.search(query), query).to.throw('match searches whole words');
    for (const query of ['*data*', '**data**', 'data *', '* data'])
      expect(store.ids(query), query).to.deep.equal([data]);
  });

  it('folds case and accents: café is cafe, CAFÉ and cafe with a combining accent', () => {
    const id = store.insert('Café au lait, Tiếng Việt');
    for (const query of ['cafe', 'CAFÉ', 'cafe\u0301', 'café', 'tieng'])
      expect(store.ids(query), query).to.deep.equal([id]);
  });

  it('folds the case of every script, and the accents of Latin letters only', () => {
    const greek = store.insert('Ελληνικά κείμενα');
    const russian = store.insert('ёлка');
    expect(store.ids('ΕΛΛΗΝΙΚΆ')).to.deep.equal([greek]);
    expect(store.ids('ελληνικα')).to.deep.equal([]);
    expect(store.ids('ЁЛКА')).to.deep.equal([russian]);
    expect(store.ids('елка')).to.deep.equal([]);
  });

  it('finds whole words of every script, CJK runs as one word', () => {
    const arabic = store.insert('مرحبا بالعالم');
    const hindi = store.insert('नमस्ते दुनिया');
    const thai = store.insert('สวัสดีครับ ทุกคน');
    const tokyo = store.insert('東京 タワー');
    const joined = store.insert('東京タワー');
    expect(store.ids('بالعالم')).to.deep.equal([arabic]);
    expect(store.ids('दुनिया')).to.deep.equal([hindi]);
    expect(store.ids('สวัสดีครับ')).to.deep.equal([thai]);
    expect(store.ids('東京')).to.deep.equal([tokyo]);
    expect(store.ids('東京タワー')).to.deep.equal([joined]);
  });

  it('marks matched words in the snippet', () => {
    store.insert('the cat watches the fox');
    const long = Array.from({ length: 60 }, (_, i) => `word${i}`);
    long[40] = 'needle';
    store.insert(long.join(' '));
    expect(store.search('fox').map((r) => r._snippet)).to.deep.equal(['the cat watches the **fox**']);
    const [snippet] = store.search('needle').map((r) => r._snippet);
    expect(snippet).to.match(/^….* \*\*needle\*\* .*…$/);
    expect(snippet!.split(' ')).to.have.length(20);
  });

  it("makes the snippet FTS5's snippet() makes, byte for byte, for texts shorter than, as long as and longer than a snippet", () => {
    // The product's read (fenec_snippet after the limit) against FTS5's own (snippet() on the index's
    // cursor), over texts of 1 to 3 × SNIPPET_TOKENS words, words repeated and side by side, phrases of
    // two words, punctuation between, in both @text fields (the [text] one joined by ", ") and `*`.
    const random = seededRandom(12);
    const words = ['fox', 'den', 'runs', 'the', 'café', 'Zürich', 'deploys', 'deploying', 'x1'];
    const pick = (): string => words[Math.floor(random() * words.length)]!;
    const separators = [' ', ' ', ' ', ', ', '. ', ' — ', '\n'];
    const text = (n: number): string =>
      Array.from({ length: n }, pick).reduce(
        (out, word) => `${out}${separators[Math.floor(random() * separators.length)]}${word}`,
      );
    for (let i = 0; i < 300; i++) {
      const n = 1 + Math.floor(random() * 3 * SNIPPET_TOKENS);
      store.insert(
        text(n),
        random() < 0.5
          ? null
          : Array.from({ length: 1 + Math.floor(random() * 8) }, () => text(1 + Math.floor(random() * 4))),
      );
    }
    let compared = 0;
    for (const query of ['fox', 'den fox', 'runs the', 'cafe zurich deploy', '"the fox"', 'x1', 'zurich']) {
      for (const field of ['text', 'tags', '*']) {
        const search = textSearchSql(store.name, store.fields, field);
        const theirs = store.db
          .prepare(fts5RankedRead(store.name, search, ['c."id"', 'c."text"']))
          .all(matchExpression(query, field, store.fields, store.tokenizer), rankFunction(search.column), 1_000, 0);
        const ours = store.search(query, field, undefined, 1_000);
        expect(ours, `${field}: ${query}`).to.deep.equal(theirs);
        compared += ours.length;
      }
    }
    expect(compared).to.be.greaterThan(1000);
  });

  it("fenec_snippet makes snippet()'s bytes from the text and the words, with no cursor of the index", function () {
    // 108 reads of 400 rows, each row snipped twice: FTS5's snippet() costs the square of a row's places (3–11 s).
    this.timeout(60_000);
    // What a `match` of a text field snips its top rows with (text-index.ts, textTopSelect): the
    // phrases' places found by tokenizing the text, not read from the index. Texts of 1 to 200 tokens
    // (shorter and longer than every snippet length), sentences ended by '.' and ':' with and without
    // a space after, words repeated and side by side, stems, accents, a word the tokenizer splits
    // into a phrase of several tokens (Devanagari), words that no row holds; marks of every length.
    const random = seededRandom(44);
    const words = [
      'fox',
      'den',
      'runs',
      'running',
      'the',
      'café',
      'Zürich',
      'deploys',
      'x1',
      'नमस्ते',
      '東京',
      'on-call',
    ];
    const pick = (): string => words[Math.floor(random() * words.length)]!;
    const separators = [' ', ' ', ' ', ', ', '. ', ': ', '.', ' — ', '\n', '  '];
    for (let i = 0; i < 400; i++) {
      const n = 1 + Math.floor(random() * 200 * random());
      store.insert(
        Array.from({ length: n }, pick).reduce(
          (out, word) => `${out}${separators[Math.floor(random() * separators.length)]}${word}`,
        ),
      );
    }
    const fts = textIndexName(store.name);
    let compared = 0;
    const lengths = new Set<number>();
    for (const query of [
      'fox',
      'den fox',
      'runs the',
      'run',
      'cafe zurich deploy',
      'नमस्ते x1',
      'the fox den runs café',
      'on call 東京',
      'fox nowhere',
    ]) {
      const { expression, snippetWords } = matchTerms(query, 'text', store.fields, store.tokenizer)!;
      for (const [open, close, ellipsis] of [
        ['**', '**', '…'],
        ['<b>', '</b>', '...'],
        ['', '', ''],
      ]) {
        for (const tokens of [1, 5, SNIPPET_TOKENS, 64]) {
          const sql = `SELECT snippet(${fts}, 0, ?, ?, ?, ${tokens}), fenec_snippet(?, ?, ?, ?, ?, ${tokens}, c."text"), c."text" FROM ${fts} JOIN c_notes AS c ON c."id" = ${fts}.rowid WHERE ${fts} MATCH ?`;
          const rows = store.db
            .prepare(sql)
            .raw(true)
            .all(
              open,
              close,
              ellipsis,
              snippetWords,
              FTS5_TOKENIZE[store.tokenizer],
              open,
              close,
              ellipsis,
              expression,
            ) as [string, string, string][];
          for (const [theirs, ours, text] of rows) {
            expect(ours, `${query} / ${tokens} / ${open}: ${JSON.stringify(text)}`).to.equal(theirs);
            compared++;
            lengths.add(text.split(/[^\p{L}\p{N}]+/u).length > SNIPPET_TOKENS ? 1 : 0);
          }
        }
      }
    }
    expect(compared).to.be.greaterThan(10_000);
    expect([...lengths]).to.have.members([0, 1], 'texts that fit a snippet and texts that do not');
    const one = (sql: string, ...args: unknown[]): unknown =>
      (
        store.db
          .prepare(sql)
          .raw(true)
          .get(...args) as unknown[]
      )[0];
    expect(one(`SELECT fenec_snippet('fox', ?, '*', '*', '…', 20, NULL)`, FTS5_TOKENIZE[store.tokenizer])).to.equal(
      null,
    );
    expect(one(`SELECT fenec_snippet('fox', ?, '*', '*', '…', 20, '')`, FTS5_TOKENIZE[store.tokenizer])).to.equal('');
    expect(
      one(`SELECT fenec_snippet('fox', ?, '[', ']', '…', 20, 'The Fox ran.')`, FTS5_TOKENIZE[store.tokenizer]),
    ).to.equal('The [Fox] ran.');
    expect(
      one(`SELECT fenec_snippet('fox', ?, '[', ']', '…', 20, 'no', NULL, 'a fox')`, FTS5_TOKENIZE[store.tokenizer]),
    ).to.equal('a [fox]');
    expect(() => one(`SELECT fenec_snippet('fox', 'nosuch', '*', '*', '…', 20, 'fox')`)).to.throw(
      /fenec_snippet: no such tokenizer/,
    );
    expect(() => one(`SELECT fenec_snippet('fox', ?, '*', '*', '…', 20)`, FTS5_TOKENIZE[store.tokenizer])).to.throw(
      /fenec_snippet: give the words/,
    );
  });

  it('searches a [text] field by its elements, its snippet free of JSON', () => {
    const id = store.insert('body', ['ops', 'on call', 'say "hi"', 'line\nbreak']);
    expect(store.ids('call', 'tags')).to.deep.equal([id]);
    expect(store.ids('break', 'tags')).to.deep.equal([id]);
    expect(store.search('ops', 'tags').map((r) => r._snippet)).to.deep.equal([
      '**ops**, on call, say "hi", line\nbreak',
    ]);
    store.expectExact();
  });

  it('restricts match FIELD to the field; match * reads every @text field, snippet from the best', () => {
    const inText = store.insert('the fox runs', ['dog']);
    const inTags = store.insert('the dog runs', ['fox', 'den']);
    expect(store.ids('fox', 'text')).to.deep.equal([inText]);
    expect(store.ids('fox', 'tags')).to.deep.equal([inTags]);
    expect(store.ids('fox', '*')).to.have.members([inText, inTags]);
    const byId = new Map(store.search('fox').map((r) => [r.id, r._snippet]));
    expect(byId.get(inText)).to.equal('the **fox** runs');
    expect(byId.get(inTags)).to.equal('**fox**, den');
  });

  it('applies the where before the limit, in BM25 order, scanning the index in rank order', () => {
    const ids: number[] = [];
    for (let i = 0; i < 40; i++) ids.push(store.insert(`fox ${'filler '.repeat(i)}`, null, i));
    const everyEighth: Where = { sql: '"year" % 8 = ?', args: [0] };
    const unfiltered = store.ids('fox');
    expect(unfiltered).to.deep.equal(ids, 'shorter texts rank higher');
    expect(store.ids('fox', '*', everyEighth, 5)).to.deep.equal(unfiltered.filter((_, i) => i % 8 === 0));
    expect(store.ids('fox', '*', everyEighth, 3)).to.deep.equal([ids[0], ids[8], ids[16]]);

    store.db.exec('CREATE INDEX "i.notes.year" ON "c_notes" ("year")');
    const read = textTopSelect('notes', store.fields, '*', ['c."id"'], ' LIMIT 5', store.tokenizer, {
      where: '"year" = ?',
    });
    const plan = store.db.prepare(`EXPLAIN QUERY PLAN ${read}`).all('fox', 8, '"fox"') as { detail: string }[];
    // The index leads (never the year index: a scan of every row of the year), each hit looks its row
    // up by id, and SQLite's sorter keeps the best; the kept rows are read again by id.
    const details = plan.map((p) => p.detail);
    expect(details).to.include.members([
      'CO-ROUTINE top',
      'SEARCH c_notes USING INTEGER PRIMARY KEY (rowid=?)',
      'SEARCH c USING INTEGER PRIMARY KEY (rowid=?)',
    ]);
    expect(details.find((d) => d.startsWith('SCAN'))).to.match(/^SCAN t\.notes\.fts VIRTUAL TABLE/);
    expect(store.ids('fox', '*', { sql: '"year" = ?', args: [8] }, 5)).to.deep.equal([ids[8]]);
  });

  it('lets the where name a field called rank and the @text fields themselves', () => {
    const id = store.insert('the fox', ['x']);
    store.db.prepare('UPDATE "c_notes" SET "rank" = ? WHERE "id" = ?').run('first', id);
    store.insert('another fox');
    const where: Where = { sql: '"rank" = ? AND "text" LIKE ? AND "tags" IS NOT NULL', args: ['first', 'the%'] };
    expect(store.ids('fox', '*', where)).to.deep.equal([id]);
  });

  it('gives rows that tie on score in id order', () => {
    const ids = [store.insert('same words'), store.insert('same words'), store.insert('same words')];
    expect(store.ids('words')).to.deep.equal(ids);
  });

  it('indexes fields named rank and rowid, which FTS5 reserves as column names', () => {
    const odd = new Store(temp.file('odd.fenec'), 'odd (rank text @text, rowid text @text)');
    try {
      odd.db.prepare('INSERT INTO "c_odd" ("rank", "rowid") VALUES (?, ?)').run('first place', 'row words');
      const search = textSearchSql('odd', odd.fields, 'rowid');
      const read = textTopSelect('odd', odd.fields, 'rowid', ['c."id"'], ' LIMIT 5', odd.tokenizer);
      expect(
        odd.db.prepare(read).all('words', matchExpression('words', 'rowid', odd.fields, odd.tokenizer)),
      ).to.have.length(1);
      expect(
        odd.db
          .prepare(fts5RankedRead('odd', search, ['c."id"']))
          .all(matchExpression('words', 'rowid', odd.fields, odd.tokenizer), rankFunction(search.column), 5, 0),
      ).to.have.length(1);
      odd.expectExact();
    } finally {
      odd.close();
    }
  });

  describe('BM25', () => {
    const CORPUS = [
      'the cat sat on the mat',
      'the dog and the fox',
      'a red fox and a red hat',
      'the big fox ran at the big red sun',
      'cat and dog and fox and hat and sun and mat',
      'the sun',
    ];
    const tokens = (text: string): string[] => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

    /**
     * BM25 as Lucene (8 and later) and Elasticsearch compute it, by hand: k1 = 1.2, b = 0.75,
     * IDF ln(1 + (N − n + 0.5) / (n + 0.5)), each word's part IDF · tf / (tf + k1 · (1 − b + b · len / avglen)).
     * `docs` are the rows' texts in the field searched; len and avglen count that text alone.
     */
    function bm25(docs: readonly string[], query: readonly string[]): Map<number, number> {
      const words = docs.map(tokens);
      const avgdl = words.reduce((sum, w) => sum + w.length, 0) / docs.length;
      const scores = new Map<number, number>();
      for (const term of query) {
        const n = words.filter((w) => w.includes(term)).length;
        words.forEach((w, i) => {
          const f = w.filter((t) => t === term).length;
          if (f > 0) scores.set(i, (scores.get(i) ?? 0) + bm25Term(docs.length, n, f, w.length, avgdl));
        });
      }
      return scores;
    }

    function expectRanking(query: string, expected: Map<number, number>, ids: readonly number[], field = '*'): void {
      const sorted = [...expected.entries()].sort((x, y) => y[1] - x[1]);
      for (let i = 1; i < sorted.length; i++)
        expect(sorted[i - 1]![1] - sorted[i]![1], `${query}: no ties`).to.be.greaterThan(1e-9);
      const rows = store.search(query, field);
      expect(
        rows.map((r) => r.id),
        query,
      ).to.deep.equal(sorted.map(([doc]) => ids[doc]));
      rows.forEach((row, i) => expect(row._score, query).to.be.closeTo(sorted[i]![1], 1e-9));
    }

    it("ranks and scores as BM25 with Lucene's IDF, computed by hand from the corpus", () => {
      const ids = CORPUS.map((text) => store.insert(text));
      // The computation tokenizes by hand: it holds only while stemming leaves this corpus's words alone.
      store.db.exec(`CREATE VIRTUAL TABLE vocab USING fts5vocab(${textIndexName('notes')}, 'row')`);
      const terms = store.db.prepare('SELECT term FROM vocab ORDER BY term').pluck().all();
      expect(terms).to.deep.equal([...new Set(CORPUS.flatMap(tokens))].sort());
      // 'fox' is in four rows of six: FTS5's own bm25() scores it about 1e-6.
      for (const query of ['red hat sun mat', 'fox', 'big red cat', 'dog sun'])
        expectRanking(query, bm25(CORPUS, tokens(query)), ids);
      // Stop words are not searched, and still count in a row's length: 'and fox' scores as 'fox'.
      expectRanking('and fox', bm25(CORPUS, ['fox']), ids);
      expectRanking('the and', new Map(), ids);
    });

    it('scores a word most rows hold on the scale of any other, not near zero', () => {
      // The search example of docs/agents-and-mcp.md: fox in two rows of three.
      store.insert('fox the quick brown fox');
      store.insert('dog a lazy dog sleeps');
      const cat = store.insert('cat the cat watches the fox');
      const [row] = store.search('fox', 'text', { sql: '"id" = ?', args: [cat] });
      expect(row!._score).to.be.closeTo(bm25Term(3, 2, 1, 6, 16 / 3), 1e-9);
      expect(row!._score).to.be.greaterThan(0.1);
    });

    it('counts tf, len and avglen in the field a match names, and in every @text field for match *', () => {
      const texts = ['fox and hat', 'red fox', 'the sun'];
      const tags = [['fox', 'red'], ['sun'], ['fox', 'fox', 'big', 'red', 'hat']];
      const ids = texts.map((text, i) => store.insert(text, tags[i]!));
      const tagTexts = tags.map((t) => t.join(' '));
      for (const query of ['fox', 'red hat']) {
        expectRanking(query, bm25(texts, tokens(query)), ids, 'text');
        expectRanking(query, bm25(tagTexts, tokens(query)), ids, 'tags');
        expectRanking(
          query,
          bm25(
            texts.map((t, i) => `${t} ${tagTexts[i]}`),
            tokens(query),
          ),
          ids,
          '*',
        );
      }
    });
  });

  describe('hostile queries', () => {
    /**
     * Runs a search that must answer, or be refused as a prefix (a word then `*`, which the query's
     * text shows): never any other error. Whether it answered.
     */
    function expectSearched(search: () => unknown, what: string): boolean {
      try {
        search();
        return true;
      } catch (err) {
        expect(err, what).to.be.instanceOf(FenecError);
        expect((err as FenecError).code, what).to.equal('invalid_value');
        expect((err as FenecError).message, what).to.match(/^match searches whole words; ".+\*" asks for/);
        expect(what, 'a refused query holds a word and a *').to.match(/[\p{L}\p{N}\p{M}\p{Co}]\*/u);
        return false;
      }
    }

    const HOSTILE = [
      "what's C++ (v2)?",
      '"',
      '""',
      '"unterminated',
      'a"b"c',
      '\\"escaped\\"',
      '*',
      'a* b*',
      '^x',
      'NEAR(a b)',
      'near/3 NEAR',
      'a -b',
      '-',
      '+a +b',
      'col:x',
      ':',
      'rank:fox rowid:1 f.text:x',
      '{x}',
      '{a b} : c',
      '(((',
      ')))',
      '('.repeat(1000),
      'a AND OR NOT',
      'AND',
      'OR',
      'NOT',
      '😀🔥👍🏽',
      '👨‍👩‍👧 family',
      '東京タワーの夜景',
      'مرحبا بالعالم',
      'שָׁלוֹם',
      'नमस्ते दुनिया',
      'สวัสดีครับ',
      'cafe\u0301 e\u0301\u0302\u0303',
      '\u0301\u0302',
      'ǅ ß ﬁ Ⅻ ½ ²',
      'ｄｅｐｌｏｙ',
      '\uFEFFdeploy',
      '\u202Eevil',
      '\uD800x lone surrogate',
      '\uE000 private',
      'a\u0001b\u0007c\u001f',
      '\u0000',
      'a\u0000b',
      '\t\n\r',
      "'; DROP TABLE c_notes; --",
      '" OR 1=1 --',
      "') OR ('1'='1",
      '%_',
      '3.14 1e10 -5 0x1F',
      'x'.repeat(10_000),
      'deploy '.repeat(1_430),
      Array.from({ length: 3_000 }, (_, i) => `w${i}`).join(' '),
      '',
    ];

    it(`never raise, over ${HOSTILE.length} strings, for match *, match FIELD, with and without where`, () => {
      expect(HOSTILE.length).to.be.at.least(30);
      store.insert('what is new in C++ v2', ['ops']);
      store.insert('the deploy runs on fridays', ['ops']);
      store.insert('東京タワーの夜景 مرحبا بالعالم नमस्ते', ['x']);
      const where: Where = { sql: '"year" IS NULL', args: [] as unknown[] };
      for (const query of HOSTILE) {
        for (const field of ['*', 'text', 'tags']) {
          expectSearched(() => store.search(query, field), `${JSON.stringify(query.slice(0, 40))} on ${field}`);
          expectSearched(
            () => store.search(query, field, where),
            `${JSON.stringify(query.slice(0, 40))} on ${field} with where`,
          );
        }
      }
      expect(store.ids("what's C++ (v2)?")).to.have.length(1);
      expect(store.ids('東京タワーの夜景')).to.have.length(1);
      expect(store.ids('deploy '.repeat(1_430))).to.have.length(1);
    });

    it('never raise on random strings of FTS5 syntax, quotes, controls and scripts', () => {
      store.insert('near the fox and the cat');
      let seed = 42;
      const random = () => {
        // mulberry32: the same strings on every run.
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
      const pieces = [
        '"',
        "'",
        '*',
        '^',
        ':',
        '(',
        ')',
        '{',
        '}',
        '-',
        '+',
        ' ',
        ',',
        '.',
        '\\',
        '\u0000',
        '\u0301',
        'AND',
        'OR',
        'NOT',
        'NEAR',
        'fox',
        'the',
        'é',
        '東',
        '😀',
        '\n',
        'f.text',
        'rank',
      ];
      for (let i = 0; i < 1_000; i++) {
        const length = Math.floor(random() * 12);
        const query = Array.from({ length }, () => pieces[Math.floor(random() * pieces.length)]).join('');
        if (!expectSearched(() => store.search(query), JSON.stringify(query))) continue;
        const expression = matchExpression(query, '*', store.fields, store.tokenizer);
        if (expression !== null) expect(expression).to.match(/^"[^"\u0000]+"( OR "[^"\u0000]+")*$/);
        expectSearched(() => store.search(query, 'text'), JSON.stringify(query));
      }
    });

    it('find the text each of their words came from', () => {
      const texts = HOSTILE.filter((text) => text.length < 200);
      const ids = texts.map((text) => store.insert(text));
      texts.forEach((text, i) => {
        for (const word of text.match(/[\p{L}\p{N}\p{M}\p{Co}]+/gu) ?? []) {
          if (!/[\p{L}\p{N}\p{Co}]/u.test(word) || STOP_WORDS.has(word.toLowerCase())) continue;
          expect(
            store.ids(word, 'text', undefined, 1000),
            `${JSON.stringify(word)} of ${JSON.stringify(text)}`,
          ).to.include(ids[i]);
        }
      });
    });
  });
});
