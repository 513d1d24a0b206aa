'use strict';
// Tests are compiled by tsc into dist/ and run from there; CI forbids a forgotten `.only`.
//
// `npx mocha` runs every file, one after another. `make test` runs them in two passes instead (FENEC_TESTS):
//   parallel  every file but ALONE, on two mocha workers (a process each, one file at a time), the longest first
//             so that both workers finish near the same time. Each test already takes free ports (port 0) and
//             its own temporary folders, and kills the processes it started.
//   alone     ALONE, one after another, with no other test file beside them: files whose verdicts bound a wall
//             time (an answer within a second, a statement stopped within its limit, a ratio of two timings),
//             which a second test file on the same cores could push past its bound
//             (replication's failover within 10 s among them); and Faiss's own tests, which
//             keep every core busy (OpenMP) and bound the event loop's longest pause beside an add.
const fs = require('node:fs');

const ALONE = [
  'dist/test/e2e/hosted.test.js',
  'dist/test/integration/embedder/tenants.test.js',
  'dist/test/integration/hostile-statements.test.js',
  'dist/test/integration/revocation.test.js',
  'dist/test/integration/workers.test.js',
  'dist/test/node/embedder/embedder.test.js',
  'dist/test/node/hostile-statements.test.js',
  'dist/test/node/storage/deadline.test.js',
  'dist/test/node/vector/faiss.test.js',
  'dist/test/replication/chaos.test.js',
  'dist/test/replication/replication.test.js',
  'dist/test/router/router-app.test.js',
  'dist/test/shared/fenecql/limits.test.js',
  'dist/test/shared/fenecql/sql-habits.test.js',
  'dist/test/shared/oauth/issuer.test.js',
];

/** The longest files of the parallel pass (about 15 s or more on an idle 2-core machine), longest first. */
const LONGEST = [
  'dist/test/console/console.test.js',
  'dist/test/node/vector/store.test.js',
  'dist/test/integration/new-user.test.js',
  'dist/test/integration/tracing.test.js',
  'dist/test/node/vector/store-persistence.test.js',
  'dist/test/integration/mcp/clients.test.js',
  'dist/test/integration/mcp/stdio.test.js',
  'dist/test/integration/import.test.js',
  'dist/test/integration/mcp/inspector.test.js',
  'dist/test/node/vector/store-crash.test.js',
  'dist/test/reliability/forged-tokens.test.js',
  'dist/test/integration/mcp/agents.test.js',
  'dist/test/integration/mcp-agent-example.test.js',
  'dist/test/integration/tenant-cli.test.js',
  'dist/test/integration/mcp/paging.test.js',
  'dist/test/integration/tenant-quota.test.js',
  'dist/test/node/vector-search.test.js',
];

const all = fs.globSync('dist/test/**/*.test.js').sort();
const common = { timeout: 20000, forbidOnly: Boolean(process.env.CI), exit: true };
const passes = {
  parallel: {
    ...common,
    spec: [
      ...LONGEST.filter((file) => all.includes(file)),
      ...all.filter((f) => !LONGEST.includes(f) && !ALONE.includes(f)),
    ],
    parallel: true,
    jobs: 2,
  },
  alone: { ...common, spec: ALONE },
};
const pass = process.env.FENEC_TESTS;
if (pass !== undefined && !(pass in passes)) throw new Error(`FENEC_TESTS takes parallel or alone, not "${pass}"`);
module.exports = pass === undefined ? { ...common, spec: ['dist/test/**/*.test.js'] } : passes[pass];
