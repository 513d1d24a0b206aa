/**
 * The loader's check of a row's shape (node/cli/row-source.ts, oneObject): every JSON object passes it,
 * and whatever passes it, joined with other rows in an array, is one element or no JSON at all — never
 * two rows, never a part of its neighbour.
 */
import { expect } from 'chai';
import { oneObject } from '../../../node/cli/row-source.js';

/** A small deterministic generator of JSON values whose strings hold quotes, backslashes and brackets. */
function generator(seed: number) {
  let state = seed;
  const random = (n: number): number => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % n;
  };
  const PIECES = ['a', '"', '\\', '{', '}', '[', ']', ',', ':', ' ', 'é', '\n', '\\"', '\\\\'];
  const text = (): string => Array.from({ length: random(8) }, () => PIECES[random(PIECES.length)]).join('');
  const value = (depth: number): unknown => {
    switch (random(depth > 2 ? 3 : 5)) {
      case 0:
        return text();
      case 1:
        return random(1000) - 500 + random(100) / 7;
      case 2:
        return random(2) === 0 ? null : true;
      case 3:
        return Array.from({ length: random(4) }, () => value(depth + 1));
      default:
        return object(depth + 1);
    }
  };
  const object = (depth: number): Record<string, unknown> =>
    Object.fromEntries(Array.from({ length: random(4) }, () => [text(), value(depth)]));
  return { object, random };
}

describe("a load row's shape (oneObject)", () => {
  it('passes every JSON object, whatever its strings hold', () => {
    const { object } = generator(7);
    for (let i = 0; i < 2000; i++) {
      const text = JSON.stringify(object(0));
      expect(oneObject(text), text).to.equal(true);
    }
    expect(oneObject('{"vec": [0.1, -2e-3, 3], "note": "a \\"quoted\\" } ] word", "path": "C:\\\\"}')).to.equal(true);
  });

  it('refuses what is not one object by its shape', () => {
    for (const text of [
      '',
      '{',
      '}',
      '[]',
      '[{"a": 1}]',
      '5',
      '"{}"',
      '{"a": 1} {"b": 2}',
      '{"a": 1}, {"b": 2}',
      '{"a": "}',
      '{"a": "\\"}',
      '{"a": [1}',
      '{}}',
      '{"a": 1}}{"b": {2}',
    ]) {
      expect(oneObject(text), text).to.equal(false);
    }
  });

  it('lets nothing through that an array of rows would read as other than one element', () => {
    const { object, random } = generator(11);
    let passed = 0;
    for (let i = 0; i < 5000; i++) {
      const whole = JSON.stringify(object(0));
      // A cut, a character doubled or dropped: most are not JSON; those shaped as an object must be one row or none.
      const at = random(whole.length + 1);
      const mutated = [
        whole.slice(0, at),
        whole.slice(at, at + 1 + random(2)),
        whole.slice(at),
        whole.slice(0, at) + whole.slice(at + 1),
      ][random(4)]!;
      if (!oneObject(mutated)) continue;
      passed++;
      let rows: unknown;
      try {
        rows = JSON.parse(`[{"n": 0},${mutated},{"n": 2}]`);
      } catch {
        continue;
      }
      expect(rows, mutated).to.have.length(3);
      expect((rows as unknown[])[1], mutated).to.deep.equal(JSON.parse(mutated));
    }
    expect(passed).to.be.greaterThan(100);
  });
});
