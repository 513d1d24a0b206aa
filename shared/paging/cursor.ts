/**
 * Cursors: where a read left off, handed to the caller as an opaque string and taken back to
 * continue. A cursor is signed (HMAC-SHA256, keyed by the server's secret) and bound to the read it
 * continues (a hash of its statement, without limit, offset or select, and its values) and to who was
 * answered it (a hash of the token's subject): it cannot be made, changed, or used by another token or
 * for another read. It holds a position, not a page: the keys of the last row answered (see pager.ts).
 *
 * The secret comes from the server's config, never from a global: a server started again, or a tenant
 * moved to another node, has another one, and its old cursors are refused as expired.
 */
import { hash as digest, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { FenecError } from '../errors.js';

/** How long a cursor is taken after it was made. */
export const CURSOR_TTL_MS = 24 * 60 * 60 * 1000;
/** The longest string taken as a cursor: one is some 140 bytes, and a row's keys add their own. */
export const MAX_CURSOR_LENGTH = 8192;

/** Where a read left off: after the last row answered. */
export interface Position {
  /**
   * The last row's values of the read's keys — its `order` fields, then id unless order names it — in order (none for a
   * ranked read).
   */
  readonly keys: readonly unknown[];
  /** The last row's `_score`, for a ranked read (`match`, `near`) without `order`. */
  readonly score?: number;
  readonly id: number;
  /** The highest id when the walk began: rows inserted since are not part of it. */
  readonly through: number;
  /** Rows answered so far, by every page before. */
  readonly answered: number;
}

/** What a cursor is bound to: the read (its kind and canonical form) and who reads. */
export interface Binding {
  /** `query`, `search`, `recall` (the MCP tools) or `/query`. */
  readonly scope: string;
  /** The read's canonical form (pager.ts: its statement without limit, offset and select, and its values). */
  readonly read: string;
  /** Who was answered: `server`, or the token's issuer, tenant and subject. */
  readonly subject: string;
}

/**
 * A cursor is `c2.` and the base64url of its signed bytes and their MAC (the first 16 bytes of HMAC-SHA256 over
 * them). The signed bytes, numbers little-endian float64:
 *
 *     0   the format (2)
 *     1   the secret's fingerprint, 6 bytes: a cursor of another secret is expired, not forged
 *     7   the read's digest (SHA-256 of scope, NUL, read), its first 18 bytes
 *     25  the subject's digest (SHA-256), its first 18 bytes
 *     43  when it was made, in seconds
 *     51  flags: 1 when the position has a score
 *     52  the score (0 without), the id, through, answered
 *     84  the keys as JSON, when there are any (none for a ranked read)
 *
 * Binary rather than JSON: made in a serving process, the JSON payload's text and its base64 took some 15 µs of a
 * cursor's 45 (make match-bench's server). A cursor of the first format (`c1.`, JSON) is refused as not one this
 * server made.
 */
const PREFIX = 'c2.';
const FORMAT = 2;
const KEY_AT = 1;
const KEY_BYTES = 6;
const READ_AT = KEY_AT + KEY_BYTES;
/** 144 bits of each digest: the first format kept 132 (22 base64url characters). */
const DIGEST_BYTES = 18;
const SUBJECT_AT = READ_AT + DIGEST_BYTES;
const TIME_AT = SUBJECT_AT + DIGEST_BYTES;
const FLAGS_AT = TIME_AT + 8;
const SCORE_AT = FLAGS_AT + 1;
const ID_AT = SCORE_AT + 8;
const THROUGH_AT = ID_AT + 8;
const ANSWERED_AT = THROUGH_AT + 8;
const KEYS_AT = ANSWERED_AT + 8;
const HAS_SCORE = 1;
const MAC_BYTES = 16;
/** Subjects whose digest is kept: a token's subject is the same on every page it reads. */
const SUBJECTS_KEPT = 1024;

/** SHA-256's block: HMAC pads its key to it. */
const BLOCK = 64;

/**
 * HMAC-SHA256 (RFC 2104) by one-shot hashes over the key's two pads, made once: H(key ^ opad, H(key ^ ipad, m)).
 * The same bytes as createHmac('sha256', key) (test/shared/paging/cursor-mac.test.ts).
 */
export function hmacSha256(key: Uint8Array): (message: string | Uint8Array) => Buffer {
  const signer = new Signer(key);
  return (message) => signer.mac(message);
}

/**
 * HMAC-SHA256 of bytes written after the inner pad, in a buffer that holds the pad: no copy of the message. A cursor
 * is made and checked in one synchronous call, so one buffer serves every one that fits it.
 */
class Signer {
  readonly #inner: Buffer;
  /** The outer pad, then the inner digest. */
  readonly #outer: Buffer;
  #scratch: Buffer;

  constructor(key: Uint8Array) {
    const block = Buffer.alloc(BLOCK);
    block.set(key.length > BLOCK ? digest('sha256', key, 'buffer') : key);
    this.#inner = Buffer.from(block.map((b) => b ^ 0x36));
    this.#outer = Buffer.alloc(BLOCK + 32);
    this.#outer.set(block.map((b) => b ^ 0x5c));
    this.#scratch = this.#alloc(512);
  }

  /** A buffer whose bytes from BLOCK on take a message of `length` bytes and its MAC after it. */
  room(length: number): Buffer {
    if (BLOCK + length + MAC_BYTES > this.#scratch.length) this.#scratch = this.#alloc(2 * (length + MAC_BYTES));
    return this.#scratch;
  }

  /** The HMAC of the `length` bytes written at BLOCK in `room(length)`'s buffer. */
  sign(room: Buffer, length: number): Buffer {
    this.#outer.set(digest('sha256', room.subarray(0, BLOCK + length), 'buffer'), BLOCK);
    return digest('sha256', this.#outer, 'buffer');
  }

  /** The HMAC of a message given whole (copied into the room). */
  mac(message: string | Uint8Array): Buffer {
    const bytes = Buffer.from(message);
    const room = this.room(bytes.length);
    room.set(bytes, BLOCK);
    return this.sign(room, bytes.length);
  }

  #alloc(bytes: number): Buffer {
    const buffer = Buffer.alloc(BLOCK + bytes);
    buffer.set(this.#inner);
    return buffer;
  }
}

export class CursorKeeper {
  readonly #signer: Signer;
  readonly #fingerprint: Buffer;
  readonly #now: () => number;
  readonly #subjects = new LRUCache<string, Buffer>({ max: SUBJECTS_KEPT });
  #lastRead: { readonly binding: Binding; readonly digest: Buffer } | undefined;

  /** `secret`: at least 32 random bytes, the server's own (config's cursorSecret). */
  constructor(secret: Uint8Array, now: () => number = Date.now) {
    if (secret.length < 32) throw new Error('a cursor secret takes at least 32 bytes');
    this.#signer = new Signer(secret);
    this.#fingerprint = this.#signer.mac('fenecdb cursor key').subarray(0, KEY_BYTES);
    this.#now = now;
  }

  /** A cursor continuing `binding`'s read after `position`. */
  issue(binding: Binding, position: Position): string {
    const keys = position.keys.length === 0 ? '' : JSON.stringify(position.keys);
    const length = KEYS_AT + Buffer.byteLength(keys);
    const room = this.#signer.room(length);
    const bytes = room.subarray(BLOCK, BLOCK + length);
    bytes[0] = FORMAT;
    bytes.set(this.#fingerprint, KEY_AT);
    bytes.set(this.#read(binding), READ_AT);
    bytes.set(this.#subject(binding.subject), SUBJECT_AT);
    bytes.writeDoubleLE(Math.floor(this.#now() / 1000), TIME_AT);
    bytes[FLAGS_AT] = position.score === undefined ? 0 : HAS_SCORE;
    bytes.writeDoubleLE(position.score ?? 0, SCORE_AT);
    bytes.writeDoubleLE(position.id, ID_AT);
    bytes.writeDoubleLE(position.through, THROUGH_AT);
    bytes.writeDoubleLE(position.answered, ANSWERED_AT);
    if (keys !== '') bytes.write(keys, KEYS_AT, 'utf8');
    room.set(this.#signer.sign(room, length).subarray(0, MAC_BYTES), BLOCK + length);
    return PREFIX + room.toString('base64url', BLOCK, BLOCK + length + MAC_BYTES);
  }

  /**
   * The position a cursor holds, once it is shown to be this server's, for this read, by this caller,
   * and not expired.
   *
   * @throws FenecError `invalid_cursor` (not a cursor this server made, or altered), `expired_cursor`
   *   (made before a restart, or more than 24 h ago), `foreign_cursor` (answered to another token),
   *   `cursor_mismatch` (made for another read).
   */
  read(cursor: string, binding: Binding): Position {
    if (cursor.length > MAX_CURSOR_LENGTH || !cursor.startsWith(PREFIX)) throw invalid();
    const text = cursor.slice(PREFIX.length);
    const given = Buffer.from(text, 'base64url');
    // Buffer.from skips what is not base64url: only the one text of these bytes is theirs.
    const length = given.length - MAC_BYTES;
    if (length < KEYS_AT || given[0] !== FORMAT || given.toString('base64url') !== text) throw invalid();
    if (!given.subarray(KEY_AT, KEY_AT + KEY_BYTES).equals(this.#fingerprint)) {
      throw new FenecError(
        'expired_cursor',
        'the cursor was made by this server before it started again (or by another server); a cursor lives as long as the server that made it',
        {
          hint: 'start the walk again: the same call without cursor',
        },
      );
    }
    const room = this.#signer.room(length);
    room.set(given.subarray(0, length), BLOCK);
    if (!timingSafeEqual(this.#signer.sign(room, length).subarray(0, MAC_BYTES), given.subarray(length)))
      throw invalid();
    const bytes = given.subarray(0, length);
    if (!bytes.subarray(SUBJECT_AT, SUBJECT_AT + DIGEST_BYTES).equals(this.#subject(binding.subject))) {
      throw new FenecError(
        'foreign_cursor',
        'the cursor was answered to another token; a cursor continues a read for the token it was answered to, and no other',
        {
          hint: 'start the walk with this token: the same call without cursor',
        },
      );
    }
    if (!bytes.subarray(READ_AT, READ_AT + DIGEST_BYTES).equals(this.#read(binding))) {
      throw new FenecError(
        'cursor_mismatch',
        `the cursor continues another read than this ${binding.scope === '/query' ? 'statement' : `${binding.scope} call`}; pass it with the arguments it was answered to (limit and the fields answered may change)`,
        {
          hint: 'repeat the call that answered this cursor, with cursor added; or leave cursor out to start a new walk',
        },
      );
    }
    const made = bytes.readDoubleLE(TIME_AT);
    if (!Number.isSafeInteger(made)) throw invalid();
    if (this.#now() - made * 1000 > CURSOR_TTL_MS) {
      throw new FenecError('expired_cursor', 'the cursor is more than 24 hours old', {
        hint: 'start the walk again: the same call without cursor',
      });
    }
    return position(bytes);
  }

  /**
   * The read's digest. A page that continues a walk checks its cursor and makes the next one with the same binding
   * (pager.ts): the digest of the last binding is kept for it.
   */
  #read(binding: Binding): Buffer {
    if (this.#lastRead?.binding !== binding) this.#lastRead = { binding, digest: readDigest(binding) };
    return this.#lastRead.digest;
  }

  /** The subject's digest, worked out once for each of the last subjects seen. */
  #subject(subject: string): Buffer {
    let kept = this.#subjects.get(subject);
    if (kept === undefined) {
      kept = digest('sha256', subject, 'buffer').subarray(0, DIGEST_BYTES);
      this.#subjects.set(subject, kept);
    }
    return kept;
  }
}

function readDigest(binding: Binding): Buffer {
  return digest('sha256', `${binding.scope}\u0000${binding.read}`, 'buffer').subarray(0, DIGEST_BYTES);
}

function invalid(): FenecError {
  return new FenecError(
    'invalid_cursor',
    'the cursor is not one this server made, or it was altered; pass next_cursor exactly as it was answered',
    {
      hint: 'leave cursor out to start from the first row',
    },
  );
}

/** A signed position is ours; its shape is checked all the same, as a fault would otherwise be a 500. */
function position(bytes: Buffer): Position {
  const flags = bytes[FLAGS_AT]!;
  const score = bytes.readDoubleLE(SCORE_AT);
  const id = bytes.readDoubleLE(ID_AT);
  const through = bytes.readDoubleLE(THROUGH_AT);
  const answered = bytes.readDoubleLE(ANSWERED_AT);
  let keys: unknown = [];
  if (bytes.length > KEYS_AT) {
    try {
      keys = JSON.parse(bytes.toString('utf8', KEYS_AT));
    } catch {
      throw invalid();
    }
  }
  const int = (n: number) => Number.isSafeInteger(n);
  // A score that is not finite is refused, as the first format's JSON held it as null.
  if (
    !Array.isArray(keys) ||
    (flags !== 0 && flags !== HAS_SCORE) ||
    (flags === HAS_SCORE && !Number.isFinite(score)) ||
    !int(id) ||
    !int(through) ||
    !int(answered)
  ) {
    throw invalid();
  }
  return flags === HAS_SCORE ? { keys, score, id, through, answered } : { keys, id, through, answered };
}

/**
 * Who a cursor is answered to: `server` for the server's token (and a process over its own file), or a
 * JSON Web Token's issuer, tenant and subject — the same person with a new token keeps their cursors.
 */
export function cursorSubject(claims: Readonly<Record<string, unknown>> | undefined): string {
  return claims === undefined
    ? 'server'
    : `jwt:${JSON.stringify([claims.iss ?? null, claims.tenant ?? null, claims.sub ?? null])}`;
}
