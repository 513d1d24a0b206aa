/**
 * A file of many rows and a statement that takes seconds over them: what the tests of statements on threads (the
 * time limit, SIGTERM, the cost quota, where a one-file server runs its statements) make a server work on.
 */
import { FenecDatabase } from '../../node/database.js';

/**
 * `lower` nested ten deep in each of thirty alternatives: three hundred calls of a function per row, none
 * matching — about 2 s over 30 000 rows on an idle machine, twice the longest time limit these tests set
 * (ten alternatives took 0.64 s once reads were memory-mapped, inside the SIGTERM test's 1 s).
 */
export const SLOW_FILTER = Array.from(
  { length: 30 },
  (_, i) => `${'lower('.repeat(10)}body${')'.repeat(10)} like "%never-${i}%"`,
).join(' or ');
export const SLOW_COUNT = `get big where ${SLOW_FILTER} count`;

/** A tenant file with `rows` rows in `big`, written before the node starts (the node adopts it at PUT). */
export function bigFile(file: string, rows: number): void {
  const db = FenecDatabase.open({ file, readOnly: false, program: 'workers-test', sweepIntervalMs: 0 });
  try {
    db.execute('create collection big (body text, n int @sorted)');
    for (let start = 0; start < rows; start += 1000) {
      const objects = Array.from(
        { length: Math.min(1000, rows - start) },
        (_, i) => `{body: "Row ${start + i} Of The Big Collection, Its Words Written In Capitals", n: ${start + i}}`,
      );
      db.execute(`insert into big [${objects.join(', ')}]`);
    }
  } finally {
    db.close();
  }
}
