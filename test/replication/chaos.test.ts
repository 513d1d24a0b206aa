import { expect } from 'chai';
import { runChaos } from './chaos.js';

describe('replication under faults: a short round of make chaos', function () {
  this.timeout(120_000);

  it('keeps every acknowledged write once, takes no fenced one, reads none stale, and carries quotas and policies', async () => {
    const result = await runChaos({ durationMs: 15_000, tenants: 6, writers: 4, faultEveryMs: 2_500, minFaults: 3 });
    console.log(
      `      (${result.acknowledged} acknowledged, ${result.unknown} unknown, ${result.refused} refused, ` +
        `${result.reads} reads checked; ` +
        `${result.faults.join(', ')}; every tenant written again ${result.recoveries.join(', ')} ms after a kill)`,
    );
    expect(result.violations).to.deep.equal([]);
    expect(result.acknowledged).to.be.greaterThan(50);
    expect(result.reads).to.be.greaterThan(20);
    expect(result.faults.length).to.be.at.least(3);
    for (const ms of result.recoveries) expect(ms).to.be.below(10_000);
  });
});
