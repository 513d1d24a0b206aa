/**
 * Revoked tokens, kept in the `.fenec` file they reach (`_fenec_revocations`), so that a revocation
 * outlives a restart, moves with a tenant's file and is backed up with it. Two kinds: one token by its
 * `jti`, or every token of a `sub` issued up to the second of the revocation (a token minted after it
 * is taken again).
 *
 * The list is read into memory at open and kept there: asking costs a map lookup per request. The
 * process that writes the file holds its lock and is the only one that revokes, so its memory is the
 * file's truth; a server over the file `--read-only`, beside that writer, reads the table again when
 * the file changed (SQLite's data_version), at most every POLL_MS.
 */
import { FenecError } from '../../shared/errors.js';
import type { JwtClaims } from '../../shared/auth/jwt.js';
import { openReader, openWritable, type Connection } from './sqlite.js';

export type RevocationKind = 'jti' | 'sub';

export interface Revocation {
  readonly kind: RevocationKind;
  readonly value: string;
  /** When it was revoked, in ms since the epoch. */
  readonly at: number;
}

/** How stale a read-only server's list may be: well inside the second a revocation takes to reach every node. */
const POLL_MS = 250;
/** The longest jti or sub taken: no issuer of ours makes one longer (a minted jti is 22 characters). */
export const MAX_REVOKED_LENGTH = 512;

const TABLE = `CREATE TABLE IF NOT EXISTS _fenec_revocations (
  kind TEXT NOT NULL CHECK (kind IN ('jti', 'sub')), value TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (kind, value)
) STRICT`;

export class Revocations {
  readonly #db: Connection;
  readonly #readOnly: boolean;
  #jtis = new Map<string, number>();
  #subs = new Map<string, number>();
  #dataVersion = -1;
  #polled = 0;

  private constructor(db: Connection, readOnly: boolean) {
    this.#db = db;
    this.#readOnly = readOnly;
    if (!readOnly) db.exec(TABLE);
    this.#load();
  }

  /**
   * The revocations of a file: read and written by the process that holds its lock (a connection of its
   * own beside the database's), or read as they change (`readOnly`, beside a writer).
   *
   * @throws FenecError `cannot_open` when the file cannot be opened.
   */
  static open(file: string, readOnly: boolean, replicated = false): Revocations {
    return new Revocations(readOnly ? openReader(file) : openWritable(file, replicated), readOnly);
  }

  /** The refusal (401 `revoked`) of a token these revocations name, or undefined. Never throws. */
  refusal(claims: JwtClaims): FenecError | undefined {
    if (this.#readOnly) this.#poll();
    const jti = claims.jti;
    if (typeof jti === 'string' && this.#jtis.has(jti)) {
      return new FenecError('revoked', 'the token was revoked (its jti)', {
        hint: 'ask the operator for a new token (fenec token)',
      });
    }
    const sub = claims.sub;
    const before = typeof sub === 'string' ? this.#subs.get(sub) : undefined;
    // A token without iat cannot show it was issued after the revocation: it is refused with the rest.
    if (before !== undefined && !(typeof claims.iat === 'number' && claims.iat * 1000 > before)) {
      return new FenecError('revoked', 'the tokens of this sub issued before its revocation were revoked', {
        hint: 'ask the operator for a new token (fenec token)',
      });
    }
    return undefined;
  }

  /**
   * Revokes a token by its jti, or a sub's tokens issued up to now (a second revocation of a sub moves
   * its time on). Written to the disk before it answers.
   *
   * @throws FenecError `read_only` on a read-only file; `bad_request` for an empty or overlong value.
   */
  revoke(kind: RevocationKind, value: string, now = Date.now()): { revocation: Revocation; created: boolean } {
    if (this.#readOnly) {
      throw new FenecError('read_only', 'this server reads its file read-only; revoke on the server that writes it', {
        hint: 'fenec token revoke … --url <the writing server>',
      });
    }
    if (value === '' || value.length > MAX_REVOKED_LENGTH) {
      throw new FenecError(
        'bad_request',
        `a ${kind} to revoke is 1 to ${MAX_REVOKED_LENGTH} characters, not ${value.length}`,
      );
    }
    // The second that ends the revoked range: a token issued within it is revoked too.
    const at = kind === 'sub' ? Math.floor(now / 1000) * 1000 + 999 : now;
    const known = (kind === 'jti' ? this.#jtis : this.#subs).get(value);
    if (kind === 'jti' && known !== undefined) return { revocation: { kind, value, at: known }, created: false };
    this.#db
      .prepare(
        'INSERT INTO _fenec_revocations (kind, value, at) VALUES (?, ?, ?) ON CONFLICT (kind, value) DO UPDATE SET at = excluded.at',
      )
      .run(kind, value, at);
    (kind === 'jti' ? this.#jtis : this.#subs).set(value, at);
    return { revocation: { kind, value, at }, created: known === undefined };
  }

  /** Every revocation, the latest first. */
  list(): Revocation[] {
    if (this.#readOnly) this.#poll();
    const all = [
      ...[...this.#jtis].map(([value, at]) => ({ kind: 'jti' as const, value, at })),
      ...[...this.#subs].map(([value, at]) => ({ kind: 'sub' as const, value, at })),
    ];
    return all.sort((a, b) => b.at - a.at);
  }

  close(): void {
    this.#db.close();
  }

  #poll(): void {
    const now = Date.now();
    if (now - this.#polled < POLL_MS) return;
    this.#polled = now;
    this.#load();
  }

  #load(): void {
    try {
      const version = this.#db.pragma('data_version', { simple: true }) as number;
      if (version === this.#dataVersion) return;
      this.#dataVersion = version;
      const exists = this.#db
        .prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '_fenec_revocations'")
        .get();
      const rows =
        exists === undefined
          ? []
          : (this.#db.prepare('SELECT kind, value, at FROM _fenec_revocations').all() as Revocation[]);
      this.#jtis = new Map(rows.filter((row) => row.kind === 'jti').map((row) => [row.value, row.at]));
      this.#subs = new Map(rows.filter((row) => row.kind === 'sub').map((row) => [row.value, row.at]));
    } catch {
      // A read beside a writer that is busy: the list read last stands until the next poll.
      this.#dataVersion = -1;
    }
  }
}
