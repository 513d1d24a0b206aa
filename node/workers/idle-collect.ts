/**
 * What a thread gives back once it has been idle for a second after work: a memory-reducing collection of its V8
 * heap when the work grew it, then the C allocator's free pages.
 *
 * V8 keeps what a burst of work made it commit — a load's statements, parse trees and rows grow the heap to
 * hundreds of megabytes, and its pool of freed pages — and gives it back only at a collection that reduces memory,
 * which an idle process never has: after a 5 000-row load a one-file server held 250 MB where 50 MB were live, and 30 s
 * of quiet changed nothing. One collection then (tens of milliseconds, on a thread with nothing to do) gives it back.
 * glibc's malloc does the same with what SQLite, the statements and the index jobs freed, until malloc_trim
 * (node/vector/faiss.ts's releaseFreeMemory, on one of libuv's threads).
 *
 * The collection needs `gc`, which Node.js gives with --expose-gc (fenec-server's and fenec's #! lines); without it
 * only the allocator's pages are given back.
 */
import { getHeapStatistics } from 'node:v8';
import { QuietTimer } from '../../shared/quiet-timer.js';
import { releaseFreeMemory } from '../vector/faiss.js';

/** How long the thread must have had nothing to do. */
const IDLE_MS = 1_000;
/** How much the heap must have grown since the last collection for another to be worth its time. */
const GROWTH_BYTES = 32 * 2 ** 20;

type Collect = (options: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => Promise<void>;

export class IdleCollector {
  readonly #collect = (globalThis as { gc?: Collect }).gc;
  readonly #quiet = new QuietTimer(IDLE_MS, () => void this.#giveBack());
  /** The heap's committed bytes, and the buffers outside it, after the last collection. */
  #after = committed();
  /** Background work dropped what only a collection frees, whatever the heap's growth. */
  #dropped = false;

  /** Work came: the quiet second starts again from now. */
  busy(): void {
    this.#quiet.busy();
  }

  /**
   * Background work let go of buffers the size of an index (a snapshot's serialized bytes, once stored): the next
   * quiet second collects. It ends after the requests that started it, often after the collection their quiet
   * second made — which then found the bytes still held, and nothing would collect them after (at 50 000 × 384,
   * an 86 MB buffer and 100 MB of V8's pages kept).
   */
  dropped(): void {
    this.#dropped = true;
    this.#quiet.busy();
  }

  async #giveBack(): Promise<void> {
    if (this.#collect !== undefined && (this.#dropped || committed() - this.#after >= GROWTH_BYTES)) {
      this.#dropped = false;
      await this.#collect({ type: 'major', execution: 'async', flavor: 'last-resort' });
      this.#after = committed();
    }
    // After the collection: the buffers it freed (a serialized index, rows read) are the allocator's to give back.
    await releaseFreeMemory();
  }
}

function committed(): number {
  const heap = getHeapStatistics();
  return heap.total_heap_size + heap.external_memory;
}
