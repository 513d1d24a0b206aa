import { expect } from 'chai';
import { CostBucket, TokenBucket } from '../../../node/tenants/quotas.js';

describe('the tenant buckets (node/tenants/quotas)', () => {
  it('TokenBucket: a burst at once, then `rate` a second, with the whole seconds to wait when empty', () => {
    const bucket = new TokenBucket(2, 3, 0);
    expect([0, 0, 0].map(() => bucket.take(0))).to.deep.equal([0, 0, 0]);
    expect(bucket.take(0)).to.equal(1);
    // Half a second brings one token back (2 a second), and only one.
    expect(bucket.take(500)).to.equal(0);
    expect(bucket.take(500)).to.equal(1);
    // Ten idle seconds fill it to its burst, no further.
    expect([0, 0, 0, 0].map(() => bucket.take(10_500))).to.deep.equal([0, 0, 0, 1]);
    // A slow rate waits the seconds one token takes to flow in.
    const slow = new TokenBucket(0.25, 1, 0);
    expect([slow.take(0), slow.take(0)]).to.deep.equal([0, 4]);
  });

  it('TokenBucket: rate 0 (a paused tenant) takes nothing, whatever it holds', () => {
    expect(new TokenBucket(0, 5, 0).take(1_000)).to.equal(1);
  });

  it('CostBucket: runs while it holds time, charges afterwards, and refuses until a debt is paid back', () => {
    const bucket = new CostBucket(100, 1_000, 0);
    expect(bucket.check(0)).to.equal(0);
    // One statement of 1.5 s leaves a debt of 500 ms: 5 s at 100 ms a second, and a little more to hold any.
    bucket.charge(1_500, 0);
    expect(bucket.check(0)).to.equal(6);
    expect(bucket.check(4_000)).to.equal(2);
    expect(bucket.check(5_100)).to.equal(0);
    // Idle time banks up to its capacity, no further.
    bucket.charge(0, 100_000);
    bucket.charge(1_000, 100_000);
    expect(bucket.check(100_000)).to.equal(1);
  });

  it('CostBucket: rate 0 (no worker-time quota) never refuses', () => {
    const bucket = new CostBucket(0, 0, 0);
    bucket.charge(60_000, 0);
    expect(bucket.check(0)).to.equal(0);
  });
});
