/**
 * A bystander for `make isolation-bench`: a Node.js process on the same cores, at the server's priority, that does
 * nothing but a 1 ms timer. Its own event-loop delay, read beside the serving thread's in each phase, is what the
 * machine alone does to a thread that wants a core now and then: a stall both see at once is the machine's (another
 * guest on the host, the cores oversubscribed), one the serving thread alone sees is the server's.
 *
 * `GET /` answers `{"maxMs":…}`, the largest delay since the last read, and starts a new window. Logs
 * `{"msg":"listening","url":…}` on stderr once listening (bench/harness.ts waits for that line).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();

const server = http.createServer((_req, res) => {
  const body = JSON.stringify({ maxMs: histogram.count === 0 ? 0 : histogram.max / 1e6 });
  histogram.reset();
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
});
server.listen(0, '127.0.0.1', () => {
  process.stderr.write(
    `${JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`,
  );
});
