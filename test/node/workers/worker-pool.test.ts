/**
 * Which worker a tenant goes to, over real worker threads and real files: the one with the fewest
 * tenants whose files are open now, tenants closed since counting no more. Which worker holds a tenant
 * is seen by the order of answers: a worker runs one request at a time, so a quick read for a tenant
 * on the worker that runs a slow statement is answered after it, and one on the other worker before.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { pino } from 'pino';
import { FenecDatabase } from '../../../node/database.js';
import type { TenantLimits, WorkerReply } from '../../../node/workers/protocol.js';
import { WorkerPool } from '../../../node/workers/worker-pool.js';
import { SERVER_CALLER } from '../../../shared/http/front-door.js';
import { tempDir } from '../../helpers/temp.js';
import { nativeBuildsInUse } from '../../../node/native-builds.js';

const LIMITS: TenantLimits = {
  maxBytes: 0,
  maxCollections: 0,
  maxRows: 0,
  maxAnswerBytes: 64 * 1024 * 1024,
  statementTimeoutMs: 60_000,
};
/** `lower` nested ten deep in each of eight alternatives, none matching: a fraction of a second over 10 000 rows. */
const SLOW_COUNT = `get big where ${Array.from(
  { length: 8 },
  (_, i) => `${'lower('.repeat(10)}body${')'.repeat(10)} like "%never-${i}%"`,
).join(' or ')} count`;

describe('WorkerPool: the worker with the fewest tenants (node/workers/worker-pool)', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  let pool: WorkerPool;

  before(() => {
    temp = tempDir();
    const db = FenecDatabase.open({ file: temp.file('slow.fenec'), readOnly: false, program: 'test' });
    db.execute('create collection big (body text)');
    for (let start = 0; start < 10_000; start += 1000)
      db.execute('insert into big $1', [
        Array.from({ length: 1000 }, (_, i) => ({ body: `Row ${start + i} In Capitals` })),
      ]);
    db.close();
    pool = new WorkerPool({
      workers: 2,
      logger: pino({ level: 'silent' }),
      setup: {
        file: undefined,
        dataDir: path.dirname(temp.file('slow.fenec')),
        tenantQuotas: false,
        replicated: false,
        readOnly: false,
        httpReadOnly: false,
        sweepIntervalMs: 0,
        busyTimeoutMs: 5_000,
        policy: undefined,
        mcp: undefined,
        audit: undefined,
        otel: undefined,
        cursorSecret: new Uint8Array(32),
        nativeBuilds: nativeBuildsInUse(),
      },
    });
  });
  after(async () => {
    await pool.stop();
    temp.remove();
  });

  const run = (tenant: string, statement: string): Promise<WorkerReply> =>
    pool.run(tenant, LIMITS, {
      route: '/query',
      body: new TextEncoder().encode(JSON.stringify({ statement })),
      caller: SERVER_CALLER,
      remote: undefined,
    });
  const ok = async (reply: Promise<WorkerReply>): Promise<void> => {
    const answered = await reply;
    expect(answered.status, String(answered.body)).to.equal(200);
  };

  it('places a new tenant on the worker whose tenants were closed, not on the one given fewest ever', async () => {
    // a on worker 0, slow on worker 1, c on worker 0 (the fewest, first on a tie).
    for (const tenant of ['a', 'slow', 'c']) await ok(run(tenant, 'schema'));
    await pool.close('a');
    await pool.close('c');
    // Worker 0 holds no tenant now, worker 1 one: the new tenant goes to worker 0, beside no one.
    const order: string[] = [];
    const slow = run('slow', SLOW_COUNT).then((reply) => (order.push('slow'), reply));
    const fresh = run('fresh', 'schema').then((reply) => (order.push('fresh'), reply));
    await Promise.all([ok(slow), ok(fresh)]);
    expect(order).to.deep.equal(['fresh', 'slow']);
  });

  it('forgets a closed tenant: its next request goes to the worker with the fewest, not to its old one', async () => {
    // Now: fresh on worker 0, slow on worker 1. Closed, fresh leaves worker 0 empty again.
    await pool.close('fresh');
    await ok(run('b', 'schema')); // worker 0
    await ok(run('a', 'schema')); // one each: worker 0, first on a tie (a, closed before, is placed anew)
    await pool.close('a');
    await pool.close('b');
    await ok(run('d', 'schema')); // worker 0, empty again
    const order: string[] = [];
    const slow = run('slow', SLOW_COUNT).then((reply) => (order.push('slow'), reply));
    const quick = run('d', 'schema').then((reply) => (order.push('d'), reply));
    await Promise.all([ok(slow), ok(quick)]);
    expect(order).to.deep.equal(['d', 'slow']);
  });
});
