/**
 * The router bench's floor for a hop: a bare node:http proxy doing the least a proxy can do — each request sent
 * on to one upstream (env BARE_UPSTREAM, `http://host:port`) with its method, path and headers over kept-alive
 * connections, the body piped there and the answer piped back — in a process of its own, as fenec-router runs in
 * its own. No auth, no routing, no trace, no metric. Logs `{"msg":"listening","url":…}` on stderr once listening
 * (bench/harness.ts waits for that line).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

const upstream = new URL(process.env.BARE_UPSTREAM ?? 'http://127.0.0.1:8080');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64, maxFreeSockets: 64 });

const server = http.createServer((req, res) => {
  const forward = http.request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: req.headers,
      agent,
    },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  forward.on('error', () => {
    res.writeHead(502);
    res.end();
  });
  req.pipe(forward);
});
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stderr.write(
    `${JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`,
  );
});
