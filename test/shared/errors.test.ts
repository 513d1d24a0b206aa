import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { CATALOGUE, FenecError, MAX_MESSAGE_LENGTH, type ErrorCode } from '../../shared/errors.js';

/** The rows of docs/errors.md's tables: | `code` | status | meaning | */
function documentedCodes(): Map<string, number> {
  const text = readFileSync(new URL('../../../docs/errors.md', import.meta.url), 'utf8');
  const codes = new Map<string, number>();
  for (const match of text.matchAll(/^\|\s*`([a-z_]+)`\s*\|\s*(\d{3})\s*\|/gm)) codes.set(match[1]!, Number(match[2]));
  return codes;
}

describe('the error catalogue', () => {
  it('documents every code in docs/errors.md with its status', () => {
    const documented = documentedCodes();
    for (const [code, entry] of Object.entries(CATALOGUE)) {
      expect(documented.get(code), `docs/errors.md lacks ${code}`).to.equal(entry.status);
    }
  });

  it('documents no code the catalogue does not have', () => {
    for (const code of documentedCodes().keys())
      expect(CATALOGUE, `${code} is documented but not in the catalogue`).to.have.property(code);
  });

  it('gives every error the status of its code and the one wire shape', () => {
    const err = new FenecError('unknown_collection' as ErrorCode, 'no collection named x', {
      hint: 'schema lists them',
      position: { line: 2, column: 5, offset: 9 },
    });
    expect(err.status).to.equal(404);
    expect(err.toJSON()).to.deep.equal({
      error: {
        code: 'unknown_collection',
        message: 'no collection named x',
        hint: 'schema lists them',
        line: 2,
        column: 5,
      },
    });
  });

  it(`cuts a message past ${MAX_MESSAGE_LENGTH} characters, saying how much, never inside a surrogate pair`, () => {
    const exact = 'm'.repeat(MAX_MESSAGE_LENGTH);
    expect(new FenecError('bad_request', exact).message).to.equal(exact);
    const long = new FenecError('bad_request', `unknown field "${'k'.repeat(500_000)}"`).message;
    expect(long).to.equal(
      `unknown field "${'k'.repeat(MAX_MESSAGE_LENGTH - 15)}… (${500_000 + 16 - MAX_MESSAGE_LENGTH} characters more)`,
    );
    const pairs = new FenecError('bad_request', `${'m'.repeat(MAX_MESSAGE_LENGTH - 1)}🦊🦊`).message;
    expect(pairs.startsWith(`${'m'.repeat(MAX_MESSAGE_LENGTH - 1)}…`)).to.equal(true);
    expect(pairs.isWellFormed()).to.equal(true);
  });
});
