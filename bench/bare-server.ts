/**
 * The bench's yardstick: a bare node:http server doing the least a JSON API can do — read the body,
 * parse it, answer a fixed row's JSON — in a process of its own, as fenec-server runs in its own.
 * Logs `{"msg":"listening","url":…}` on stderr once listening, as the programs it stands beside log it
 * (bench/harness.ts waits for that line). The row's answer comes in env BARE_ANSWER.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';

const answer: unknown = JSON.parse(process.env.BARE_ANSWER ?? '{}');

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const body = JSON.stringify(answer);
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
