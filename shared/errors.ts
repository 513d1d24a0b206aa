/**
 * The one error type of fenecdb and its catalogue.
 *
 * Every refusal the product makes is a FenecError with a stable `code` from CATALOGUE, the HTTP status
 * that fits, and a message that says what to change. docs/errors.md lists the same codes; a test
 * diffs the two in both directions, so a code cannot be added or dropped silently.
 */

/** Where in a statement an error was found (1-based line and column, 0-based offset). */
export interface Position {
  readonly line: number;
  readonly column: number;
  readonly offset: number;
}

interface CodeEntry {
  readonly status: number;
  /** What the code means, for docs/errors.md and for a message-less throw. */
  readonly summary: string;
}

export const CATALOGUE = {
  // Requests
  bad_json: { status: 400, summary: 'The request body is not valid JSON, or not UTF-8.' },
  bad_request: { status: 400, summary: 'The request is JSON but not of the expected shape.' },
  payload_too_large: { status: 413, summary: 'The request body is larger than the server accepts.' },
  unsupported_encoding: {
    status: 415,
    summary: 'The request body is compressed (Content-Encoding): bodies are taken as they are.',
  },
  not_found: {
    status: 404,
    summary: 'No such route, under /t/<tenant>/ too (its tenant name valid); the message lists the routes served.',
  },
  method_not_allowed: { status: 405, summary: 'The route exists but not for this HTTP method.' },
  unavailable: {
    status: 503,
    summary:
      'The server that holds the data does not answer, or is stopping; or a replicated node (`--nats`) cannot renew its lease, and another node may serve the tenant now.',
  },
  file_busy: {
    status: 503,
    summary:
      'Another program holds a lock on the file (a write of its own) longer than a statement waits: nothing was changed.',
  },
  statement_timeout: {
    status: 504,
    summary:
      "The statement ran past its time limit (--statement-timeout, 5 s by default; a tenant's statementTimeoutMs) and was stopped; it changed nothing.",
  },
  answer_too_large: {
    status: 413,
    summary:
      "The answer is past its bound — on /query the answer cap (--max-answer, 32 MB by default; a tenant's maxAnswerBytes), on an MCP tool 100 rows and 64 KB: refused whole, never cut; the hint says how to page, or a narrower call that fits.",
  },

  // Tenants (hosted)
  invalid_tenant: {
    status: 400,
    summary: 'The path names a tenant outside [a-z0-9][a-z0-9-]{0,62}, whatever route follows it.',
  },
  unknown_tenant: {
    status: 404,
    summary: 'No tenant of that name exists on this node (create it with PUT /t/<tenant>).',
  },
  wrong_tenant: { status: 403, summary: "The token's tenant claim names another tenant than the path." },
  quota_exceeded: {
    status: 429,
    summary:
      'The tenant is past one of its quotas (requests per second, worker time per second, collections, rows); Retry-After says when to try again for the rate and the worker time.',
  },
  storage_full: { status: 507, summary: "The tenant's file is at its byte quota; nothing already written is lost." },
  tenant_moving: {
    status: 429,
    summary:
      'The tenant is paused while it is copied (a move or a restore), or has moved to another node; Retry-After says when to try again.',
  },
  tenant_exists: {
    status: 409,
    summary: 'A restore names a tenant that exists; it replaces one only when asked (replace).',
  },
  invalid_backup: { status: 400, summary: "A restore's body is not a whole fenecdb tenant file." },
  log_unavailable: {
    status: 503,
    summary:
      "A replicated node (--nats) could not get the write into the replicated log in time (--nats-ack-timeout): the write's outcome is unknown — read it back before making it again; the tenant takes no write until it has caught up from the log. Retry-After says when to try again.",
  },
  tenant_fenced: {
    status: 503,
    summary:
      'Another node took the tenant (its lease lapsed, or the tenant moved) and wrote to it first: this write was not made. Retry-After says when to try again; a router sends it to the new node.',
  },

  // Who is asking
  unauthorized: { status: 401, summary: 'A token is required and none was given.' },
  invalid_token: { status: 401, summary: 'The token given is not valid.' },
  revoked: {
    status: 401,
    summary:
      'The token was revoked (fenec token revoke): by its jti, or with every token of its sub issued before the revocation.',
  },
  forbidden_host: { status: 403, summary: 'The Host header does not name this machine and no token is configured.' },
  forbidden_origin: { status: 403, summary: 'The Origin header names a site this server does not serve.' },
  read_only: { status: 403, summary: 'The server or file is read-only and the statement writes.' },
  forbidden: { status: 403, summary: "The token's grants or policy refuse the statement." },
  insufficient_scope: {
    status: 403,
    summary:
      'An OAuth token without the scope the call needs (fenec:read, fenec:memory or fenec:write); WWW-Authenticate names it.',
  },

  // Parsing
  syntax_error: {
    status: 400,
    summary: 'The statement does not follow the grammar: what was expected and what was found.',
  },
  invalid_character: { status: 400, summary: 'A character that starts no token.' },
  unterminated_string: { status: 400, summary: 'A string literal has no closing quote.' },
  invalid_escape: {
    status: 400,
    summary:
      'A string literal holds an escape JSON does not define, or a lone UTF-16 surrogate (half of a pair: text must be Unicode).',
  },
  invalid_number: {
    status: 400,
    summary:
      "A number is malformed, outside the integer range (±2^53), not finite (past ±1.8e308, or arithmetic that overflows), or past float32's range (±3.4e38) in a vector.",
  },
  invalid_duration: { status: 400, summary: 'A duration has an unknown unit or is not a whole number.' },
  invalid_name: { status: 400, summary: "A name is too long or reserved (names starting with _ are the system's)." },
  invalid_parameter: { status: 400, summary: 'A parameter reference outside $1…$99, or a malformed $jwt claim.' },
  invalid_type: {
    status: 400,
    summary: 'A field type that does not exist or is out of range (vector<N>, 1 ≤ N ≤ 4096).',
  },
  invalid_annotation: {
    status: 400,
    summary: 'An unknown annotation, or one with wrong arguments or on a field type it does not fit.',
  },
  multiple_statements: { status: 400, summary: 'A request holds more than one statement.' },
  too_complex: {
    status: 400,
    summary:
      'A statement or a value past a limit (docs/fenecql.md, Limits): nesting deeper than 256 levels, a statement longer than 1 048 576 characters, more than 2 000 terms in one condition or row, a like pattern over 50 000 bytes.',
  },

  // Meaning
  unknown_collection: { status: 404, summary: 'The statement names a collection that does not exist.' },
  collection_exists: { status: 409, summary: 'create collection names a collection that exists (use if not exists).' },
  unknown_field: { status: 400, summary: 'A field that the collection does not have.' },
  field_exists: { status: 409, summary: 'alter collection … add names a field the collection has.' },
  duplicate_field: { status: 400, summary: 'A field named twice in one definition, object or select.' },
  type_mismatch: { status: 400, summary: 'A value or expression of a type that the field or operator does not take.' },
  missing_required: { status: 400, summary: 'A write leaves out a required field, or sets it to null.' },
  vector_length: { status: 400, summary: 'A vector with another number of components than its field takes.' },
  invalid_value: {
    status: 400,
    summary:
      'A value of the right type that is still not acceptable (a malformed timestamp, a negative limit, a string that is not Unicode).',
  },
  missing_parameter: { status: 400, summary: 'The statement uses $N and params has fewer than N values.' },
  invalid_statement: {
    status: 400,
    summary: 'A statement that parses but cannot run as written (put without id, set on id, …).',
  },
  unique_violation: { status: 409, summary: 'A write would give two rows the same value of a unique field.' },

  // MCP tools
  invalid_argument: {
    status: 400,
    summary: 'An MCP tool argument the tool does not take, or a value of the wrong shape for it.',
  },

  // Cursors (paging)
  invalid_cursor: {
    status: 400,
    summary: 'A cursor this server did not make, or one altered: pass next_cursor exactly as it was answered.',
  },
  cursor_mismatch: {
    status: 400,
    summary:
      'A cursor made for another read: it continues only the statement or call (its arguments but limit and the fields answered) it was answered to.',
  },
  foreign_cursor: {
    status: 403,
    summary: 'A cursor answered to another token: a cursor continues a read for the token it was answered to alone.',
  },
  expired_cursor: {
    status: 410,
    summary:
      'A cursor made before the server started again (or by another server), or more than 24 hours ago: start the walk again.',
  },

  // Programs
  invalid_option: { status: 400, summary: 'A program option (flag) with a value it does not take.' },

  // The file
  lock_held: { status: 409, summary: "Another process holds the file's lock." },
  cannot_open: { status: 500, summary: 'The file cannot be opened or is not a fenecdb file.' },
  vector_engine: {
    status: 500,
    summary: 'The vector engine (the Faiss addon) is not built, failed, or was given a damaged index.',
  },
  internal: { status: 500, summary: 'A fault inside the server; the request changed nothing.' },

  // The embedder (--embedder-url)
  embedder_unavailable: {
    status: 503,
    summary:
      'The embedder does not answer: the connection is refused, a call ran past its time limit, or it answered 429 or 502–504 past the retries; nothing was written, and Retry-After says when to try again.',
  },
  embedder_failed: {
    status: 502,
    summary:
      "The embedder answered something unusable: not JSON, not the embeddings shape, vectors of the wrong dimension, or a refusal (a 4xx, a 500) — quoted in the message; an input past the model's length is named.",
  },
  embedder_missing: {
    status: 409,
    summary:
      'The statement needs an embedder (an @embed field written without its vector, near with words) and the server has none: start it with --embedder-url and --embedder-model, or give the vector.',
  },
  embedder_mismatch: {
    status: 409,
    summary:
      "The server's embedder (model, dimension) is not the one a field's vectors were made with: both are named; start the server with the field's model, or make the field again.",
  },
} as const satisfies Record<string, CodeEntry>;

export type ErrorCode = keyof typeof CATALOGUE;

export interface FenecErrorOptions {
  readonly hint?: string;
  readonly position?: Position;
  /** In a bulk write (`insert into c $1`), the index of the refused row in the parameter's array. */
  readonly row?: number;
  /** In a load refused part way (an `insert into c $1` that embeds, a chunk at a time), the rows committed first. */
  readonly committed?: number;
  readonly cause?: unknown;
  /** The WWW-Authenticate header its answer carries (a 401 or 403 of a server that takes OAuth tokens). */
  readonly challenge?: string;
  /** The Retry-After its answer carries, in seconds (a refusal that passes: the log catching up, a new node). */
  readonly retryAfter?: number;
}

/**
 * The longest message an error carries: what it repeats of the input (a name, a key) is cut, never a megabyte echoed
 * back.
 */
export const MAX_MESSAGE_LENGTH = 2_000;

function bounded(message: string): string {
  if (message.length <= MAX_MESSAGE_LENGTH) return message;
  // Never half of a surrogate pair at the cut.
  const code = message.charCodeAt(MAX_MESSAGE_LENGTH - 1);
  const cut = code >= 0xd800 && code <= 0xdbff ? MAX_MESSAGE_LENGTH - 1 : MAX_MESSAGE_LENGTH;
  return `${message.slice(0, cut)}… (${message.length - cut} characters more)`;
}

export class FenecError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly hint: string | undefined;
  readonly position: Position | undefined;
  readonly row: number | undefined;
  readonly committed: number | undefined;
  readonly challenge: string | undefined;
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, message: string, options: FenecErrorOptions = {}) {
    super(bounded(message), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FenecError';
    this.code = code;
    this.status = CATALOGUE[code].status;
    this.hint = options.hint;
    this.position = options.position;
    this.row = options.row;
    this.committed = options.committed;
    this.challenge = options.challenge;
    this.retryAfter = options.retryAfter;
  }

  /**
   * The wire shape every door answers with: `{"error": {"code", "message", "hint"?, "line"?, "column"?, "row"?,
   * "committed"?}}`.
   */
  toJSON(): { error: Record<string, string | number> } {
    const error: Record<string, string | number> = { code: this.code, message: this.message };
    if (this.hint !== undefined) error.hint = this.hint;
    if (this.position !== undefined) {
      error.line = this.position.line;
      error.column = this.position.column;
    }
    if (this.row !== undefined) error.row = this.row;
    if (this.committed !== undefined) error.committed = this.committed;
    return { error };
  }
}

/** Any thrown value as a FenecError: ours pass through, anything else is an internal fault. */
export function asFenecError(err: unknown): FenecError {
  if (err instanceof FenecError) return err;
  return new FenecError('internal', 'internal error; the request changed nothing', { cause: err });
}
