/**
 * Raw FTS5 behind a bare node:http server (bench/json-server.ts, as bench/bare-server.ts): raw FTS5's top 10 with
 * each row's text, snippet() and score (bench/search-raw.ts, rawMatchSnippet) on the file in env RAW_FILE, for the
 * words of the request's `params[0]`, its rows answered as JSON. make match-bench measures fenec-server's `match`
 * against it: the same query costs a serving process more than the bench's own, busy, process (bench/match-bench.ts,
 * why).
 */
import { openRawSqlite, rawMatchSnippet } from './search-raw.js';
import { serveJson } from './json-server.js';

const K = 10;
const db = openRawSqlite(process.env.RAW_FILE ?? '');
const query = db.prepare(rawMatchSnippet(K)).raw(true);

serveJson((request) => {
  const { params } = request as { params: [string] };
  const [a, b] = params[0].split(' ');
  const rows = (query.all(`"${a}" OR "${b}"`) as [number, string, string, number][]).map(
    ([id, body, snippet, bm25]) => ({ id, body, snippet, _score: -bm25 }),
  );
  return { rows, count: rows.length };
});
