import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { CURSOR_TTL_MS, CursorKeeper, type Binding, type Position } from '../../../shared/paging/cursor.js';
import { FenecError } from '../../../shared/errors.js';

const SECRET = Buffer.from('cursor-test-secret-of-at-least-32-bytes!');
const BINDING: Binding = { scope: '/query', read: 'get docs match body $1\u0000["cats"]\u0000', subject: 'server' };
const RANKED: Position = { keys: [], score: 4.234061799026684, id: 19398, through: 50000, answered: 10 };
const ORDERED: Position = { keys: ['é ☃', null, 2025, true], id: 7, through: 9007199254740991, answered: 100 };

function code(work: () => unknown): string {
  try {
    work();
  } catch (err) {
    expect(err).to.be.instanceOf(FenecError);
    return (err as FenecError).code;
  }
  throw new Error('not refused');
}

describe('paging: cursors (CursorKeeper)', () => {
  it('gives back the position it was made with, ranked or by keys', () => {
    const keeper = new CursorKeeper(SECRET);
    for (const position of [RANKED, ORDERED, { ...RANKED, score: -0.5, keys: [] }]) {
      const cursor = keeper.issue(BINDING, position);
      expect(cursor).to.match(/^c2\.[A-Za-z0-9_-]+$/);
      expect(keeper.read(cursor, BINDING)).to.deep.equal(position);
    }
    expect(keeper.read(keeper.issue(BINDING, ORDERED), BINDING)).not.to.have.property('score');
  });

  it("signs its bytes with HMAC-SHA256 under the server's secret (16 bytes of it, after them)", () => {
    const bytes = Buffer.from(new CursorKeeper(SECRET).issue(BINDING, ORDERED).slice(3), 'base64url');
    const mac = createHmac('sha256', SECRET).update(bytes.subarray(0, -16)).digest().subarray(0, 16);
    expect(bytes.subarray(-16).toString('hex')).to.equal(mac.toString('hex'));
  });

  it('refuses a cursor with any byte changed, cut short, lengthened, written otherwise, or of the first format', () => {
    const keeper = new CursorKeeper(SECRET);
    const cursor = keeper.issue(BINDING, ORDERED);
    const bytes = Buffer.from(cursor.slice(3), 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      const altered = Buffer.from(bytes);
      altered[i] = altered[i]! ^ 1;
      // The fingerprint's bytes (1–6) make it another secret's: expired, not forged; every other byte is a forgery.
      expect(
        code(() => keeper.read(`c2.${altered.toString('base64url')}`, BINDING)),
        `byte ${i}`,
      ).to.equal(i >= 1 && i <= 6 ? 'expired_cursor' : 'invalid_cursor');
    }
    for (const other of [
      cursor.slice(0, -1),
      `${cursor}A`,
      `${cursor}==`,
      `${cursor.slice(0, 20)}.${cursor.slice(20)}`,
      `${cursor.slice(0, 20)}+${cursor.slice(21)}`,
      cursor.replace('c2.', 'c1.'),
      'c2.',
      'c2.AA',
      'c1.eyJrIjoiYWJjIn0.x',
      '',
      'c2.' + 'A'.repeat(9000),
    ]) {
      expect(
        code(() => keeper.read(other, BINDING)),
        other.slice(0, 40),
      ).to.equal('invalid_cursor');
    }
  });

  it('refuses another secret, another subject, another read, and an old cursor, each by its code', () => {
    let now = 1_800_000_000_000;
    const keeper = new CursorKeeper(SECRET, () => now);
    const cursor = keeper.issue(BINDING, RANKED);
    expect(code(() => new CursorKeeper(randomBytes(32)).read(cursor, BINDING))).to.equal('expired_cursor');
    expect(code(() => keeper.read(cursor, { ...BINDING, subject: 'jwt:[null,null,"alice"]' }))).to.equal(
      'foreign_cursor',
    );
    expect(code(() => keeper.read(cursor, { ...BINDING, read: `${BINDING.read} ` }))).to.equal('cursor_mismatch');
    expect(code(() => keeper.read(cursor, { ...BINDING, scope: 'search' }))).to.equal('cursor_mismatch');
    now += CURSOR_TTL_MS;
    expect(keeper.read(cursor, BINDING)).to.deep.equal(RANKED);
    now += 1000;
    expect(code(() => keeper.read(cursor, BINDING))).to.equal('expired_cursor');
  });

  it('refuses a signed cursor whose position is not one (a score not finite), as the first format did', () => {
    const keeper = new CursorKeeper(SECRET);
    for (const score of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(code(() => keeper.read(keeper.issue(BINDING, { ...RANKED, score }), BINDING))).to.equal('invalid_cursor');
    }
    expect(code(() => keeper.read(keeper.issue(BINDING, { ...RANKED, id: 0.5 }), BINDING))).to.equal('invalid_cursor');
  });

  it('makes cursors with keys longer than its buffer, and short ones after them', () => {
    const keeper = new CursorKeeper(SECRET);
    const long: Position = { ...ORDERED, keys: ['x'.repeat(3000), 1] };
    expect(keeper.read(keeper.issue(BINDING, long), BINDING)).to.deep.equal(long);
    expect(keeper.read(keeper.issue(BINDING, RANKED), BINDING)).to.deep.equal(RANKED);
  });
});
