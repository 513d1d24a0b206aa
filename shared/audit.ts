/**
 * The audit log (`--audit [FILE]`): one JSON line per event that changes who may do what or what
 * exists — refused tokens, revocations, schema changes, an agent's MCP writes.
 *
 * A line is written before the request it records is answered: to a file opened for appending, by
 * one `fs.writeSync` (the line is in the operating system's hands once the answer leaves, and
 * outlives a crash of this process); schema and MCP lines, which record writes already on the disk,
 * are also `fdatasync`ed, so that a power loss cannot keep the change and lose its line. Refused
 * tokens are not synced: anyone may send them, and a sync each would let them slow the server.
 *
 * Never in a line: a token, a secret, a row's contents, an error's message (it may quote a value).
 */
import * as fs from 'node:fs';
import type { ErrorCode } from './errors.js';

/** Where audit lines go: the process's stderr, or a file appended to. */
export type AuditTarget = { readonly kind: 'stderr' } | { readonly kind: 'file'; readonly path: string };

/** A schema statement as the audit records it: its kind, never its field definitions' values. */
export type SchemaChange = 'create' | 'drop' | 'alter add' | 'alter drop' | 'alter embed' | 'compact';

/** Who ran a statement: the server's token, or a JWT's subject (null when the token has none). */
export type Who = { readonly kind: 'server' } | { readonly kind: 'jwt'; readonly sub: string | null };

/** Who a refused request was for and from, as far as it is known (a token that does not verify says nothing). */
export interface AuthWho {
  /** The tenant the request was for (its path's). */
  readonly tenant?: string;
  /** The tenant the token claimed (its tenant claim, or its audience's tenant); null when it claims none. */
  readonly tokenTenant?: string | null;
  /** The token's `sub`; null when it has none. */
  readonly sub?: string | null;
}

/** The longest claim or header text a line repeats. */
const MAX_TEXT = 200;

export class Audit {
  /** An audit that writes nothing: the server without --audit. */
  static readonly off = new Audit(undefined, () => undefined);

  readonly #fd: number | undefined;
  readonly #onError: (err: unknown) => void;
  /** Tests and embedders may take the lines themselves. */
  readonly #sink: ((line: string) => void) | undefined;

  private constructor(fd: number | undefined, onError: (err: unknown) => void, sink?: (line: string) => void) {
    this.#fd = fd;
    this.#onError = onError;
    this.#sink = sink;
  }

  /**
   * Opens the audit's target: stderr, or the file (created with mode 0600 when missing, appended to).
   * `onError` hears of a line that could not be written (a full disk): the request is answered
   * anyway, and the server's log says the audit fell short.
   *
   * @throws NodeJS.ErrnoException when the file cannot be opened for appending.
   */
  static open(target: AuditTarget, onError: (err: unknown) => void): Audit {
    // fd 2 written directly: from a worker thread, process.stderr would pass the line through the
    // serving thread later, after the answer it records.
    if (target.kind === 'stderr') return new Audit(2, onError);
    return new Audit(fs.openSync(target.path, 'a', 0o600), onError);
  }

  /** An audit whose lines go to `sink`, one string ending in a newline each. */
  static toSink(sink: (line: string) => void): Audit {
    return new Audit(
      undefined,
      (err) => {
        throw err;
      },
      sink,
    );
  }

  get enabled(): boolean {
    return this !== Audit.off;
  }

  /**
   * A refused token, or a request without one where one is required: why, from where, on which route; and, where
   * known, the tenant the request was for, the tenant the token claimed and its `sub` (two nodes writing one file,
   * or an operator asking who tried what, tell them apart).
   */
  auth(why: string, ip: string | undefined, route: string, who: AuthWho = {}): void {
    if (this === Audit.off) return;
    const entry: Record<string, unknown> = {
      time: new Date().toISOString(),
      event: 'auth',
      why,
      ip: ip ?? null,
      route,
    };
    if (who.tenant !== undefined) entry.tenant = who.tenant;
    if (who.tokenTenant !== undefined) entry.token_tenant = who.tokenTenant === null ? null : cut(who.tokenTenant);
    if (who.sub !== undefined) entry.sub = who.sub === null ? null : cut(who.sub);
    this.#write(entry, false);
  }

  /**
   * A schema change that was made (create, drop, alter, compact): its kind, its collection (null for
   * a compact of the whole file), and who made it: `"who":"server"`, or `"who":"jwt"` and its `sub`.
   */
  schema(statement: SchemaChange, collection: string | null, who: Who): void {
    if (this === Audit.off) return;
    const sub = who.kind === 'jwt' && who.sub !== null ? cut(who.sub) : null;
    this.#write({ time: new Date().toISOString(), event: 'schema', statement, collection, who: who.kind, sub }, true);
  }

  /**
   * An MCP `write`, `remember` or `forget` call: the tool, the tenant (null off a tenant node), the
   * token's subject (null for the server token), whether it succeeded, and the error's code if not.
   */
  mcp(tool: string, tenant: string | null, sub: string | null, ok: boolean, error: ErrorCode | undefined): void {
    if (this === Audit.off) return;
    this.#write(
      {
        time: new Date().toISOString(),
        event: 'mcp',
        tool,
        tenant,
        sub: sub === null ? null : cut(sub),
        ok,
        error: error ?? null,
      },
      true,
    );
  }

  /**
   * A revocation made (`fenec token revoke`): what it names (a jti, or a sub's tokens), the tenant
   * (null off a tenant node), and whether it is new. Only the server's token revokes.
   */
  revocation(kind: 'jti' | 'sub', value: string, tenant: string | null, created: boolean): void {
    if (this === Audit.off) return;
    this.#write(
      { time: new Date().toISOString(), event: 'revoke', kind, value: cut(value), tenant, created, who: 'server' },
      true,
    );
  }

  /** Closes the file (stderr is left open). */
  close(): void {
    if (this.#fd !== undefined && this.#fd !== 2) fs.closeSync(this.#fd);
  }

  #write(entry: Record<string, unknown>, durable: boolean): void {
    const line = `${JSON.stringify(entry)}\n`;
    try {
      if (this.#sink !== undefined) return this.#sink(line);
      fs.writeSync(this.#fd!, line);
      if (durable && this.#fd !== 2) fs.fdatasyncSync(this.#fd!);
    } catch (err) {
      this.#onError(err);
    }
  }
}

/** A JWT's `sub` claim as the audit names its holder: a string, or null when it has none. */
export function subjectOf(claims: Readonly<Record<string, unknown>>): string | null {
  const sub = claims.sub;
  return typeof sub === 'string' ? cut(sub) : null;
}

function cut(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
}
