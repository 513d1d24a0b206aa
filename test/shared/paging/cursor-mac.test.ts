import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { hmacSha256 } from '../../../shared/paging/cursor.js';

describe("paging: the cursor's HMAC (hmacSha256)", () => {
  it("gives createHmac('sha256')'s bytes for keys shorter than, equal to and longer than SHA-256's block", () => {
    for (const keyBytes of [32, 63, 64, 65, 200]) {
      const key = randomBytes(keyBytes);
      const mac = hmacSha256(key);
      for (const message of ['', 'c1.eyJrIjoiYWJjIn0', 'é ☃ \u0000 '.repeat(40), 'x'.repeat(5000)]) {
        const wanted = createHmac('sha256', key).update(message).digest('hex');
        expect(mac(message).toString('hex'), `${keyBytes}-byte key`).to.equal(wanted);
      }
    }
  });
});
