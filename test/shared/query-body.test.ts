/** The body of POST /query as the node reads it: what it takes, and each refusal as a caller reads it. */
import { expect } from 'chai';
import { FenecError } from '../../shared/errors.js';
import { checkQueryBody } from '../../shared/query-body.js';

const SHAPE = '{"statement": "...", "params": [...], "cursor": "..."}';

describe('the /query body', () => {
  it('takes a statement, with params and a cursor or without', () => {
    expect(checkQueryBody({ statement: 'get notes' })).to.deep.equal({ statement: 'get notes', params: [] });
    expect(checkQueryBody({ statement: 'g', params: [1, { a: null }], cursor: 'c1' })).to.deep.equal({
      statement: 'g',
      params: [1, { a: null }],
      cursor: 'c1',
    });
  });

  const refusals: [unknown, string][] = [
    [['get notes'], `the request body must be a JSON object ${SHAPE}, not an array`],
    [7, `the request body must be a JSON object ${SHAPE}, not a number`],
    [null, `the request body must be a JSON object ${SHAPE}, not null`],
    [{ params: [1] }, `"statement" is missing; send ${SHAPE}`],
    [{ statement: 7 }, '"statement" must be a string, not a number'],
    [{ statement: null }, '"statement" must be a string, not null'],
    [{ statement: 'g', params: { 1: 2 } }, '"params" must be an array of values (bound to $1, $2, …), not an object'],
    [{ statement: 'g', params: null }, '"params" must be an array of values (bound to $1, $2, …), not null'],
    [{ statement: 'g', cursor: 5 }, '"cursor" must be a string (next_cursor of the page before), not a number'],
    [
      { statement: 'g', param: [1] },
      'unknown field "param" in the request body (did you mean "params"?); it takes "statement", "params" and "cursor"',
    ],
    [
      { statement: 'g', xyz: 1 },
      'unknown field "xyz" in the request body; it takes "statement", "params" and "cursor"',
    ],
    [
      { statment: 'g' },
      'unknown field "statment" in the request body (did you mean "statement"?); it takes "statement", "params" and "cursor"',
    ],
  ];
  for (const [body, message] of refusals) {
    it(`refuses ${JSON.stringify(body)} with bad_request: ${message.slice(0, 40)}…`, () => {
      let refused: unknown;
      try {
        checkQueryBody(body);
      } catch (err) {
        refused = err;
      }
      expect(refused).to.be.instanceOf(FenecError).and.include({ code: 'bad_request', message });
    });
  }
});
