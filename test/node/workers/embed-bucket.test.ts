/**
 * A tenant's bucket of embedded texts (node/workers/embedding-passes.ts): `rate` a second, as many banked; a request
 * takes all its texts or none, with the whole seconds to wait when it cannot.
 */
import { expect } from 'chai';
import { EmbedBucket } from '../../../node/workers/embedding-passes.js';

describe('the embedRate bucket', () => {
  it('takes up to the bank at once, then refuses with the seconds until the texts are there', () => {
    const bucket = new EmbedBucket(10, 0);
    expect(bucket.take(6, 0)).to.equal(0);
    expect(bucket.take(6, 0), '4 left, 6 wanted: 0.2 s, a whole second').to.equal(1);
    expect(bucket.take(4, 0)).to.equal(0);
    expect(bucket.take(10, 0), 'empty, 10 wanted: 1 s').to.equal(1);
    expect(bucket.take(10, 1000), 'refilled in a second').to.equal(0);
  });

  it('lets a request of more texts than the bank holds go once the bank is full, leaving a debt', () => {
    const bucket = new EmbedBucket(5, 0);
    expect(bucket.take(12, 0)).to.equal(0);
    expect(bucket.take(1, 1000), 'the debt of 7 is paid back at 5 a second').to.equal(1);
    expect(bucket.take(1, 2000)).to.equal(0);
  });

  it('never refuses at rate 0 (no quota), nor a request that embeds nothing', () => {
    expect(new EmbedBucket(0).take(1_000_000)).to.equal(0);
    expect(new EmbedBucket(1, 0).take(0, 0)).to.equal(0);
  });
});
