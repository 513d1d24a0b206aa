/**
 * The backfills a worker runs (`alter collection C embed F`, recorded in the file by node/query/execute/backfill.ts):
 * for each, the rows after its cursor that lack their vector are read a batch at a time, embedded with no turn and no
 * transaction held, and written with the cursor past them in one transaction, batch after batch in id order. At most
 * `window` batches are out at once, so the embedder works on the next batches while one is written and memory holds no
 * more than a window of rows.
 *
 * A backfill survives a crash: the file keeps its cursor, and it goes on when the file is opened again. A row whose
 * vector was committed is never embedded again; only the batches out at the crash are. An embedder that fails is
 * tried again later from the cursor, with a back-off; the failure is logged.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../shared/logger.js';
import type { FenecDatabase } from '../database.js';
import { checkOrigin, type Embedder } from '../embedder/embedder.js';
import type { Backfill } from '../query/execute/backfill.js';

export interface BackfillOptions {
  /** Rows in one batch (--embedder-batch). */
  readonly batchSize: number;
  /** Batches out at once for one backfill. */
  readonly window: number;
  /** The first wait after a failure; each next one doubles, up to a minute. */
  readonly retryMs?: number;
}

const MAX_RETRY_MS = 60_000;

export class Backfills {
  readonly #embedder: (signal: AbortSignal) => Promise<Embedder>;
  readonly #logger: Logger;
  readonly #options: BackfillOptions;
  /** The backfills running, by tenant and field, each with the means to stop it. */
  readonly #running = new Map<string, AbortController>();

  constructor(embedder: (signal: AbortSignal) => Promise<Embedder>, logger: Logger, options: BackfillOptions) {
    this.#embedder = embedder;
    this.#logger = logger;
    this.#options = options;
  }

  /** Starts every backfill the tenant's file records that is not running yet. */
  resume(tenant: string, db: FenecDatabase): void {
    for (const backfill of db.backfill.list()) {
      const key = `${tenant}\n${backfill.collection}\n${backfill.field}`;
      if (this.#running.has(key)) continue;
      const stop = new AbortController();
      this.#running.set(key, stop);
      void this.#run(tenant, db, backfill, stop.signal).finally(() => {
        if (this.#running.get(key) === stop) this.#running.delete(key);
      });
    }
  }

  /** Stops the tenant's backfills (its file is closing); the file keeps their cursors. */
  stop(tenant: string): void {
    for (const [key, stop] of this.#running)
      if (key.startsWith(`${tenant}\n`)) {
        stop.abort(new Error('the tenant is closing'));
        this.#running.delete(key);
      }
  }

  async #run(tenant: string, db: FenecDatabase, backfill: Backfill, signal: AbortSignal): Promise<void> {
    let wait = this.#options.retryMs ?? 1_000;
    while (!signal.aborted) {
      try {
        await this.#fill(db, backfill, signal);
        return;
      } catch (err) {
        if (signal.aborted) return;
        this.#logger.warn(
          { err, tenant, collection: backfill.collection, field: backfill.field, retryMs: wait },
          'a backfill of vectors failed; it goes on from its cursor after a wait',
        );
        await sleep(wait, undefined, { signal }).catch(() => undefined);
        wait = Math.min(MAX_RETRY_MS, wait * 2);
      }
    }
  }

  /** Fills the field from the cursor the file holds to the last row; throws what stopped it. */
  async #fill(db: FenecDatabase, backfill: Backfill, signal: AbortSignal): Promise<void> {
    const embedder = await this.#embedder(signal);
    let after = db.backfill
      .list()
      .find((b) => b.collection === backfill.collection && b.field === backfill.field)?.after;
    if (after === undefined) return;
    // The batches out, oldest first: each is written once it and every batch before it are in.
    const out: Promise<void>[] = [];
    let written: Promise<void> = Promise.resolve();
    for (;;) {
      signal.throwIfAborted();
      const next = db.backfill.batch(backfill, after, this.#options.batchSize);
      if (next === undefined) break;
      checkOrigin(backfill.field, next.spec, embedder);
      const { rows, upTo } = next.batch;
      after = upTo;
      const vectors =
        rows.length === 0
          ? Promise.resolve([])
          : embedder.embed(
              rows.map((r) => r.text),
              { signal },
            );
      // Kept from rejecting unobserved while the next batches are read; its failure is thrown as its turn comes.
      vectors.catch(() => undefined);
      written = written.then(async () => {
        const found = await vectors;
        signal.throwIfAborted();
        db.backfill.write(
          backfill,
          rows.map((row, i) => ({ id: row.id, vector: found[i]! })),
          upTo,
        );
      });
      written.catch(() => undefined);
      out.push(written);
      if (out.length >= this.#options.window) await out.shift();
    }
    await written;
    signal.throwIfAborted();
    // Rows written since the last batch was read are embedded by their writes; the backfill is over.
    db.backfill.done(backfill);
  }
}
