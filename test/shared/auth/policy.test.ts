import { expect } from 'chai';
import { EMPTY_POLICY, grantedTools, parsePolicy } from '../../../shared/auth/policy.js';
import { parseCondition } from '../../../shared/fenecql/parser.js';
import { refusal, withoutPos } from '../../helpers/assertions.js';

describe('parsePolicy', () => {
  it("reads the seed's line: grants and a condition whose $jwt claim is a value", () => {
    const policy = parsePolicy('memories  read,write  where owner = $jwt.sub\n', 'policy.txt');
    const rule = policy.rules.get('memories')!;
    expect(rule).to.include({ collection: 'memories', read: true, write: true, source: 'policy.txt:1' });
    expect(withoutPos(rule.where)).to.deep.equal({
      kind: 'Compare',
      op: '=',
      left: { kind: 'Field', name: 'owner' },
      right: { kind: 'Jwt', claim: 'sub' },
    });
  });

  it('takes read, write, read,write and write,read, with or without blanks around the comma', () => {
    const policy = parsePolicy(['a read', 'b write', 'c read,write', 'd write, read', 'e READ'].join('\n'), 'p');
    const grants = [...policy.rules.values()].map((rule) => [rule.collection, rule.read, rule.write]);
    expect(grants).to.deep.equal([
      ['a', true, false],
      ['b', false, true],
      ['c', true, true],
      ['d', true, true],
      ['e', true, false],
    ]);
    expect(policy.rules.get('a')!.where).to.equal(undefined);
  });

  it('skips blank lines and # comments, but not a # inside a string', () => {
    const text = [
      '# who sees what',
      '',
      '   ',
      'notes read   # everyone reads the notes',
      'tasks read,write where tag = "#ops" and owner = $jwt.sub  # own tasks',
    ].join('\n');
    const policy = parsePolicy(text, 'policy.txt');
    expect([...policy.rules.keys()]).to.deep.equal(['notes', 'tasks']);
    expect(policy.rules.get('tasks')!.source).to.equal('policy.txt:5');
    expect(withoutPos(policy.rules.get('tasks')!.where)).to.deep.equal(
      withoutPos(parseCondition('tag = "#ops" and owner = $jwt.sub')),
    );
  });

  it('reads an empty file as a policy that names no collection', () => {
    expect(parsePolicy('# nothing yet\n', 'p').rules.size).to.equal(0);
    expect(EMPTY_POLICY.rules.size).to.equal(0);
  });

  it('keeps claim values that look like FenecQL as a claim, never as text', () => {
    const rule = parsePolicy('docs read where owner = $jwt.sub or team in $jwt.teams', 'p').rules.get('docs')!;
    expect(withoutPos(rule.where)).to.deep.equal(withoutPos(parseCondition('owner = $jwt.sub or team in $jwt.teams')));
  });

  it('freezes what it returns', () => {
    const policy = parsePolicy('notes read', 'p');
    expect(Object.isFrozen(policy)).to.equal(true);
    expect(Object.isFrozen(policy.rules.get('notes'))).to.equal(true);
  });

  describe('refuses, with invalid_option naming the file and the line (and the column in a condition)', () => {
    const cases: Array<[text: string, where: string, says: string]> = [
      ['notes', 'policy.txt:1:', 'expected COLLECTION GRANTS'],
      ['# c\nnotes read\nnotes write', 'policy.txt:3:', 'has a rule already, at policy.txt:2'],
      ['notes readwrite', 'policy.txt:1:', 'expected grants read, write or read,write, found "readwrite"'],
      ['notes read,read', 'policy.txt:1:', 'grant read is named twice'],
      ['notes read,delete', 'policy.txt:1:', 'found "delete"'],
      ['notes read when x = 1', 'policy.txt:1:', 'expected where COND'],
      ['notes read where', 'policy.txt:1:', 'expected a condition after where'],
      ['\n\nnotes read where owner = = 1', 'policy.txt:3:26:', 'expected'],
      ['notes read where owner = $jwt.sub limit 3', 'policy.txt:1:', 'expected the end of the condition'],
      ['notes read where owner = $jwt.sub; drop collection notes', 'policy.txt:1:', ''],
      ['notes read where owner = $1', 'policy.txt:1:', 'not $1'],
      ['notes read where tags has [1, $2]', 'policy.txt:1:', 'not $2'],
      ['notes read where owner = $jwt.', 'policy.txt:1:', ''],
      ['_system read', 'policy.txt:1:', 'expected a collection name'],
      ['no-tes read', 'policy.txt:1:', 'expected a collection name'],
    ];
    for (const [text, where, says] of cases) {
      it(JSON.stringify(text), () => {
        const err = refusal(() => parsePolicy(text, 'policy.txt'));
        expect(err.code).to.equal('invalid_option');
        // policy.txt:LINE: …, or policy.txt:LINE:COLUMN: … when the condition is at fault
        const named = /^(policy\.txt:\d+:)(\d+:)? /.exec(err.message);
        expect(named?.[1], err.message).to.equal(where.split(':').slice(0, 2).join(':') + ':');
        if (where.split(':').length === 4) expect(named?.[2], err.message).to.equal(where.split(':')[2] + ':');
        expect(err.message).to.include(says);
      });
    }
  });
});

describe('the tools line, and the tools a token is granted', () => {
  it('reads tools NAME, NAME; a token gets what both the line and its claim allow', () => {
    const policy = parsePolicy('tools  search, recall,remember\nmemories read,write where owner = $jwt.sub\n', 'p');
    expect([...policy.tools!]).to.deep.equal(['search', 'recall', 'remember']);
    expect([...policy.rules.keys()]).to.deep.equal(['memories']);
    expect(grantedTools(policy, { sub: 'a' })).to.equal(policy.tools);
    expect([...grantedTools(policy, { sub: 'a', tools: ['recall', 'write', 'query'] })!]).to.deep.equal(['recall']);
  });

  it('offers every tool without a line or a claim, the claim alone with only a claim, none with tools none', () => {
    const open = parsePolicy('docs read\n', 'p');
    expect(grantedTools(open, { sub: 'a' })).to.equal(undefined);
    expect([...grantedTools(open, { sub: 'a', tools: ['schema', 'query'] })!]).to.deep.equal(['schema', 'query']);
    expect(grantedTools(parsePolicy('tools none\n', 'p'), { sub: 'a' })!.size).to.equal(0);
  });

  it('grants no tool to a tools claim that is not an array of names', () => {
    const open = parsePolicy('docs read\n', 'p');
    for (const claim of ['search', [1], { search: true }, null])
      expect(grantedTools(open, { sub: 'a', tools: claim })!.size, JSON.stringify(claim)).to.equal(0);
  });

  it('reads tools read (or read,write, with where) as the rule of a collection named tools', () => {
    const policy = parsePolicy('tools read\n', 'p');
    expect(policy.tools).to.equal(undefined);
    expect(policy.rules.get('tools')).to.include({ read: true, write: false });
    expect(parsePolicy('tools read,write where owner = $jwt.sub\n', 'p').rules.get('tools')).to.include({
      read: true,
      write: true,
    });
  });

  const cases: Array<[text: string, says: string]> = [
    ['tools\n', 'p:1: expected the tools after tools'],
    [
      'tools search recall\n',
      'p:1: expected a tool (query, search, schema, write, remember, recall, forget), found "search recall"',
    ],
    ['tools search, drop\n', 'found "drop"'],
    ['tools search, search\n', 'p:1: tool search is named twice'],
    ['tools search\ntools recall\n', 'p:2: the tools line is given already, at p:1'],
  ];
  for (const [text, says] of cases) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      const err = refusal(() => parsePolicy(text, 'p'));
      expect(err.code).to.equal('invalid_option');
      expect(err.message).to.contain(says);
    });
  }
});
