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
import { FenecError } from '../errors.js';

/** How long a cursor is taken after it was made. */
export const CURSOR_TTL_MS = 24 * 60 * 60 * 1000;
/** The longest string taken as a cursor: one is some 150 bytes, and a row's keys add their own. */
export const MAX_CURSOR_LENGTH = 8192;
const VERSION = 'c1';
const MAC_BYTES = 16;

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

interface Payload {
  /** The secret's fingerprint: a cursor of another secret is expired, not forged. */
  readonly k: string;
  readonly r: string;
  readonly u: string;
  /** When it was made, in seconds. */
  readonly t: number;
  readonly p: Position;
}

// One-shot hashes, not createHash/createHmac objects: timed inside a serving process, making a cursor took 55 µs
// a request with the objects and 35 with these (6 µs either way in a loop), and a paged read makes one each page.
function hash(text: string): string {
  return digest('sha256', text, 'base64url').slice(0, 22);
}

/** SHA-256's block: HMAC pads its key to it. */
const BLOCK = 64;

/**
 * HMAC-SHA256 (RFC 2104) by one-shot hashes over the key's two pads, made once: H(key ^ opad, H(key ^ ipad, m)).
 * The same bytes as createHmac('sha256', key) (test/shared/paging/cursor-mac.test.ts).
 */
export function hmacSha256(key: Uint8Array): (message: string) => Buffer {
  const block = Buffer.alloc(BLOCK);
  block.set(key.length > BLOCK ? digest('sha256', key, 'buffer') : key);
  const inner = Buffer.from(block.map((b) => b ^ 0x36));
  const outer = Buffer.from(block.map((b) => b ^ 0x5c));
  return (message) =>
    digest(
      'sha256',
      Buffer.concat([outer, digest('sha256', Buffer.concat([inner, Buffer.from(message)]), 'buffer')]),
      'buffer',
    );
}

export class CursorKeeper {
  readonly #hmac: (message: string) => Buffer;
  readonly #fingerprint: string;
  readonly #now: () => number;

  /** `secret`: at least 32 random bytes, the server's own (config's cursorSecret). */
  constructor(secret: Uint8Array, now: () => number = Date.now) {
    if (secret.length < 32) throw new Error('a cursor secret takes at least 32 bytes');
    this.#hmac = hmacSha256(secret);
    this.#fingerprint = this.#hmac('fenecdb cursor key').toString('base64url').slice(0, 8);
    this.#now = now;
  }

  /** A cursor continuing `binding`'s read after `position`. */
  issue(binding: Binding, position: Position): string {
    const payload: Payload = {
      k: this.#fingerprint,
      r: hash(`${binding.scope}\u0000${binding.read}`),
      u: hash(binding.subject),
      t: Math.floor(this.#now() / 1000),
      p: position,
    };
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${VERSION}.${body}.${this.#mac(body)}`;
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
    const parts = cursor.length > MAX_CURSOR_LENGTH ? [] : cursor.split('.');
    if (parts.length !== 3 || parts[0] !== VERSION) throw invalid();
    const [, body, mac] = parts as [string, string, string];
    let payload: Payload;
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Payload;
    } catch {
      throw invalid();
    }
    if (typeof payload !== 'object' || payload === null || typeof payload.k !== 'string') throw invalid();
    if (payload.k !== this.#fingerprint) {
      throw new FenecError(
        'expired_cursor',
        'the cursor was made by this server before it started again (or by another server); a cursor lives as long as the server that made it',
        {
          hint: 'start the walk again: the same call without cursor',
        },
      );
    }
    const expected = Buffer.from(this.#mac(body));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
    if (payload.u !== hash(binding.subject)) {
      throw new FenecError(
        'foreign_cursor',
        'the cursor was answered to another token; a cursor continues a read for the token it was answered to, and no other',
        {
          hint: 'start the walk with this token: the same call without cursor',
        },
      );
    }
    if (payload.r !== hash(`${binding.scope}\u0000${binding.read}`)) {
      throw new FenecError(
        'cursor_mismatch',
        `the cursor continues another read than this ${binding.scope === '/query' ? 'statement' : `${binding.scope} call`}; pass it with the arguments it was answered to (limit and the fields answered may change)`,
        {
          hint: 'repeat the call that answered this cursor, with cursor added; or leave cursor out to start a new walk',
        },
      );
    }
    if (this.#now() - payload.t * 1000 > CURSOR_TTL_MS) {
      throw new FenecError('expired_cursor', 'the cursor is more than 24 hours old', {
        hint: 'start the walk again: the same call without cursor',
      });
    }
    return checkPosition(payload.p);
  }

  #mac(body: string): string {
    return this.#hmac(`${VERSION}.${body}`).subarray(0, MAC_BYTES).toString('base64url');
  }
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
function checkPosition(p: Position): Position {
  const int = (n: unknown) => Number.isSafeInteger(n);
  if (
    typeof p !== 'object' ||
    p === null ||
    !Array.isArray(p.keys) ||
    !int(p.id) ||
    !int(p.through) ||
    !int(p.answered) ||
    (p.score !== undefined && typeof p.score !== 'number')
  ) {
    throw invalid();
  }
  return p;
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
