/**
 * The bare node:http server the benches measure fenecdb beside: it reads a request's body, parses it as JSON and
 * answers the JSON `answer` makes of it, in a process of its own, as fenec-server runs in its own. Logs
 * `{"msg":"listening","url":…}` on stderr once listening, as the programs it stands beside log it (bench/harness.ts
 * waits for that line).
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

export function serveJson(answer: (request: unknown) => unknown): void {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.stringify(answer(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    process.stderr.write(
      `${JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`,
    );
  });
}
