/**
 * A file's committed changes as SQLite wrote them: the pages of each commit, read from the write-ahead log right
 * after it, and put back onto a copy of the file elsewhere. What replication ships (node/replication): every page
 * the file holds goes through the log, so a copy that takes every change in order is the file, byte for byte, with
 * no second implementation of what a statement writes.
 *
 * The log only holds what was not checkpointed yet: the connections of a replicated file never checkpoint on their
 * own (`wal_autocheckpoint = 0`, sqlite.ts); its owner checkpoints after it has taken the pages (`checkpointed`).
 *
 * The write-ahead log's layout (sqlite.org/fileformat2.html#walformat): a 32-byte header (page size at 8, the salts
 * at 16 and 20), then frames of a 24-byte header (page number, the file's size in pages after a commit frame or 0,
 * the salts) and the page. Frames after the last commit frame, or with the salts of an earlier log, are not
 * committed (a transaction rolled back, or the log restarted) and are left out.
 *
 * A change crosses the network compressed (`packChange`): a one-row insert writes two or three whole pages, mostly
 * empty or unchanged, 8 KB that brotli at its lowest quality makes a few hundred bytes in well under 0.1 ms. Its
 * first byte names its format: 1, brotli of the encoding; 0, the encoding itself (whose first byte, of a page
 * size at most 65536, is always 0), as every change was before and a whole file still is.
 */
import * as fs from 'node:fs';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';

const WAL_HEADER = 32;
const FRAME_HEADER = 24;
const RAW = 0;
const BROTLI = 1;

/** One or more commits' pages, merged (a page's last image): what a copy writes to become the file after them. */
export interface Change {
  readonly pageSize: number;
  /** The file's size in pages after the last commit. */
  readonly pages: number;
  /** Page number (1-based) and its image. */
  readonly images: ReadonlyMap<number, Uint8Array>;
}

export class WalTail {
  readonly #wal: string;
  /** Where the first frame not taken yet begins (0: the log's header not read yet). */
  #offset = 0;
  #salts = [0, 0];
  #pageSize = 0;

  constructor(file: string) {
    this.#wal = `${file}-wal`;
  }

  /** Bytes of the log taken so far: past a bound, its owner checkpoints. */
  get taken(): number {
    return this.#offset;
  }

  /** The pages of the commits since the last call (packed, see `packChange`), or undefined when none. */
  take(): Uint8Array | undefined {
    let fd: number;
    try {
      fd = fs.openSync(this.#wal, 'r');
    } catch {
      return undefined; // no log: nothing written since the file was opened or last checkpointed
    }
    try {
      return this.#read(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** The log was checkpointed and truncated: the next commit begins it anew. */
  checkpointed(): void {
    this.#offset = 0;
  }

  #read(fd: number): Uint8Array | undefined {
    const size = fs.fstatSync(fd).size;
    if (size < WAL_HEADER) return undefined;
    const header = Buffer.alloc(WAL_HEADER);
    fs.readSync(fd, header, 0, WAL_HEADER, 0);
    const salts = [header.readUInt32BE(16), header.readUInt32BE(20)];
    // A log begun anew (after a checkpoint) has new salts: its frames start again after the header.
    if (this.#offset === 0 || salts[0] !== this.#salts[0] || salts[1] !== this.#salts[1]) {
      this.#offset = WAL_HEADER;
      this.#salts = salts;
      this.#pageSize = header.readUInt32BE(8);
    }
    const frame = FRAME_HEADER + this.#pageSize;
    const count = Math.floor((size - this.#offset) / frame);
    if (count === 0) return undefined;
    const frames = Buffer.alloc(count * frame);
    fs.readSync(fd, frames, 0, frames.length, this.#offset);
    const images = new Map<number, Uint8Array>();
    const uncommitted = new Map<number, Uint8Array>();
    let pages = 0;
    let end = 0;
    for (let at = 0; at + frame <= frames.length; at += frame) {
      if (frames.readUInt32BE(at + 8) !== salts[0] || frames.readUInt32BE(at + 12) !== salts[1]) break;
      uncommitted.set(frames.readUInt32BE(at), frames.subarray(at + FRAME_HEADER, at + frame));
      const commit = frames.readUInt32BE(at + 4);
      if (commit === 0) continue;
      for (const [page, image] of uncommitted) images.set(page, image);
      uncommitted.clear();
      pages = commit;
      end = at + frame;
    }
    if (end === 0) return undefined;
    this.#offset += end;
    return packChange(encodeChange({ pageSize: this.#pageSize, pages, images }));
  }
}

/** A change as bytes: page size, pages, count, then each page's number and image (big-endian 32-bit numbers). */
export function encodeChange(change: Change): Uint8Array {
  const kept = [...change.images].filter(([page]) => page <= change.pages);
  const out = Buffer.alloc(12 + kept.length * (4 + change.pageSize));
  out.writeUInt32BE(change.pageSize, 0);
  out.writeUInt32BE(change.pages, 4);
  out.writeUInt32BE(kept.length, 8);
  let at = 12;
  for (const [page, image] of kept) {
    out.writeUInt32BE(page, at);
    out.set(image, at + 4);
    at += 4 + change.pageSize;
  }
  return out;
}

/** An encoded change as the log carries it: compressed, behind its format byte (see the head comment). */
export function packChange(encoded: Uint8Array): Uint8Array {
  const packed = zlib.brotliCompressSync(encoded, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: encoded.length },
  });
  // A buffer of its own: the worker moves it to the serving thread, and a pooled one would move its neighbours too.
  const out = new Uint8Array(1 + packed.length);
  out[0] = BROTLI;
  out.set(packed, 1);
  return out;
}

/** A change as the log holds it (either format) back to its encoding; a compressed one on libuv's threads. */
async function unpackChange(bytes: Uint8Array): Promise<Buffer> {
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (data.length > 0 && data[0] === RAW) return data;
  if (data.length > 0 && data[0] === BROTLI) return brotliDecompress(data.subarray(1));
  throw new Error(`a change of format ${data[0]} is not one this fenecdb reads (a newer one wrote it)`);
}

const brotliDecompress = promisify(zlib.brotliDecompress);
/** Pages written by one writev at most (under every system's IOV_MAX). */
const RUN_PAGES = 512;

/**
 * A closed copy of a file (made when missing) taking changes (packed or only encoded) in order: each one's pages
 * written, the size set. Synced once, at `close`: a catch-up of N changes costs one fsync, not N — the copy is not
 * served before it closes, and a copy a crash cuts short is never trusted (it has no `.seq`: replicas.ts).
 *
 * Everything it does waits on libuv's threads, never on the serving thread: a warm standby applies its tenants'
 * changes as they are written (a batch's change is megabytes of pages), beside the requests it serves.
 */
export class FileCopy {
  readonly #handle: fs.promises.FileHandle;

  private constructor(handle: fs.promises.FileHandle) {
    this.#handle = handle;
  }

  static async open(file: string): Promise<FileCopy> {
    return new FileCopy(await fs.promises.open(file, fs.existsSync(file) ? 'r+' : 'w+'));
  }

  async apply(bytes: Uint8Array): Promise<void> {
    const data = await unpackChange(bytes);
    const pageSize = data.readUInt32BE(0);
    const pages = data.readUInt32BE(4);
    const count = data.readUInt32BE(8);
    if (data.length !== 12 + count * (4 + pageSize)) throw new Error(`a change of ${data.length} bytes is not whole`);
    const images: { page: number; image: Buffer }[] = [];
    for (let i = 0, at = 12; i < count; i++, at += 4 + pageSize) {
      images.push({ page: data.readUInt32BE(at), image: data.subarray(at + 4, at + 4 + pageSize) });
    }
    images.sort((x, y) => x.page - y.page);
    // Pages that follow one another go in one write.
    for (let i = 0; i < images.length;) {
      let end = i + 1;
      while (end < images.length && end - i < RUN_PAGES && images[end]!.page === images[end - 1]!.page + 1) end++;
      await this.#handle.writev(
        images.slice(i, end).map((x) => x.image),
        (images[i]!.page - 1) * pageSize,
      );
      i = end;
    }
    await this.#handle.truncate(pages * pageSize);
  }

  /** Synced (when `sync`, as after changes that all went in) and closed. */
  async close(sync = true): Promise<void> {
    try {
      if (sync) await this.#handle.sync();
    } finally {
      await this.#handle.close();
    }
  }
}

/** Applies one change to a closed copy of a file (made when missing), synced. */
export async function applyChange(file: string, bytes: Uint8Array): Promise<void> {
  const copy = await FileCopy.open(file);
  let whole = false;
  try {
    await copy.apply(bytes);
    whole = true;
  } finally {
    await copy.close(whole);
  }
}

/** Applies changes read in order (`read` awaits `each` with every one) to a closed copy, with one sync at the end. */
export async function applyChanges(
  file: string,
  read: (each: (bytes: Uint8Array) => Promise<void>) => Promise<void>,
): Promise<number> {
  let copy: FileCopy | undefined;
  let applied = 0;
  let whole = false;
  try {
    await read(async (bytes) => {
      copy ??= await FileCopy.open(file);
      await copy.apply(bytes);
      applied += 1;
    });
    whole = true;
  } finally {
    await copy?.close(whole);
  }
  return applied;
}

/** A closed file's every page as one change: what a copy applies to become it (a restored tenant's first change). */
export function wholeFile(file: string): Uint8Array {
  const data = fs.readFileSync(file);
  const stated = data.length >= 18 ? data.readUInt16BE(16) : 0;
  const pageSize = stated === 1 ? 65536 : stated;
  if (pageSize < 512 || data.length % pageSize !== 0) throw new Error(`${file} is not a whole SQLite file`);
  const images = new Map<number, Uint8Array>();
  for (let page = 1; page * pageSize <= data.length; page++)
    images.set(page, data.subarray((page - 1) * pageSize, page * pageSize));
  return encodeChange({ pageSize, pages: data.length / pageSize, images });
}
