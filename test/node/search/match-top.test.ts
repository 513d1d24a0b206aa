/**
 * A `match` of a text field ranks its top rows by SQLite's sorter and snips them after the limit
 * (node/search/text-index.ts, textTopSelect). It must answer what FTS5's own ranked read answers — the
 * shape `match *`, [text] fields and `order` still take (textSearchSql) — row for row: the same rows,
 * in the same order (ties in id order), the same scores and snippets, with a where, a limit and an
 * offset, under a token's policy too. The reference runs FTS5's ranked read on a connection of its own
 * to the same file.
 */
import { expect } from 'chai';
import { FenecDatabase } from '../../../node/database.js';
import { matchExpression, rankFunction, textSearchSql, type TextField } from '../../../node/search/text-index.js';
import { DEFAULT_TOKENIZER } from '../../../node/search/tokenizers.js';
import { openSnapshot, type Connection } from '../../../node/storage/sqlite.js';
import { parsePolicy } from '../../../shared/auth/policy.js';
import type { Answer } from '../../../shared/answer.js';
import { fts5RankedRead } from '../../helpers/fts5-read.js';
import { tempDir } from '../../helpers/temp.js';
import { seededRandom } from '../../helpers/vectors.js';

const FIELDS: readonly TextField[] = [
  { name: 'body', type: { kind: 'scalar', scalar: 'text' } },
  { name: 'tags', type: { kind: 'array', element: 'text' } },
];

interface Answered {
  readonly id: number;
  readonly snippet: string;
  readonly _score: number;
}

describe('match of a text field, ranked by SQLite and snipped after the limit', () => {
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let reference: Connection;

  before(() => {
    temp = tempDir('fenec-match-top-');
    db = FenecDatabase.open({ file: temp.file('m.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    db.execute('create collection docs (body text @text, tags [text] @text, grp int, owner text)');
    const random = seededRandom(7);
    const vocabulary = ['fox', 'den', 'runs', 'the', 'deploy', 'café', 'night', 'owl', 'river', 'stone'];
    const pick = (): string => vocabulary[Math.floor(random() * vocabulary.length)]!;
    const texts = Array.from({ length: 60 }, () =>
      Array.from({ length: 1 + Math.floor(random() * 45) }, pick).join(random() < 0.3 ? '. ' : ' '),
    );
    // Each text many times over: ties of score, which must come in id order.
    const rows = Array.from({ length: 1_500 }, (_, i) => ({
      body: texts[Math.floor(random() * texts.length)]!,
      tags: [pick()],
      grp: i % 7,
      owner: i % 3 === 0 ? 'ann' : 'bob',
    }));
    db.execute('insert into docs $1', [rows]);
    reference = openSnapshot(temp.file('m.fenec'));
  });

  after(() => {
    reference.close();
    db.close();
    temp.remove();
  });

  /** FTS5's ranked read of `match body`, its own sorter and snippets (the shape before). */
  function fts5(
    words: string,
    limit: number,
    offset: number,
    where?: { sql: string; args: unknown[] },
    field = 'body',
  ): Answered[] {
    const search = textSearchSql('docs', FIELDS, field, where?.sql);
    const sql = fts5RankedRead('docs', search, ['c."id" AS id']);
    const rows = reference
      .prepare(sql)
      .all(
        ...(where?.args ?? []),
        matchExpression(words, field, FIELDS, DEFAULT_TOKENIZER),
        rankFunction(search.column),
        limit,
        offset,
      ) as { id: number; _score: number; _snippet: string }[];
    return rows.map((r) => ({ id: r.id, snippet: r._snippet, _score: r._score }));
  }

  /** The same, sorted by `order` (SQL over the rows as c) rather than by score, FTS5's snippet() on its cursor. */
  function fts5Ordered(words: string, order: string, limit: number, offset: number): Answered[] {
    const search = textSearchSql('docs', FIELDS, 'body');
    const rows = reference
      .prepare(fts5RankedRead('docs', search, ['c."id" AS id'], order))
      .all(matchExpression(words, 'body', FIELDS, DEFAULT_TOKENIZER), rankFunction(0), limit, offset) as {
      id: number;
      _score: number;
      _snippet: string;
    }[];
    return rows.map((r) => ({ id: r.id, snippet: r._snippet, _score: r._score }));
  }

  /** A read's rows. */
  const rowsOf = (answer: Answer): Record<string, unknown>[] => answer.rows as Record<string, unknown>[];
  const answered = (answer: Answer): Answered[] =>
    rowsOf(answer).map((r) => ({ id: r.id as number, snippet: r.snippet as string, _score: r._score as number }));

  it('answers the rows, order, scores and snippets of FTS5 ranking them itself', () => {
    let compared = 0;
    for (const words of ['fox', 'den fox', 'runs', 'river owl stone', 'deploy cafe', 'runs night the fox']) {
      for (const [limit, offset] of [
        [10, 0],
        [3, 0],
        [25, 7],
        [1_000, 0],
      ] as const) {
        const ours = answered(db.execute(`get docs select id match body $1 limit ${limit} offset ${offset}`, [words]));
        expect(ours, `${words} ${limit} ${offset}`).to.deep.equal(fts5(words, limit, offset));
        const filtered = answered(
          db.execute(`get docs select id match body $1 where grp = $2 limit $3 offset $4`, [words, 3, limit, offset]),
        );
        expect(filtered, `${words} where`).to.deep.equal(fts5(words, limit, offset, { sql: '"grp" = ?', args: [3] }));
        compared += ours.length + filtered.length;
      }
    }
    expect(compared).to.be.greaterThan(3_000);
  });

  it('answers an order of its own (ties in id, in the direction of its last field) as FTS5 sorting every match and snipping on its cursor', () => {
    for (const words of ['fox', 'runs', 'river owl stone']) {
      for (const [limit, offset] of [
        [10, 0],
        [40, 13],
      ] as const) {
        const ours = answered(
          db.execute(`get docs select id match body $1 order grp desc limit ${limit} offset ${offset}`, [words]),
        );
        expect(ours.length).to.be.greaterThan(0);
        expect(ours, `${words} order grp desc`).to.deep.equal(
          fts5Ordered(words, 'c."grp" DESC, c."id" DESC', limit, offset),
        );
        const byOwner = answered(
          db.execute(`get docs select id match body $1 order owner, id desc limit ${limit}`, [words]),
        );
        expect(byOwner, `${words} order owner, id desc`).to.deep.equal(
          fts5Ordered(words, 'c."owner" ASC, c."id" DESC', limit, 0),
        );
      }
    }
  });

  it('answers match of a [text] field, and match * over both fields, as FTS5 does (snippet() picking the field)', () => {
    let compared = 0;
    for (const words of ['fox', 'den fox', 'the river', 'owl stone night']) {
      for (const [field, limit] of [
        ['tags', 20],
        ['*', 30],
        ['*', 500],
      ] as const) {
        const ours = answered(db.execute(`get docs select id match ${field} $1 limit ${limit}`, [words]));
        expect(ours, `${field}: ${words}`).to.deep.equal(fts5(words, limit, 0, undefined, field));
        compared += ours.length;
      }
    }
    expect(compared).to.be.greaterThan(1_000);
  });

  it('ranks ties in id order', () => {
    const rows = rowsOf(db.execute('get docs select id match body $1 limit 1000', ['fox']));
    for (let i = 1; i < rows.length; i++) {
      const [a, b] = [rows[i - 1]!, rows[i]!];
      expect(
        (a._score as number) > (b._score as number) || (a._score === b._score && (a.id as number) < (b.id as number)),
        `rows ${i - 1} and ${i}`,
      ).to.equal(true);
    }
  });

  it("under a token's policy, scores over the token's rows as before", () => {
    const policy = parsePolicy('docs read where owner = $jwt.sub', 'policy.txt');
    const jwt = { sub: 'ann' };
    for (const words of ['fox', 'deploy cafe the']) {
      const ours = answered(db.execute('get docs select id match body $1 limit 20', [words], { policy, jwt }));
      expect(ours.length).to.be.greaterThan(0);
      for (const row of ours) expect(row.id % 3, "only ann's rows").to.equal(1);
      // The same statement through `order` (FTS5's ranked read, which the policy's statistics feed
      // alike) gives the same scores for the same rows.
      const viaFts5 = rowsOf(
        db.execute('get docs select id match body $1 order id limit 1000', [words], { policy, jwt }),
      );
      const score = new Map(viaFts5.map((r) => [r.id as number, r._score as number]));
      for (const row of ours) expect(row._score).to.equal(score.get(row.id));
    }
  });

  describe('in a fuse', () => {
    before(() => {
      db.execute('create collection mixed (body text @text, tags [text] @text, v vector<4>, grp int)');
      const random = seededRandom(9);
      const vocabulary = ['fox', 'den', 'owl', 'the', 'river', 'stone'];
      const rows = Array.from({ length: 400 }, (_, i) => ({
        body: Array.from(
          { length: 1 + Math.floor(random() * 40) },
          () => vocabulary[Math.floor(random() * vocabulary.length)]!,
        ).join(' '),
        tags: [vocabulary[i % vocabulary.length]!],
        v: Array.from({ length: 4 }, () => random() - 0.5),
        grp: i % 4,
      }));
      db.execute('insert into mixed $1', [rows]);
      reference.close();
      reference = openSnapshot(temp.file('m.fenec'));
    });

    it("gives the rows the words match snippet()'s passage, within the candidates or past them, the others null", () => {
      let found = 0;
      let alone = 0;
      let beyond = 0;
      for (const field of ['body', 'tags', '*']) {
        const search = textSearchSql('mixed', FIELDS, field);
        const fts = search.from.split(' ')[0]!;
        const candidates = (words: string, depth: number): Set<number> =>
          new Set(
            (
              reference
                .prepare(fts5RankedRead('mixed', search, ['c."id" AS id']))
                .all(
                  matchExpression(words, field, FIELDS, DEFAULT_TOKENIZER),
                  rankFunction(search.column),
                  depth,
                  0,
                ) as { id: number }[]
            ).map((r) => r.id),
          );
        // The id bound as an integer: FTS5 takes a rowid constraint bound as a real (a JS number) for none at all.
        const snippet = reference
          .prepare(
            `SELECT snippet(${fts}, ${search.column}, '**', '**', '…', 20) FROM ${fts} WHERE ${fts} MATCH ? AND rowid = ?`,
          )
          .pluck();
        const snippetOf = (words: string, id: number): unknown =>
          snippet.get(matchExpression(words, field, FIELDS, DEFAULT_TOKENIZER), BigInt(id));
        for (const words of ['fox', 'owl den', 'the river stone']) {
          for (const vector of [
            [1, 0, 0, 0],
            [0, -1, 0.5, 0],
          ]) {
            const rows = rowsOf(
              db.execute(`get mixed select id match ${field} $1 near v $2 fuse limit 30`, [words, vector]),
            );
            const text = candidates(words, 90); // FUSE_DEPTH × 30 candidates from each ranking
            for (const row of rows) {
              const id = row.id as number;
              // A row the words match has its passage, among the text's candidates or brought by the vector alone.
              const passage = snippetOf(words, id) ?? null;
              if (text.has(id)) {
                expect(row.snippet, `${field} ${words}: row ${id}`).to.equal(passage);
                found++;
              } else {
                expect(row.snippet, `${field} ${words}: row ${id}, brought by its vector`).to.equal(passage);
                if (passage === null) alone++;
                else beyond++;
              }
            }
          }
        }
      }
      expect(found).to.be.greaterThan(150);
      expect(alone).to.be.greaterThan(15);
      expect(beyond, 'rows past the candidates that the words match').to.be.greaterThan(0);
    });
  });

  describe('over one @text field, match *, and a text a thousand times the usual', () => {
    before(() => {
      db.execute('create collection one (body text @text, grp int)');
      const random = seededRandom(12);
      const vocabulary = ['fox', 'den', 'owl', 'the', 'river', 'stone', 'night'];
      db.execute('insert into one $1', [
        Array.from({ length: 300 }, (_, i) => ({
          body: Array.from(
            { length: 1 + Math.floor(random() * 40) },
            () => vocabulary[Math.floor(random() * vocabulary.length)]!,
          ).join(' '),
          grp: i % 5,
        })),
      ]);
      reference.close();
      reference = openSnapshot(temp.file('m.fenec'));
    });

    it('ranks and snips match * as FTS5 does over the one field', () => {
      const fields: readonly TextField[] = [{ name: 'body', type: { kind: 'scalar', scalar: 'text' } }];
      const search = textSearchSql('one', fields, '*');
      for (const words of ['fox', 'the den', 'river stone night']) {
        const theirs = reference
          .prepare(fts5RankedRead('one', search, ['c."id" AS id']))
          .all(matchExpression(words, '*', fields, DEFAULT_TOKENIZER), rankFunction(-1), 50, 0) as {
          id: number;
          _score: number;
          _snippet: string;
        }[];
        const ours = answered(db.execute('get one select id match * $1 limit 50', [words]));
        expect(ours).to.deep.equal(theirs.map((r) => ({ id: r.id, snippet: r._snippet, _score: r._score })));
      }
    });

    it('snips a row of 150 000 words, a third of them the word searched, or half of them ending a sentence, well within the time limit', () => {
      // FTS5's snippet() scores every place of the words for every place (14 s for this row, measured);
      // fenec_snippet reads the places inside each passage only (about 10 ms).
      const random = seededRandom(5);
      const words = Array.from({ length: 150_000 }, (_, i) => (random() < 0.3 ? 'fox' : `w${i % 5000}`));
      db.execute('insert into one {body: $1, grp: 9}', [words.join(' ')]);
      const [{ id }] = rowsOf(db.execute('get one select id where grp = 9')) as [{ id: number }];
      const started = Date.now();
      const answer = db.within(started + 2_000, 2_000, () =>
        db.execute('get one select id match body $1 where grp = 9 limit 1', ['fox']),
      );
      const [row] = rowsOf(answer);
      expect(row!.id).to.equal(id);
      expect(row!.snippet as string).to.match(/\*\*fox\*\*/);
      expect((row!.snippet as string).split(' ').length).to.be.at.most(22);
      // Every other word ends a sentence: FTS5 looks for the sentence before each place from the first
      // one (places × sentences, 142 ms at 8 000 words, measured); fenec_snippet moves forward.
      db.execute('insert into one {body: $1, grp: 8}', [
        Array.from({ length: 150_000 }, (_, i) => (i % 2 === 1 ? 'fox.' : 'den')).join(' '),
      ]);
      const [sentences] = rowsOf(
        db.within(Date.now() + 2_000, 2_000, () =>
          db.execute('get one select id match body $1 where grp = 8 limit 1', ['fox']),
        ),
      );
      expect(sentences!.snippet).to.equal(`${'den **fox**. '.repeat(9)}den **fox**…`);
    });
  });
});
