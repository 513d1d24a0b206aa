/**
 * The progress of a long command on stderr: on a terminal a bar redrawn in place (rows, rows per
 * second, and the time left when the total is known); otherwise a plain line every few seconds, for
 * logs.
 */

export interface ProgressOptions {
  /** Where lines go: stderr. */
  readonly write: (text: string) => void;
  /** Redraw in place (a terminal), or print lines. */
  readonly tty: boolean;
  /** Bytes of the whole input when known (a file), for the bar and the time left. */
  readonly totalBytes?: number;
  /** Milliseconds between plain lines. */
  readonly lineEveryMs?: number;
  readonly now?: () => number;
}

const BAR = 24;
const REDRAW_MS = 100;

/** 1234567 as "1 234 567". */
export function figure(n: number): string {
  return Math.round(n)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
}

/** Seconds as "42 s" or "3 min 07 s". */
export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

export class Progress {
  readonly #options: ProgressOptions;
  readonly #now: () => number;
  readonly #start: number;
  #last = -Infinity;
  #drawn = false;

  constructor(options: ProgressOptions) {
    this.#options = options;
    this.#now = options.now ?? (() => performance.now());
    this.#start = this.#now();
  }

  /** Seconds since the start. */
  get elapsed(): number {
    return (this.#now() - this.#start) / 1000;
  }

  /** Rows done so far and bytes of the input read; drawn when it is time to. */
  update(rows: number, bytes: number, label = 'rows'): void {
    const now = this.#now();
    const every = this.#options.tty ? REDRAW_MS : (this.#options.lineEveryMs ?? 2000);
    if (now - this.#last < every) return;
    this.#last = now;
    const seconds = (now - this.#start) / 1000;
    const rate = seconds > 0 ? rows / seconds : 0;
    const total = this.#options.totalBytes;
    const share = total !== undefined && total > 0 ? Math.min(1, bytes / total) : undefined;
    const left = share !== undefined && share > 0 ? (seconds * (1 - share)) / share : undefined;
    const parts = [`${figure(rows)} ${label}`, `${figure(rate)} ${label}/s`];
    if (left !== undefined) parts.push(`ETA ${duration(left)}`);
    if (this.#options.tty) {
      const bar = share === undefined ? '' : `[${'#'.repeat(Math.round(share * BAR)).padEnd(BAR, '.')}] `;
      this.#options.write(`\r${bar}${parts.join('  ')}\u001b[K`);
      this.#drawn = true;
    } else {
      this.#options.write(`${parts.join(', ')}\n`);
    }
  }

  /** A count alone (no rate, no bar): what is left of work the command waits for. */
  left(count: number, label: string): void {
    const now = this.#now();
    if (now - this.#last < (this.#options.tty ? REDRAW_MS : (this.#options.lineEveryMs ?? 2000))) return;
    this.#last = now;
    if (this.#options.tty) {
      this.#options.write(`\r${figure(count)} ${label}\u001b[K`);
      this.#drawn = true;
    } else {
      this.#options.write(`${figure(count)} ${label}\n`);
    }
  }

  /** Ends the bar's line (a terminal), so that what follows starts on its own. */
  finish(): void {
    if (this.#drawn) this.#options.write('\n');
    this.#drawn = false;
  }
}
