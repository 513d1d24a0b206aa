/**
 * `make chaos`: a long round of test/replication/chaos.ts (about four minutes), its figures printed, exit status 1
 * when the checker found a violation.
 */
import { runChaos } from './chaos.js';

const result = await runChaos({
  durationMs: Number(process.env.CHAOS_SECONDS ?? 240) * 1000,
  tenants: 20,
  writers: 8,
  faultEveryMs: 6_000,
  log: (line) => console.log(line),
});
console.log(JSON.stringify({ ...result, faults: result.faults.length, exits: result.exits.length }, null, 2));
// How every node's and router's process ended during the round: a death the nemesis did not cause is a violation.
for (const line of result.exits) console.log(line);
const recoveries = [...result.recoveries].sort((a, b) => a - b);
if (recoveries.length > 0) {
  console.log(
    `every tenant written again after a kill -9: median ${recoveries[Math.floor(recoveries.length / 2)]} ms, worst ${recoveries.at(-1)} ms`,
  );
}
const partitions = [...result.partitionRecoveries].sort((a, b) => a - b);
if (partitions.length > 0) {
  console.log(
    `every tenant written again after a partition's cut: median ${partitions[Math.floor(partitions.length / 2)]} ms, worst ${partitions.at(-1)} ms`,
  );
}
console.log(result.violations.length === 0 ? '1 passed, 0 failed' : '0 passed, 1 failed');
process.exit(result.violations.length === 0 ? 0 : 1);
