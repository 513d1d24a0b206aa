/**
 * Raw FTS5 behind a bare node:http server: bench/bare-server.ts's request (the body read and parsed) and raw FTS5's
 * top 10 with each row's text, snippet() and score (bench/search-raw.ts, rawMatchSnippet) on the file in env RAW_FILE,
 * for the words of the request's `params[0]`, its rows answered as JSON. make match-bench measures fenec-server's
 * `match` against it: the same query costs a serving process more than the bench's own, busy, process
 * (bench/match-bench.ts, why). Logs `{"msg":"listening","url":…}` on stderr once listening.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { openRawSqlite, rawMatchSnippet } from './search-raw.js';

const K = 10;
const db = openRawSqlite(process.env.RAW_FILE ?? '');
const query = db.prepare(rawMatchSnippet(K)).raw(true);

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const { params } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { params: [string] };
    const [a, b] = params[0].split(' ');
    const rows = (query.all(`"${a}" OR "${b}"`) as [number, string, string, number][]).map(
      ([id, body, snippet, bm25]) => ({ id, body, snippet, _score: -bm25 }),
    );
    const body = JSON.stringify({ rows, count: rows.length });
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
