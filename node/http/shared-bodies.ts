/**
 * Shared memory for large request bodies (see handler.ts), kept once a request is answered for the
 * bodies that follow. Memory taken from the system costs a page fault for each page at its first
 * touch — on a virtual machine tens of microseconds a page, 5–6 ms a megabyte — and a load sends
 * batch after batch of the same size: reused, a buffer's pages are already there.
 */

/** The most bytes kept for reuse; past it a buffer is left to the garbage collector. */
const HELD_BYTES = 16 * 1024 * 1024;

export class SharedBodies {
  readonly #free = new Map<number, SharedArrayBuffer[]>();
  readonly #maxBytes: number;
  #held = 0;

  /** `maxBytes`: the largest body taken (--max-body); no buffer is made larger. */
  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /** Memory for a body of up to `bytes` bytes (at most the largest body), reused when one of its size class is free. */
  take(bytes: number): Uint8Array {
    const size = Math.min(this.#maxBytes, 2 ** Math.ceil(Math.log2(Math.max(1, bytes))));
    const reused = this.#free.get(size)?.pop();
    if (reused === undefined) return new Uint8Array(new SharedArrayBuffer(size));
    this.#held -= size;
    return new Uint8Array(reused);
  }

  /** Gives back the memory of a body taken here, once nothing reads it any more (its request answered). */
  give(body: Uint8Array): void {
    const buffer = body.buffer;
    if (!(buffer instanceof SharedArrayBuffer) || this.#held + buffer.byteLength > HELD_BYTES) return;
    const free = this.#free.get(buffer.byteLength);
    if (free === undefined) this.#free.set(buffer.byteLength, [buffer]);
    else free.push(buffer);
    this.#held += buffer.byteLength;
  }
}
