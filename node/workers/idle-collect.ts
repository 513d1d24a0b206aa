/**
 * A memory-reducing collection of this thread's V8 heap once it has been idle for a second after work that grew it.
 *
 * V8 keeps what a burst of work made it commit — a load's statements, parse trees and rows grow the heap to
 * hundreds of megabytes, and its pool of freed pages — and gives it back only at a collection that reduces memory,
 * which an idle process never has: after a 5 000-row load a one-file server held 250 MB where 50 MB were live, and 30 s
 * of quiet changed nothing. One collection then (tens of milliseconds, on a thread with nothing to do) gives it back.
 *
 * It needs `gc`, which Node.js gives with --expose-gc (fenec-server's #! line); without it nothing is done.
 */
import { getHeapStatistics } from 'node:v8';
import { QuietTimer } from '../../shared/quiet-timer.js';

/** How long the thread must have had nothing to do. */
const IDLE_MS = 1_000;
/** How much the heap must have grown since the last collection for another to be worth its time. */
const GROWTH_BYTES = 32 * 2 ** 20;

type Collect = (options: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => Promise<void>;

export class IdleCollector {
  readonly #collect = (globalThis as { gc?: Collect }).gc;
  readonly #quiet = new QuietTimer(IDLE_MS, () => this.#collected());
  /** The heap's committed bytes after the last collection. */
  #after = committed();

  /** Work came: the quiet second starts again from now. */
  busy(): void {
    if (this.#collect !== undefined) this.#quiet.busy();
  }

  #collected(): void {
    if (committed() - this.#after < GROWTH_BYTES) return;
    void this.#collect!({ type: 'major', execution: 'async', flavor: 'last-resort' }).then(() => {
      this.#after = committed();
    });
  }
}

function committed(): number {
  return getHeapStatistics().total_heap_size;
}
