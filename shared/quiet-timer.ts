/**
 * Calls `quiet` once `ms` have passed since the last `busy()`, with one timer armed at most (unref'd: it never keeps
 * a thread alive) and none while nothing is pending: a busy thread resets a time, not a timer, on each call.
 */
import { performance } from 'node:perf_hooks';

export class QuietTimer {
  /** performance.now() until which the thread counts as busy. */
  #until = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    readonly ms: number,
    readonly quiet: () => void,
  ) {}

  /** Whether a quiet moment is awaited (busy() was called and `quiet` has not run since). */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  busy(): void {
    this.#until = performance.now() + this.ms;
    this.#timer ??= setTimeout(this.#check, this.ms).unref();
  }

  readonly #check = (): void => {
    const left = this.#until - performance.now();
    if (left > 0) {
      this.#timer = setTimeout(this.#check, left).unref();
      return;
    }
    this.#timer = undefined;
    this.quiet();
  };
}
