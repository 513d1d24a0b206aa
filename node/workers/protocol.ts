/**
 * What the serving thread and its worker threads say to each other. Everything here crosses a
 * thread by structured clone, so it is plain data: no class, no function, no key object.
 */
import type { AuditTarget } from '../../shared/audit.js';
import type { TracingConfig } from '../../shared/tracing.js';
import type { Policy } from '../../shared/auth/policy.js';
import type { McpConfig } from '../config.js';
import type { Caller } from '../../shared/http/front-door.js';
import type { NativeBuildPaths } from '../native-builds.js';
import type { EmbedderConfig } from '../embedder/config.js';

/** The server's embedder as a worker is given it: its options, and the dimension the start probe learned. */
export interface WorkerEmbedder {
  readonly config: EmbedderConfig;
  /** Undefined when the start probe failed under --embedder-lazy: the worker probes again when it needs it. */
  readonly dimension: number | undefined;
}

/** The one file of a one-file server is the pool's only tenant, under this name. */
export const ONE_FILE = '';

/**
 * The routes whose work runs in a worker, where the tenant's file is: a statement, one MCP message,
 * the file's revocations listed (GET) or added (POST).
 */
export type WorkRoute = '/query' | '/_mcp' | 'GET /_revocations' | 'POST /_revocations';

/** What a tenant's file and statements are held to; sent with each request, as quotas can change. */
export interface TenantLimits {
  /** Largest file in bytes (0: none). */
  readonly maxBytes: number;
  /** Most collections (0: none); only on tenant nodes. */
  readonly maxCollections: number;
  /** Most rows (0: none); only on tenant nodes. */
  readonly maxRows: number;
  /** Largest `/query` answer in bytes. */
  readonly maxAnswerBytes: number;
  /** How long one statement may run before its worker is stopped, in ms. */
  readonly statementTimeoutMs: number;
  /** Texts the embedder may be given for the tenant a second, as many banked (0: no limit); tenant nodes only. */
  readonly embedRate?: number;
}

/** How the workers open files: the one of a one-file server, or tenants' files under a data directory. */
export interface WorkerSetup {
  /** The one file (a one-file server), or undefined on a tenant node. */
  readonly file: string | undefined;
  /** Tenant T's file is `dataDir/T.fenec`, its policy `dataDir/T.policy` when present. */
  readonly dataDir: string | undefined;
  /** Tenant nodes hold tenants to their collection and row quotas. */
  readonly tenantQuotas: boolean;
  /** Each reply carries the pages its tenant's file committed since the last (`--nats`: node/replication). */
  readonly replicated: boolean;
  readonly readOnly: boolean;
  readonly httpReadOnly: boolean;
  readonly sweepIntervalMs: number;
  /** How long a write waits for a lock another program holds on a file (`--busy-timeout`). */
  readonly busyTimeoutMs: number;
  /** The policy JWTs are held to when the tenant has none of its own. */
  readonly policy: Policy | undefined;
  readonly mcp: McpConfig | undefined;
  readonly audit: AuditTarget | undefined;
  /** Where the worker exports its spans (an MCP tool call's), as the serving thread does; undefined: no tracing. */
  readonly otel: TracingConfig | undefined;
  /** The key cursors are signed with: the server's, so that any of its workers takes a cursor another made. */
  readonly cursorSecret: Uint8Array;
  /** Where the native builds are: the serving thread's (node/native-builds.ts), a thread having its own. */
  readonly nativeBuilds: NativeBuildPaths;
  /** Where the worker says which request it runs and until when (see RunningSlot). */
  readonly slot: SharedArrayBuffer;
  /** The server's embedder (--embedder-url), or undefined: none. */
  readonly embedder?: WorkerEmbedder;
}

/** How an MCP tool call ended: answered, refused as an isError result, or failed (a fault, an unknown tool). */
export type ToolOutcomeLabel = 'ok' | 'refused' | 'failed';

/** Which quota refused a request: the label of fenec_tenant_quota_refusals_total (cost: worker time). */
export type QuotaKind = 'rate' | 'cost' | 'bytes' | 'collections' | 'rows' | 'embed';

/** One call to the embedder a request made: how it ended, its texts, its time. For the fenec_embedder_* metrics. */
export interface EmbedderCall {
  readonly outcome: 'ok' | 'retried' | 'failed';
  readonly inputs: number;
  readonly seconds: number;
}

/** One request's work, as the serving thread hands it over. */
export interface WorkRequest {
  readonly route: WorkRoute;
  readonly body: Uint8Array;
  readonly caller: Caller;
  /** Who sent it (the socket's address), for the audit of a refused token. */
  readonly remote: string | undefined;
  /** The request's headers, for MCP's checks of headers against the body; absent elsewhere. */
  readonly headers?: Readonly<Record<string, string | string[] | undefined>>;
  /** The serving thread's span of the request (W3C `traceparent`), when traced: the worker's spans are its children. */
  readonly trace?: Readonly<Record<string, string>>;
}

export type ToWorker =
  | ({
      readonly kind: 'run';
      readonly id: number;
      readonly tenant: string;
      readonly limits: TenantLimits;
    } & WorkRequest)
  /** Open the tenant's file now (a one-file server at its start: a bad file refuses the start). */
  | { readonly kind: 'open'; readonly id: number; readonly tenant: string; readonly limits: TenantLimits }
  /**
   * Copy the replicated tenant's file, its write-ahead log checkpointed into it, to `to`: a snapshot at the sequence
   * its reply's change gets in the log.
   */
  | {
      readonly kind: 'snapshot';
      readonly id: number;
      readonly tenant: string;
      readonly limits: TenantLimits;
      readonly to: string;
    }
  /** Close the tenant's file once its queued requests are done (evicted, its quotas changed, deleted, stopping). */
  | { readonly kind: 'close'; readonly id: number; readonly tenant: string }
  /** Export the spans still batched (the server is stopping); answered once they are out, or after a bounded wait. */
  | { readonly kind: 'flush'; readonly id: number; readonly tenant: typeof ONE_FILE };

/** The answer to one message: an HTTP status and the JSON bytes to write, serialized in the worker. */
export interface WorkerReply {
  readonly id: number;
  readonly status: number;
  /** JSON text (small answers) or its UTF-8 bytes (large ones, transferred, not copied); none for a bare 202. */
  readonly body: string | Uint8Array | undefined;
  /** Milliseconds the worker spent on it: what the tenant's cost quota is charged. */
  readonly ms: number;
  /** MCP tool calls it made, for the server's fenec_mcp_tool_calls_total. */
  readonly tools?: readonly (readonly [string, ToolOutcomeLabel])[];
  /** Quotas that refused statements of it (collections, rows, bytes), for fenec_tenant_quota_refusals_total. */
  readonly quotas?: readonly QuotaKind[];
  /** A 403 insufficient_scope: the OAuth scope it needs, for the answer's WWW-Authenticate. */
  readonly scope?: string | undefined;
  /** Seconds for the answer's Retry-After (an embedder away, the tenant's embedding quota). */
  readonly retryAfter?: number;
  /** The embedder calls it made. */
  readonly embedder?: readonly EmbedderCall[];
  /**
   * A replicated tenant's commits since the last reply, its own and any other (an expiry sweep, a vector index
   * stored): node/storage/wal-tail.ts's encoding, to be in the log before the answer is given.
   */
  readonly change?: Uint8Array;
}

/**
 * A worker's running request, in memory the serving thread reads without a message (the worker may
 * be inside a statement and deaf to messages): the request's id (0: none) and its deadline (epoch
 * ms; Infinity while the tenant's file opens).
 */
export class RunningSlot {
  readonly #ids: Int32Array;
  readonly #deadlines: Float64Array;

  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(16)) {
    this.#ids = new Int32Array(buffer, 0, 1);
    this.#deadlines = new Float64Array(buffer, 8, 1);
  }

  /** Written before the id, so that a reader that sees the id sees its deadline. */
  start(id: number, deadline: number): void {
    this.#deadlines[0] = deadline;
    Atomics.store(this.#ids, 0, id);
  }

  end(): void {
    Atomics.store(this.#ids, 0, 0);
  }

  /** The request running past its deadline at `now`, or 0. */
  overdue(now: number): number {
    const id = Atomics.load(this.#ids, 0);
    if (id === 0 || now <= this.#deadlines[0]!) return 0;
    // The same id read again: the deadline read between belongs to it, not to the next request.
    return Atomics.load(this.#ids, 0) === id ? id : 0;
  }

  /** The request running now, or 0. */
  get running(): number {
    return Atomics.load(this.#ids, 0);
  }
}
