import { expect } from 'chai';
import fc from 'fast-check';
import type { Policy, PolicyRule } from '../../shared/auth/policy.js';
import { parseCondition } from '../../shared/fenecql/parser.js';
import { FenecDatabase, type ExecuteOptions } from '../../node/database.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

function policy(lines: Record<string, { read?: boolean; write?: boolean; where?: string }>): Policy {
  const rules = new Map<string, PolicyRule>();
  for (const [collection, rule] of Object.entries(lines)) {
    rules.set(collection, {
      collection,
      read: rule.read ?? false,
      write: rule.write ?? false,
      where: rule.where === undefined ? undefined : parseCondition(rule.where),
      source: `test:${collection}`,
    });
  }
  return { rules };
}

type Rows = { rows: Record<string, unknown>[]; count: number };

describe('FenecDatabase under a token policy', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  const POLICY = policy({
    memories: { read: true, write: true, where: 'owner = $jwt.sub' },
    readonly: { read: true },
  });
  const as = (sub: string): ExecuteOptions => ({ jwt: { sub, tenant: 't' }, policy: POLICY });
  const server = (statement: string, ...params: unknown[]) => db.execute(statement, params);
  const by =
    (sub: string) =>
    (statement: string, ...params: unknown[]) =>
      db.execute(statement, params, as(sub));

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('p.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    server(
      'create collection memories (text text required @text, tags [text], owner text @hash, vec vector<2> @hnsw(cosine))',
    );
    server('create collection readonly (text text)');
    server('create collection secret (text text)');
    server('insert into secret {text: "hidden"}');
  });
  afterEach(() => {
    db.close();
    temp.remove();
  });

  it("fills a pinned field from the token's claim when a write leaves it out", () => {
    by('ann')('insert into memories {text: "ann likes tea"}');
    expect((server('get memories select owner') as Rows).rows).to.deep.equal([{ id: 1, owner: 'ann' }]);
  });

  it('refuses a write naming another subject, and writes nothing', () => {
    const err = refusal(() => by('ann')('insert into memories [{text: "mine"}, {text: "theirs", owner: "bob"}]'));
    expect(err.code).to.equal('forbidden');
    expect(err.status).to.equal(403);
    expect(err.message).to.contain('owner = $jwt.sub');
    expect(server('get memories count')).to.deep.equal({ count: 0 });
    by('bob')('insert into memories {text: "bob row"}');
    expect(refusal(() => by('ann')('put memories {id: 1, text: "taken over"}')).code).to.equal('forbidden');
    expect(refusal(() => by('bob')('set memories {owner: "ann"} where true')).code).to.equal('forbidden');
    expect((server('get memories select owner, text') as Rows).rows).to.deep.equal([
      { id: 1, owner: 'bob', text: 'bob row' },
    ]);
  });

  it('hides collections the policy does not name, as unknown ones are', () => {
    const hidden = refusal(() => by('ann')('get secret'));
    const unknown = refusal(() => by('ann')('get nothing_here'));
    expect(hidden.code).to.equal('unknown_collection');
    expect(hidden.status).to.equal(unknown.status);
    expect(hidden.hint).to.equal(unknown.hint);
    const names = (by('ann')('schema') as { collections: { name: string }[] }).collections.map((c) => c.name);
    expect(names).to.deep.equal(['memories', 'readonly']);
    expect(refusal(() => by('ann')('schema secret')).code).to.equal('unknown_collection');
  });

  it('needs the write grant to write, and never runs a schema change or compact', () => {
    expect(refusal(() => by('ann')('insert into readonly {text: "x"}')).code).to.equal('forbidden');
    expect((by('ann')('get readonly count') as { count: number }).count).to.equal(0);
    for (const statement of [
      'create collection x (a int)',
      'drop collection memories',
      'alter collection memories add b int',
      'compact',
    ]) {
      expect(refusal(() => by('ann')(statement)).code, statement).to.equal('forbidden');
    }
  });

  it('refuses a token that lacks the claim its policy names', () => {
    const err = refusal(() => db.execute('get memories', [], { jwt: { tenant: 't' }, policy: POLICY }));
    expect(err.code).to.equal('forbidden');
    expect(err.message).to.contain('no claim sub');
    expect(refusal(() => server('get memories where owner = $jwt.sub')).code).to.equal('missing_parameter');
  });

  it('keeps claims and params values, never statement text', () => {
    const hostile = ['x" or true --', '1 or 1=1', '") or (1 = 1', 'ann" or owner != "'];
    for (const sub of hostile) by(sub)('insert into memories {text: $1}', sub);
    by('ann')('insert into memories {text: "ann"}');
    for (const sub of hostile) {
      const rows = (by(sub)('get memories select text, owner') as Rows).rows;
      expect(rows.map((r) => r.owner)).to.deep.equal([sub]);
      expect((by('ann')('get memories where text = $1 count', sub) as { count: number }).count).to.equal(0);
    }
  });

  it("scores a match over the rows the token may read: another subject's rows move no score", () => {
    const bobs = [
      { text: 'the deploy runs on fridays', tags: ['ops'], vec: [1, 0] },
      { text: 'deploy staging first, then deploy production', tags: ['ops'], vec: [0.6, 0.8] },
      { text: 'lunch on fridays', tags: ['life'], vec: [0, 1] },
    ];
    by('bob')(`insert into memories ${JSON.stringify(bobs)}`);
    const reads = [
      ['get memories select text match text $1 limit 10', 'deploy fridays'],
      ['get memories select text match * $1 where tags has "ops" limit 10', 'deploy'],
      ['get memories select text match text $1 near vec [1, 0] fuse limit 10', 'when is the deploy'],
    ] as const;
    const answers = () => reads.map(([statement, words]) => by('bob')(statement, words));
    const before = answers();
    const scores = (answer: unknown) => (answer as Rows).rows.map((r) => r._score as number);
    expect(scores(before[0])).to.have.length(3);
    expect(scores(before[0]).every((score) => score > 0.1)).to.equal(true);

    // Alice's rows hold the same words, many times over: collection-wide statistics would move.
    const alices = Array.from({ length: 60 }, (_, i) => ({
      text: `deploy deploy ${i % 2 ? 'fridays' : 'mondays'}`,
      vec: [1, i],
    }));
    by('alice')(`insert into memories ${JSON.stringify(alices)}`);
    expect(answers()).to.deep.equal(before);

    // The server token's scores are the whole collection's; over bob's rows alone they are bob's.
    expect(scores(server(reads[0][0], reads[0][1]))).to.have.length(10);
    expect(
      scores(server(`${reads[0][0].replace('limit 10', 'where owner = "bob" limit 10')}`, reads[0][1])),
    ).not.to.deep.equal(scores(before[0]));
    const alone = FenecDatabase.open({
      file: temp.file('bob.fenec'),
      readOnly: false,
      program: 'test',
      sweepIntervalMs: 0,
    });
    try {
      alone.execute(
        'create collection memories (text text required @text, tags [text], owner text @hash, vec vector<2> @hnsw(cosine))',
      );
      alone.execute(`insert into memories ${JSON.stringify(bobs.map((row) => ({ ...row, owner: 'bob' })))}`);
      expect(reads.map(([statement, words]) => alone.execute(statement, [words]))).to.deep.equal(before);
    } finally {
      alone.close();
    }
  });

  it('keeps two subjects apart through every statement (property)', () => {
    const subjects = ['ann', 'bob'] as const;
    for (const sub of subjects) {
      const rows = Array.from({ length: 200 }, (_, i) => ({
        text: `${sub} note ${i} about ${i % 2 ? 'tea' : 'coffee'}`,
        tags: [`t${i % 5}`],
        vec: [1, i + 1],
      }));
      by(sub)(`insert into memories ${JSON.stringify(rows)}`);
    }
    const statements = fc.oneof(
      fc.record({ kind: fc.constant('get'), tag: fc.integer({ min: 0, max: 6 }) }),
      fc.record({ kind: fc.constant('count'), tag: fc.integer({ min: 0, max: 6 }) }),
      fc.record({ kind: fc.constant('match'), word: fc.constantFrom('tea', 'coffee', 'note', 'ann', 'bob') }),
      fc.record({ kind: fc.constant('near'), x: fc.double({ min: 0.1, max: 10, noNaN: true }) }),
      fc.record({ kind: fc.constant('set'), tag: fc.integer({ min: 0, max: 6 }) }),
      fc.record({ kind: fc.constant('del'), tag: fc.integer({ min: 0, max: 6 }) }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...subjects), statements, (sub, s) => {
        const other = sub === 'ann' ? 'bob' : 'ann';
        const before = (server('get memories where owner = $1 count', other) as { count: number }).count;
        const run = by(sub);
        const owners = (answer: unknown) => (answer as Rows).rows.map((r) => r.owner);
        switch (s.kind) {
          case 'get':
            expect(
              owners(run('get memories select owner where tags has $1', `t${s.tag}`)).every((o) => o === sub),
            ).to.equal(true);
            break;
          case 'count': {
            const mine = (run('get memories where tags has $1 count', `t${s.tag}`) as { count: number }).count;
            expect(mine).to.equal(
              (server('get memories where tags has $1 and owner = $2 count', `t${s.tag}`, sub) as { count: number })
                .count,
            );
            break;
          }
          case 'match':
            expect(
              owners(run('get memories select owner match text $1 limit 50', s.word)).every((o) => o === sub),
            ).to.equal(true);
            break;
          case 'near':
            expect(
              owners(run('get memories select owner near vec $1 limit 20', [1, s.x])).every((o) => o === sub),
            ).to.equal(true);
            break;
          case 'set':
            run('set memories {text: $1} where tags has $2', `changed by ${sub}`, `t${s.tag}`);
            break;
          case 'del':
            run('del memories where tags has $1', `t${s.tag}`);
            break;
        }
        expect((server('get memories where owner = $1 count', other) as { count: number }).count).to.equal(before);
        expect(
          (server('get memories where owner = $1 and text = $2 count', other, `changed by ${sub}`) as { count: number })
            .count,
        ).to.equal(0);
      }),
      { numRuns: 150, seed: 42 },
    );
  });
});
