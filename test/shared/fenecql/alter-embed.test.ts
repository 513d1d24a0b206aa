/**
 * `alter collection C embed F`: parsed into its plain tree, printed back to the same text, and what alter takes named
 * in the refusal of anything else.
 */
import { expect } from 'chai';
import { parseStatement } from '../../../shared/fenecql/parser.js';
import { printStatement } from '../../../shared/fenecql/print.js';
import { FenecError } from '../../../shared/errors.js';

describe('alter collection C embed F', () => {
  it('parses into its tree and prints back to the same text', () => {
    const tree = parseStatement('ALTER Collection docs EMBED vec');
    expect(tree).to.deep.equal({ kind: 'AlterEmbed', collection: 'docs', field: 'vec' });
    expect(printStatement(tree)).to.equal('alter collection docs embed vec');
    expect(parseStatement(printStatement(tree))).to.deep.equal(tree);
  });

  it('names embed among what alter takes', () => {
    let error: unknown;
    try {
      parseStatement('alter collection docs fill vec');
    } catch (err) {
      error = err;
    }
    expect(error).to.be.instanceOf(FenecError);
    expect((error as FenecError).message).to.match(/"add", "drop" or "embed"/);
    expect(() => parseStatement('alter collection docs embed')).to.throw(FenecError);
  });
});
