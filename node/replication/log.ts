/**
 * The tenants' log on NATS JetStream: one stream, one subject per tenant (`fenec.log.<tenant>`), each message a
 * change (node/storage/wal-tail.ts) or a part of one. An append names the sequence of the tenant's last message
 * (JetStream's expected-last-subject-sequence): it is refused when another node appended since, so a node that
 * lost a tenant can never add to its log — the fence.
 */
import { headers, type NatsConnection } from '@nats-io/transport-node';
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { FenecError } from '../../shared/errors.js';

export const LOG_STREAM = 'FENEC_LOG';
const SUBJECT = 'fenec.log.';
/** Under NATS's default max_payload (1 MiB), with room for the headers. */
export const PART_BYTES = 900 * 1024;
/** A change in parts carries `i/n`; a copy applies a change once its last part is read. */
const PART = 'Fenec-Part';
/** A message that changes nothing (no body): the node named took the tenant's log as its copy stood there. */
const MARK = 'Fenec-Mark';
/**
 * The sequence of the tenant's message this one follows (what its append expected). The stream's sequences are
 * shared by every tenant, so a reader cannot tell a gap from other tenants' messages: this tells it. A snapshot
 * stored while a copy reads the log behind it trims what the copy has not read yet, and JetStream's consumer
 * skips what is gone without a word.
 */
const AFTER = 'Fenec-After';

export function logSubject(tenant: string): string {
  return SUBJECT + tenant;
}

/** One whole change read back: its sequence (its last part's) and its bytes. */
export interface LoggedChange {
  readonly seq: number;
  readonly bytes: Uint8Array;
  readonly time: Date;
}

export class TenantLog {
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #ackTimeoutMs: number;

  private constructor(js: JetStreamClient, jsm: JetStreamManager, ackTimeoutMs: number) {
    this.#js = js;
    this.#jsm = jsm;
    this.#ackTimeoutMs = ackTimeoutMs;
  }

  /** The stream, made when missing, with `replicas` copies (JetStream's Raft group). */
  static async open(nc: NatsConnection, replicas: number, ackTimeoutMs: number): Promise<TenantLog> {
    const jsm = await jetstreamManager(nc);
    try {
      await jsm.streams.info(LOG_STREAM);
    } catch {
      await jsm.streams.add({
        name: LOG_STREAM,
        subjects: [`${SUBJECT}*`],
        num_replicas: replicas,
        max_msg_size: PART_BYTES + 64 * 1024,
      });
    }
    return new TenantLog(jetstream(nc, { timeout: ackTimeoutMs }), jsm, ackTimeoutMs);
  }

  /** The sequence of the tenant's last message (0: none), asked of the stream's leader. */
  async last(tenant: string): Promise<number> {
    try {
      const msg = await this.#jsm.streams.getMessage(LOG_STREAM, { last_by_subj: logSubject(tenant) });
      return msg?.seq ?? 0;
    } catch (err) {
      if (/no message found/i.test(String(err))) return 0;
      throw unavailable(err);
    }
  }

  /**
   * Appends a change after the tenant's message `after` (0: its first), in parts past PART_BYTES; resolves to the
   * last part's sequence. Rejects `tenant_fenced` when another node appended since `after`, `log_unavailable` when
   * JetStream does not ack in time (the change may or may not be in the log).
   */
  async append(tenant: string, bytes: Uint8Array, after: number): Promise<number> {
    const parts = Math.max(1, Math.ceil(bytes.length / PART_BYTES));
    let seq = after;
    for (let i = 0; i < parts; i++) {
      const h = headers();
      h.set(AFTER, String(seq));
      if (parts > 1) h.set(PART, `${i + 1}/${parts}`);
      try {
        const ack = await this.#js.publish(logSubject(tenant), bytes.subarray(i * PART_BYTES, (i + 1) * PART_BYTES), {
          expect: { lastSubjectSequence: seq },
          headers: h,
          timeout: this.#ackTimeoutMs,
        });
        seq = ack.seq;
      } catch (err) {
        if (/wrong last sequence/i.test(String(err))) throw fenced(tenant);
        throw unavailable(err);
      }
    }
    return seq;
  }

  /**
   * Appends a mark after the tenant's message `after`, for `node`: from then on an append that names an earlier
   * message is refused — one another node sent before it lost the tenant, still on its way, among them. Resolves
   * to the mark's sequence; rejects as `append` does.
   */
  async mark(tenant: string, after: number, node: string): Promise<number> {
    const h = headers();
    h.set(MARK, node);
    h.set(AFTER, String(after));
    try {
      const ack = await this.#js.publish(logSubject(tenant), new Uint8Array(0), {
        expect: { lastSubjectSequence: after },
        headers: h,
        timeout: this.#ackTimeoutMs,
      });
      return ack.seq;
    } catch (err) {
      if (/wrong last sequence/i.test(String(err))) throw fenced(tenant);
      throw unavailable(err);
    }
  }

  /**
   * The tenant's whole changes after `after` up to `upTo`, in order (marks skipped); parts of a change cut short by
   * a crash (a later first part follows them) are skipped. Rejects `log_unavailable` when no message comes for the
   * ack timeout: a consumer cut off (a partition) learns it only from heartbeats tens of seconds apart, and a
   * tenant's catch-up waited on it — its requests unanswered — meanwhile. Rejects `log_unavailable` as well when a
   * message does not follow the one read before it (AFTER): the messages between were trimmed under the read, and
   * a copy that skipped them would serve without acknowledged writes; read again, from the newer snapshot.
   */
  async read(
    tenant: string,
    after: number,
    upTo: number,
    each: (change: LoggedChange) => Promise<void>,
  ): Promise<void> {
    if (upTo <= after) return;
    const consumer = await this.#js.consumers.get(LOG_STREAM, {
      filter_subjects: logSubject(tenant),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: after + 1,
    });
    const messages = await consumer.consume({ max_messages: 64 });
    let parts: Uint8Array[] = [];
    let reached = after;
    let gap: string | undefined;
    let stalled = false;
    const stall = setTimeout(() => {
      stalled = true;
      void messages.close();
    }, this.#ackTimeoutMs);
    try {
      for await (const msg of messages) {
        stall.refresh();
        // Messages appended before AFTER existed carry none: nothing to check them by.
        const follows = msg.headers?.get(AFTER);
        if (follows !== undefined && follows !== '' && Number(follows) !== reached) {
          gap = `message ${msg.seq} follows ${follows}, and the read was at ${reached}`;
          break;
        }
        reached = msg.seq;
        if (msg.headers?.get(MARK)) {
          if (msg.seq >= upTo) break;
          continue;
        }
        const part = msg.headers?.get(PART);
        const [index, count] = part === undefined || part === '' ? [1, 1] : part.split('/').map(Number);
        if (index === 1) parts = [];
        parts.push(msg.data);
        if (index === count && parts.length === count) {
          await each({ seq: msg.seq, bytes: parts.length === 1 ? parts[0]! : Buffer.concat(parts), time: msg.time });
          parts = [];
        }
        if (msg.seq >= upTo) break;
      }
    } finally {
      clearTimeout(stall);
      await messages.close();
    }
    if (gap !== undefined) throw trimmedUnder(tenant, gap);
    if (stalled && reached < upTo)
      throw unavailable(
        `no message of tenant ${tenant}'s log came for ${this.#ackTimeoutMs} ms, at ${reached} of ${upTo}`,
      );
    // A consumer can end quietly (its connection closed under it): a copy short of `upTo` is no copy of the log.
    if (reached < upTo) throw unavailable(`the read of tenant ${tenant}'s log ended at ${reached}, before ${upTo}`);
  }

  /** Removes the tenant's messages before `seq` (those a snapshot holds), or all of them. */
  async trim(tenant: string, seq?: number): Promise<void> {
    await this.#jsm.streams.purge(LOG_STREAM, { filter: logSubject(tenant), ...(seq === undefined ? {} : { seq }) });
  }
}

function fenced(tenant: string): FenecError {
  return new FenecError('tenant_fenced', `another node wrote to tenant ${tenant} since this one last did`, {
    retryAfter: 1,
    hint: 'retry: the tenant is served by its new node (a router sends you there)',
  });
}

function trimmedUnder(tenant: string, gap: string): FenecError {
  return new FenecError('log_unavailable', `tenant ${tenant}'s log was trimmed while it was read (${gap})`, {
    retryAfter: 1,
    hint: 'retry after a moment: the tenant is read again from its newer snapshot',
  });
}

function unavailable(err: unknown): FenecError {
  return new FenecError('log_unavailable', `the replicated log did not answer in time: ${String(err)}`, {
    cause: err,
    retryAfter: 1,
    hint: 'retry after a moment; a write answered this way may or may not have been made: read it back first',
  });
}
