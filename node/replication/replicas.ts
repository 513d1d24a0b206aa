/**
 * A node's copies of its tenants' files, kept to the log (log.ts): the log is the truth, a file is what the log
 * says up to a sequence. Before a tenant's worker opens its file, `ready` makes the file the log's head (the
 * changes since the file's sequence applied, or the file rebuilt from the latest snapshot and the log after it);
 * each reply's change is appended (`commit`) before the answer is given. A change the log did not take — another
 * node appended first (fenced), or JetStream did not ack in time — breaks the tenant here: its file holds a
 * write the log may lack, so it is closed, takes no more writes, and is rebuilt from the log at its next request.
 *
 * `D/<tenant>.seq` names the sequence a closed file holds: written when it was closed with every change in the
 * log, removed when it is opened. A file without it (a crash, a break) is rebuilt.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { applyChanges, wholeFile } from '../storage/wal-tail.js';
import type { TenantLog } from './log.js';
import type { Snapshots } from './snapshots.js';

interface State {
  /** The sequence of the log the file holds (meaningful while `known`). */
  seq: number;
  /** The file is the log up to `seq`, and this node may append after it. */
  known: boolean;
  /** Appends, one after another: each names the sequence the last one got. */
  chain: Promise<void>;
  /** The log's head being put into the file (at most one at a time). */
  preparing: Promise<void> | undefined;
  /** A warm standby's catch-up of the closed file (standby.ts): a preparation waits for it. */
  warming: Promise<void> | undefined;
  /** Changes appended since the last snapshot. */
  since: number;
  /**
   * A change of the file here was not appended (refused, not acked, or dropped while the tenant was not the log's
   * head here): the file holds pages the log lacks, and only a rebuild from the log makes it a copy again.
   */
  dirty: boolean;
}

export interface ReplicaHooks {
  /** Close the tenant's file (its worker's copy is no longer the log's). */
  readonly close: (tenant: string) => Promise<void>;
  /** A snapshot is due (after `snapshotEvery` changes). */
  readonly snapshotDue: (tenant: string) => void;
  /** Why this node may append nothing now (its lease does not hold), or undefined. */
  readonly refusal: () => FenecError | undefined;
}

export class Replicas {
  /** This node's name, in the marks it puts in the log. */
  readonly #node: string;
  readonly #dir: string;
  readonly #log: TenantLog;
  readonly #snapshots: Snapshots;
  readonly #logger: Logger;
  readonly #snapshotEvery: number;
  readonly #states = new Map<string, State>();
  #hooks: ReplicaHooks | undefined;

  constructor(node: string, dir: string, log: TenantLog, snapshots: Snapshots, snapshotEvery: number, logger: Logger) {
    this.#node = node;
    this.#dir = dir;
    this.#log = log;
    this.#snapshots = snapshots;
    this.#snapshotEvery = snapshotEvery;
    this.#logger = logger;
  }

  set hooks(hooks: ReplicaHooks) {
    this.#hooks = hooks;
  }

  /** The sequence the tenant's file holds now, when known. */
  seqOf(tenant: string): number | undefined {
    const state = this.#states.get(tenant);
    return state?.known === true ? state.seq : undefined;
  }

  /** The tenants whose file here is the log's head now (open, or about to be). */
  open(): string[] {
    return [...this.#states].filter(([, state]) => state.known || state.preparing !== undefined).map(([t]) => t);
  }

  /** Resolves once the tenant's file is the log's head (the worker may open it). */
  ready(tenant: string): Promise<void> {
    const state = this.#state(tenant);
    if (state.known) return Promise.resolve();
    state.preparing ??= this.#prepare(tenant, state).finally(() => (state.preparing = undefined));
    return state.preparing;
  }

  /**
   * Appends a reply's change; resolves once JetStream has it. Rejects `tenant_fenced` or `log_unavailable` (the
   * tenant is broken here: see the head comment).
   */
  commit(tenant: string, change: Uint8Array): Promise<number> {
    const state = this.#state(tenant);
    const done = state.chain.then(async (): Promise<number> => {
      if (!state.known) {
        state.dirty = true;
        throw catchingUp(tenant);
      }
      try {
        // Past its lease another node may have the tenant: the change stays out of the log (the file is rebuilt).
        const refused = this.#hooks?.refusal();
        if (refused !== undefined) throw refused;
        state.seq = await this.#log.append(tenant, change, state.seq);
      } catch (err) {
        state.dirty = true;
        this.#break(tenant, state, err);
        throw err;
      }
      state.since += 1;
      if (state.since >= this.#snapshotEvery) {
        state.since = 0;
        this.#hooks?.snapshotDue(tenant);
      }
      return state.seq;
    });
    state.chain = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }

  /** The sequence the tenant's file holds once the appends under way are done; rejects when it is broken. */
  async settled(tenant: string): Promise<number> {
    const state = this.#state(tenant);
    await state.chain;
    if (!state.known) throw catchingUp(tenant);
    return state.seq;
  }

  /**
   * The tenant's file was replaced whole (a restore, a move's copy): `change` (every page of it) is appended after
   * whatever the log holds, and the file is the log's head again.
   */
  replaced(tenant: string, change: () => Uint8Array): Promise<number> {
    const state = this.#state(tenant);
    // Until it is in the log, the file is no copy of the log: a request waits, and is not served from a rebuild.
    state.known = false;
    state.dirty = false;
    const done = state.chain.then(async (): Promise<number> => {
      const seq = await this.#log.append(tenant, change(), await this.#log.last(tenant));
      state.seq = seq;
      // A change dropped meanwhile (a request on the new file) leaves it to be rebuilt from the log.
      state.known = !state.dirty;
      fs.rmSync(this.#seqFile(tenant), { force: true });
      return seq;
    });
    state.chain = done.then(
      () => undefined,
      () => undefined,
    );
    state.preparing = state.chain.finally(() => (state.preparing = undefined));
    return done;
  }

  /**
   * The tenant's file was closed with its last change appended: its sequence is kept beside it. Not when `reopened`
   * says a request sent after the close has the file open again: a `.seq` beside an open file would have it
   * trusted after a crash, and the file is still the log's head.
   */
  async closed(tenant: string, logged: Promise<number> | undefined, reopened: () => boolean): Promise<void> {
    const state = this.#states.get(tenant);
    if (state === undefined) return;
    await logged?.catch(() => undefined);
    await state.chain;
    if (!state.known || state.dirty || reopened()) return;
    fs.writeFileSync(this.#seqFile(tenant), `${state.seq}\n`);
    // Opened again here, it is prepared again: the sequence file says where it stands.
    state.known = false;
  }

  /**
   * A warm standby's catch-up (standby.ts): the tenant's closed file here, which this node does not serve, brought to
   * the log's head and its sequence kept beside it, so that taking the tenant applies only the changes since. Not
   * while the tenant is served or being prepared here; a preparation that begins meanwhile waits for it.
   */
  warm(tenant: string): Promise<void> {
    const state = this.#state(tenant);
    if (state.known || state.preparing !== undefined) return Promise.resolve();
    state.warming ??= this.#warm(tenant, state).finally(() => (state.warming = undefined));
    return state.warming;
  }

  async #warm(tenant: string, state: State): Promise<void> {
    const file = path.join(this.#dir, `${tenant}.fenec`);
    const head = await this.#log.last(tenant);
    const held = this.#heldSeq(tenant, file);
    if (head === 0 || held === head) return;
    // While it is written the file holds no sequence: a crash meanwhile leaves it to be rebuilt.
    fs.rmSync(this.#seqFile(tenant), { force: true });
    const { applied, rebuilt } = await this.#toHead(tenant, file, held, head);
    // Forgotten meanwhile (the tenant deleted): the copy made since is removed, or a tenant made later under the
    // name would take it for a file from before replication.
    if (this.#states.get(tenant) !== state) {
      fs.rmSync(file, { force: true });
      return;
    }
    // A rebuilt copy took its name by a rename: the folder is synced first, or a crash could leave the sequence
    // beside the file it replaced.
    if (rebuilt) {
      const folder = await fs.promises.open(this.#dir, 'r');
      await folder.sync().finally(() => folder.close());
    }
    fs.writeFileSync(this.#seqFile(tenant), `${head}\n`);
    // A copy rebuilt or caught up from a sequence kept clean holds no page the log lacks.
    state.dirty = false;
    this.#logger.debug({ tenant, seq: head, applied, rebuilt }, 'standby copy caught up from the log');
  }

  /** The tenant is gone (deleted, or owned elsewhere now): its file here is no longer kept to the log. */
  forget(tenant: string): void {
    this.#states.delete(tenant);
    fs.rmSync(this.#seqFile(tenant), { force: true });
  }

  /** The tenant's file is broken here: the next request rebuilds it from the log. */
  #break(tenant: string, state: State, err: unknown): void {
    if (!state.known) return;
    state.known = false;
    this.#logger.warn({ tenant, err }, 'the log did not take a change: the tenant is rebuilt from the log');
    void this.#hooks?.close(tenant);
  }

  async #prepare(tenant: string, state: State): Promise<void> {
    // Changes appended before a break finish (or fail) first, and a standby's catch-up; the worker's file is closed
    // before it is rewritten.
    await state.chain;
    await state.warming;
    await this.#hooks?.close(tenant);
    const file = path.join(this.#dir, `${tenant}.fenec`);
    const head = await this.#log.last(tenant);
    // A file with pages the log lacks is never a base: it is rebuilt whole.
    const held = state.dirty ? undefined : this.#heldSeq(tenant, file);
    state.dirty = false;
    fs.rmSync(this.#seqFile(tenant), { force: true });
    // (A log emptied behind a snapshot has no head either: the snapshot, not this file, is the tenant then.)
    if (head === 0 && held === undefined && this.#unlogged(file) && (await this.#snapshots.list(tenant)).length === 0) {
      // A file made before the node had --nats: the log begins with the whole of it.
      state.seq = await this.#log.append(tenant, wholeFile(file), 0);
      state.known = true;
      this.#logger.info(
        { tenant, seq: state.seq },
        "a tenant from before replication: its file is the log's first change",
      );
      return;
    }
    const caught = await this.#toHead(tenant, file, held, head);
    let applied = caught.applied;
    const rebuilt = caught.rebuilt;
    state.seq = head;
    // The log marked as this node's copy of it: an append of another node's still on its way (sent before it lost
    // the tenant) is refused from now on, or, landed first, is read in here — every write acknowledged before
    // this copy serves is in it.
    for (let attempt = 1; ; attempt++) {
      try {
        state.seq = await this.#log.mark(tenant, state.seq, this.#node);
        break;
      } catch (err) {
        if (!(err instanceof FenecError && err.code === 'tenant_fenced') || attempt === 3) throw err;
        const next = await this.#log.last(tenant);
        const after = state.seq;
        applied += await applyChanges(file, (each) =>
          this.#log.read(tenant, after, next, async (change) => each(change.bytes)),
        );
        state.seq = next;
      }
    }
    state.known = true;
    state.since = applied;
    if (applied > 0 || rebuilt)
      this.#logger.info({ tenant, seq: state.seq, applied, rebuilt }, 'tenant caught up from the log');
  }

  /**
   * Brings the tenant's closed file here to the log's `head`: from `held`, the sequence it holds, or rebuilt from the
   * latest snapshot when it holds none, or one the log no longer follows on from.
   */
  async #toHead(
    tenant: string,
    file: string,
    held: number | undefined,
    head: number,
  ): Promise<{ applied: number; rebuilt: boolean }> {
    // The log before the latest snapshot may be trimmed (up to the older one kept): a file older than it misses
    // changes the log no longer has — read from it, the log would quietly skip them. It is rebuilt from the snapshot.
    const latest = held === undefined ? undefined : (await this.#snapshots.list(tenant)).pop();
    let from: number;
    let target: string;
    if (held !== undefined && held <= head && held >= (latest?.seq ?? 0)) {
      from = held;
      target = file;
    } else {
      target = `${file}.rebuild`;
      fs.rmSync(target, { force: true });
      from = await this.#snapshots.fetch(tenant, target);
    }
    // One sync for the whole catch-up: the copy serves nothing before it is done.
    const applied = await applyChanges(target, (each) =>
      this.#log.read(tenant, from, head, async (change) => each(change.bytes)),
    );
    if (target !== file) {
      for (const suffix of ['-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
      if (fs.existsSync(target)) fs.renameSync(target, file);
      else fs.rmSync(file, { force: true });
    }
    return { applied, rebuilt: target !== file };
  }

  /** A whole file here, closed with no write-ahead log left, that the log has never had. */
  #unlogged(file: string): boolean {
    const wal = `${file}-wal`;
    return fs.existsSync(file) && fs.statSync(file).size > 0 && !(fs.existsSync(wal) && fs.statSync(wal).size > 0);
  }

  /** The sequence a closed, whole file holds (its `.seq`, and no write-ahead log left over from a crash). */
  #heldSeq(tenant: string, file: string): number | undefined {
    const seqFile = this.#seqFile(tenant);
    if (!fs.existsSync(seqFile) || !fs.existsSync(file)) return undefined;
    const wal = `${file}-wal`;
    if (fs.existsSync(wal) && fs.statSync(wal).size > 0) return undefined;
    const seq = Number(fs.readFileSync(seqFile, 'utf8').trim());
    return Number.isSafeInteger(seq) && seq >= 0 ? seq : undefined;
  }

  #seqFile(tenant: string): string {
    return path.join(this.#dir, `${tenant}.seq`);
  }

  #state(tenant: string): State {
    let state = this.#states.get(tenant);
    if (state === undefined) {
      state = {
        seq: 0,
        known: false,
        chain: Promise.resolve(),
        preparing: undefined,
        warming: undefined,
        since: 0,
        dirty: false,
      };
      this.#states.set(tenant, state);
    }
    return state;
  }
}

function catchingUp(tenant: string): FenecError {
  return new FenecError('log_unavailable', `tenant ${tenant} is being caught up from the replicated log`, {
    retryAfter: 1,
    hint: 'retry after Retry-After; this write was not made',
  });
}
