/**
 * BM25 as fenecdb scores `match` (docs/fenecql.md, Scores), computed by hand: Lucene's (8 and later)
 * and Elasticsearch's, k1 = 1.2, b = 0.75.
 */
const K1 = 1.2;
const B = 0.75;

/** What one word adds to a row's score: N rows, n of them holding the word, tf times in this row of len words. */
export function bm25Term(N: number, n: number, tf: number, len: number, avglen: number): number {
  const idf = Math.log(1 + (N - n + 0.5) / (n + 0.5));
  return tf === 0 ? 0 : (idf * tf) / (tf + K1 * (1 - B + (B * len) / avglen));
}
