/**
 * A tenant's file leaving or arriving over HTTP, while the node keeps serving its other tenants:
 *
 * - backup: a consistent copy through SQLite's online backup API (a snapshot, WAL included; the vector
 *   indexes live in the file, so the copy is the whole tenant), streamed from a temporary file;
 * - restore: a copy streamed in, checked (SQLite's quick_check and fenecdb's catalogue) before it
 *   replaces anything; over a tenant that exists only when asked (`replace`);
 * - pause: new requests get 429 `tenant_moving` with Retry-After while the ones under way finish, so a
 *   copy taken after it holds every acknowledged write;
 * - moved: a tombstone (`D/<tenant>.moved`) naming the node the tenant went to. Its data is deleted here;
 *   requests that still arrive (a router that has not yet learned the move) keep getting 429 with
 *   Retry-After, never an answer from a copy that is no longer the tenant's. Routers read the tombstones
 *   at `GET /_moved`;
 * - policy: the tenant's own policy file, read and written so that a move carries it with the data.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import Database from 'better-sqlite3';
import { parsePolicy } from '../../shared/auth/policy.js';
import { FenecError } from '../../shared/errors.js';
import { isTenantName } from '../../shared/tenant-name.js';
import type { Quotas } from './quotas.js';
import type { OpenTenant, Tenant, TenantRegistry } from './tenant-registry.js';

const MOVED = '.moved';
/** How often a pause looks whether the tenant's requests under way have finished. */
const DRAIN_POLL_MS = 5;
/** Sent with a backup, so that a restore elsewhere keeps the tenant's quotas. */
export const QUOTAS_HEADER = 'fenec-quotas';

export class TenantTransfers<T extends OpenTenant> {
  readonly #dir: string;
  readonly #registry: TenantRegistry<T>;
  readonly #paused = new Set<string>();
  /** tenant → the node it moved to. */
  readonly #moved = new Map<string, string>();
  /** Makes a tenant's file (one never asked anything has none yet). */
  readonly #create: (tenant: Tenant) => Promise<void>;

  constructor(dir: string, registry: TenantRegistry<T>, create: (tenant: Tenant) => Promise<void>) {
    this.#dir = dir;
    this.#registry = registry;
    this.#create = create;
    for (const file of fs.readdirSync(dir)) {
      if (!file.endsWith(MOVED)) continue;
      const name = file.slice(0, -MOVED.length);
      const stored = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as { to?: unknown };
      if (isTenantName(name) && typeof stored.to === 'string') this.#moved.set(name, stored.to);
    }
  }

  /** Why a request to `name` must wait (paused, or moved away), or undefined. */
  refusal(name: string): FenecError | undefined {
    const to = this.#moved.get(name);
    if (to !== undefined) {
      return new FenecError('tenant_moving', `tenant ${name} has moved to node ${to}`, {
        hint: 'retry after Retry-After through the router, which sends it on to that node',
      });
    }
    if (this.#paused.has(name)) {
      return new FenecError('tenant_moving', `tenant ${name} is paused while it is copied (a move or a restore)`, {
        hint: 'retry after Retry-After',
      });
    }
    return undefined;
  }

  /** Every tenant that moved away from this node, with the node it went to. */
  moved(): Record<string, string> {
    return Object.fromEntries(this.#moved);
  }

  /**
   * Refuses the tenant's new requests and resolves once the ones under way have finished;
   * `unavailable` (and the pause lifted) when they have not within `timeoutMs`.
   */
  async pause(name: string, timeoutMs: number): Promise<void> {
    this.#registry.get(name);
    this.#paused.add(name);
    const deadline = Date.now() + timeoutMs;
    while (this.#registry.busy(name) > 0) {
      if (Date.now() > deadline) {
        this.#paused.delete(name);
        throw new FenecError(
          'unavailable',
          `tenant ${name} still had requests under way after ${timeoutMs} ms; not paused`,
          { hint: 'retry the move when the tenant is quieter' },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
    }
  }

  resume(name: string): void {
    this.#paused.delete(name);
  }

  /** Records that `name` now lives on node `to`, and deletes its data here. */
  async markMoved(name: string, to: string): Promise<void> {
    this.#registry.get(name);
    const file = path.join(this.#dir, name + MOVED);
    fs.writeFileSync(`${file}.tmp`, `${JSON.stringify({ to, at: new Date().toISOString() })}\n`);
    fs.renameSync(`${file}.tmp`, file);
    this.#moved.set(name, to);
    await this.#registry.delete(name);
    this.#paused.delete(name);
  }

  /** Streams a consistent copy of the tenant's file into `res`. */
  async backup(name: string, res: ServerResponse): Promise<void> {
    const tenant = this.#registry.get(name);
    const file = path.join(this.#dir, `${name}.fenec`);
    // A tenant never asked anything has no file yet: opening it makes one, with the catalogue.
    if (!fs.existsSync(file)) await this.#create(tenant);
    const copy = this.#temporary('backup', name);
    const source = new Database(file, { readonly: true, fileMustExist: true });
    try {
      await source.backup(copy);
    } catch (err) {
      fs.rmSync(copy, { force: true });
      throw new FenecError('internal', `the backup of tenant ${name} failed: ${(err as Error).message}`, {
        cause: err,
      });
    } finally {
      source.close();
    }
    await sendTenantFile(res, name, copy, tenant.quotas);
  }

  /**
   * Takes the body of `req` as the tenant's new file. Refused before anything is replaced when the
   * tenant exists and `replace` is false, when the body is past the tenant's byte quota, or when it is
   * not a fenecdb file. Resolves with whether the tenant was created and the file's size.
   */
  async restore(
    name: string,
    req: IncomingMessage,
    options: { replace: boolean; quotas: Quotas | undefined; pauseTimeoutMs: number },
  ): Promise<{ created: boolean; bytes: number }> {
    const exists = this.#registry.has(name);
    if (exists && !options.replace) {
      throw new FenecError(
        'tenant_exists',
        `tenant ${name} exists on this node; a restore replaces it only when asked`,
        { hint: 'restore with --replace (PUT /t/<tenant>/_backup?replace=true)' },
      );
    }
    const maxBytes = (options.quotas ?? (exists ? this.#registry.get(name).quotas : this.#registry.defaults)).maxBytes;
    const copy = this.#temporary('restore', name);
    try {
      await receive(req, copy, maxBytes);
      checkBackup(copy);
      if (exists) await this.pause(name, options.pauseTimeoutMs);
      try {
        const bytes = fs.statSync(copy).size;
        await this.#registry.adopt(name, copy, options.quotas);
        this.#moved.delete(name);
        fs.rmSync(path.join(this.#dir, name + MOVED), { force: true });
        return { created: !exists, bytes };
      } finally {
        this.#paused.delete(name);
      }
    } finally {
      fs.rmSync(copy, { force: true });
    }
  }

  /** The tenant's own policy file (`D/<tenant>.policy`), or undefined when it is held to the node's. */
  policy(name: string): string | undefined {
    this.#registry.get(name);
    const file = path.join(this.#dir, `${name}.policy`);
    return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined;
  }

  /** Writes the tenant's policy file, checked first (a move carries it with the data); reopened under it. */
  async setPolicy(name: string, text: string): Promise<void> {
    this.#registry.get(name);
    const file = path.join(this.#dir, `${name}.policy`);
    parsePolicy(text, file);
    fs.writeFileSync(`${file}.tmp`, text);
    fs.renameSync(`${file}.tmp`, file);
    await this.#registry.reopen(name);
  }

  #temporary(kind: string, name: string): string {
    return path.join(this.#dir, `.${kind}-${name}-${randomBytes(6).toString('hex')}.tmp`);
  }
}

/** Writes the request's body to `file`, refusing it (and keeping nothing) past `maxBytes`. */
async function receive(req: IncomingMessage, file: string, maxBytes: number): Promise<void> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  let size = 0;
  const out = fs.createWriteStream(file);
  try {
    await pipeline(
      req,
      async function* (chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          size += chunk.length;
          if (size > maxBytes) throw tooLarge(maxBytes);
          yield chunk;
        }
      },
      out,
    );
  } catch (err) {
    fs.rmSync(file, { force: true });
    if (err instanceof FenecError) throw err;
    throw new FenecError('bad_request', `the backup's body did not arrive whole: ${(err as Error).message}`);
  }
}

function tooLarge(maxBytes: number): FenecError {
  return new FenecError('payload_too_large', `the backup is larger than the tenant's byte quota (${maxBytes} bytes)`, {
    hint: "raise the tenant's maxBytes quota (fenec tenant create NAME --quotas) and restore again",
  });
}

/** A restore must be a whole SQLite file holding fenecdb's catalogue. */
function checkBackup(file: string): void {
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new Error(String(check));
    db.prepare('SELECT count(*) FROM _fenec_collections').get();
  } catch (err) {
    throw new FenecError('invalid_backup', `the body is not a fenecdb tenant file: ${(err as Error).message}`, {
      hint: 'send a file made by GET /t/<tenant>/_backup (fenec tenant backup)',
    });
  } finally {
    db?.close();
  }
}

/** A tenant's file copy as a backup's answer (its quotas in a header), the copy removed once sent or not. */
export async function sendTenantFile(res: ServerResponse, name: string, copy: string, quotas: unknown): Promise<void> {
  try {
    res.writeHead(200, {
      'content-type': 'application/vnd.sqlite3',
      'content-length': fs.statSync(copy).size,
      'content-disposition': `attachment; filename="${name}.fenec"`,
      [QUOTAS_HEADER]: JSON.stringify(quotas),
    });
    await pipeline(fs.createReadStream(copy), res);
  } finally {
    fs.rmSync(copy, { force: true });
  }
}
