import { expect } from 'chai';
import { parseCondition, parseStatement } from '../../../shared/fenecql/parser.js';
import { nearestName } from '../../../shared/nearest-name.js';
import { refusal } from '../../helpers/assertions.js';

/** Milliseconds the slowest of three runs takes. */
function slowest(run: () => void): number {
  let worst = 0;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    run();
    worst = Math.max(worst, performance.now() - started);
  }
  return worst;
}

describe('SQL habits', () => {
  it('hints only where a statement is refused: a valid statement is parsed as it always was', () => {
    expect(parseStatement('GET notes WHERE title IS NOT NULL ORDER year DESC LIMIT 5').kind).to.equal('Get');
    expect(refusal(() => parseStatement('get notes where')).hint).to.equal(undefined);
  });

  it("keeps the parser's code, message and position and adds the hint", () => {
    const plain = refusal(() => parseStatement('get notes where a = = 1'));
    const hinted = refusal(() => parseStatement('get notes where a == 1'));
    expect(hinted.code).to.equal(plain.code);
    expect(hinted.message).to.equal(plain.message.replace('column 21', 'column 20'));
    expect(hinted.position).to.deep.equal({ line: 1, column: 20, offset: 19 });
    expect(hinted.hint).to.include('one "="');
    expect(refusal(() => parseCondition('year == 2024')).hint).to.include('one "="');
  });

  it('builds the get meant from a select … from, cut short when long', () => {
    expect(refusal(() => parseStatement('select * from notes')).hint).to.match(/: get notes$/);
    expect(refusal(() => parseStatement('select a, b from notes where a > 1 order by b')).hint).to.match(
      /: get notes select a, b where a > 1 order b$/,
    );
    const long = refusal(() => parseStatement(`select ${'a, '.repeat(200)}b from notes`)).hint!;
    expect(long.length).to.be.below(250);
    expect(long).to.match(/…$/);
  });

  it('costs time linear in the statement: 100 times the text, not 10 000 times the time', function () {
    this.timeout(30_000);
    const inputs = (n: number): string[] => [
      `select ${' '.repeat(n)}x`,
      `select ${'a, '.repeat(n)} frm notes`,
      `get notes where a ${' '.repeat(n)}== 1`,
      `get notes where a in (${'1, '.repeat(n)}`,
    ];
    const time = (n: number): number => slowest(() => inputs(n).forEach((text) => refusal(() => parseStatement(text))));
    time(200);
    const small = Math.max(time(2_000), 1);
    const large = time(200_000);
    expect(large / small).to.be.below(1_000);
  });

  it('names the nearest name: another case first, then the fewest edits, never a far one', () => {
    const names = ['notes', 'memories', 'Users', 'logs'];
    expect(nearestName(names, 'note')).to.equal('notes');
    expect(nearestName(names, 'NOTES')).to.equal('notes');
    expect(nearestName(names, 'users')).to.equal('Users');
    expect(nearestName(names, 'memmories')).to.equal('memories');
    expect(nearestName(names, 'log')).to.equal('logs');
    expect(nearestName(names, 'secrets')).to.equal(undefined);
    expect(nearestName(names, 'x'.repeat(100_000))).to.equal(undefined);
  });
});
