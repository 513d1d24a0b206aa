import { expect } from 'chai';
import type { GetStmt } from '../../../shared/fenecql/ast.js';
import { parseStatement } from '../../../shared/fenecql/parser.js';
import { readIdentity } from '../../../shared/paging/pager.js';

const near = parseStatement('get docs near vec $1 where grp = $2 limit $3') as GetStmt;

describe('paging: what a cursor is bound to (readIdentity)', () => {
  it('is the same for the same values, whatever the page size, and -0 as 0 (as JSON writes it)', () => {
    expect(readIdentity(near, [[0.5, -0.25, 0], 7, 10])).to.equal(readIdentity(near, [[0.5, -0.25, -0], 7, 3]));
  });

  it("differs for another vector, another value, a vector's place or a vector against null", () => {
    const identities = [
      readIdentity(near, [[0.5, -0.25, 0], 7, 10]),
      readIdentity(near, [[0.5, -0.25, 1e-9], 7, 10]),
      readIdentity(near, [[0.5, -0.25, 0], 8, 10]),
      readIdentity(near, [7, [0.5, -0.25, 0], 10]),
      readIdentity(near, [null, 7, 10]),
      readIdentity(near, [[0.5, -0.25], 7, 10]),
      readIdentity(near, [['0.5', -0.25, 0], 7, 10]),
      readIdentity(parseStatement('get docs near vec $1 where grp = $2 limit 5') as GetStmt, [[0.5, -0.25, 0], 7]),
    ];
    expect(new Set(identities).size).to.equal(identities.length);
  });
});
