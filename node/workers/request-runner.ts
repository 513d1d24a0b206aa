/**
 * A request's work, as a worker thread does it: the body of `/query` parsed and its statement run
 * (a `get … limit N` as a page, with next_cursor), one MCP message answered, the file's revocations
 * listed or added; schema changes and revocations audited before the answer leaves; the answer
 * serialized here, so that the serving thread only writes bytes.
 */
import { Audit, subjectOf } from '../../shared/audit.js';
import { EMPTY_POLICY, grantedTools, type Policy } from '../../shared/auth/policy.js';
import type { Statement } from '../../shared/fenecql/ast.js';
import { auditedChange } from '../../shared/fenecql/kinds.js';
import { asFenecError, FenecError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { McpEndpoint } from '../../shared/mcp/endpoint.js';
import { CursorKeeper, cursorSubject } from '../../shared/paging/cursor.js';
import { Pager, pages } from '../../shared/paging/pager.js';
import type { ExecuteOptions, FenecDatabase } from '../database.js';
import type { Caller } from '../../shared/http/front-door.js';
import { parseQueryBody, parseRevocationBody } from './query-body.js';
import { answerText } from '../query/execute/answer-text.js';
import type { Answer } from '../../shared/answer.js';
import type { Revocation, Revocations } from '../storage/revocations.js';
import type { WorkRequest } from './protocol.js';
import { scopedTools, scopeOfStatement, type FenecScope } from '../../shared/auth/oauth/scopes.js';
import { STATEMENT_KINDS } from '../../shared/fenecql/kinds.js';
import { TOOL_NAMES } from '../../shared/mcp/tools.js';
import { EmbeddingsWanted } from '../embedder/round.js';

/** What the runner needs of a database: statements (as text, or as trees for MCP and pages) in, answers out. */
export type Executor = Pick<FenecDatabase, 'execute' | 'executeStatement' | 'statementOf'>;

/** A status and the answer's JSON; no JSON for MCP's bare 202. */
export interface Answered {
  readonly status: number;
  readonly json: string | undefined;
  /** A 403 insufficient_scope: the OAuth scope the call needs. */
  readonly scope?: string;
}

export interface RunnerConfig {
  /** Refuse every write (--http-read-only). */
  readonly httpReadOnly: boolean;
  /** What every JWT is held to: its tenant's policy, --policy, or none (then no collection). */
  readonly policy: Policy | undefined;
  /** The key cursors are signed with (the server's). */
  readonly cursorSecret: Uint8Array;
  /** The tenant served (null: a one-file server), as the audit names it. */
  readonly tenant: string | null;
}

export class RequestRunner {
  readonly #db: Executor;
  readonly #readOnly: boolean;
  /** The server token's options (MCP tools are bounded by MCP's own bounds; /query adds its cap). */
  readonly #serverOptions: ExecuteOptions;
  readonly #policy: Policy;
  readonly #tenant: string | null;
  readonly #revocations: Revocations;
  readonly #audit: Audit;
  readonly #logger: Logger;
  readonly #mcp: McpEndpoint<ExecuteOptions> | undefined;
  /** Pages of `get … limit N` (next_cursor) and their continuations (cursor). */
  readonly #pager: Pager<ExecuteOptions>;
  readonly #granted = new WeakMap<object, ReadonlySet<string> | undefined>();

  constructor(
    config: RunnerConfig,
    db: Executor,
    revocations: Revocations,
    logger: Logger,
    audit: Audit = Audit.off,
    mcp?: McpEndpoint<ExecuteOptions>,
  ) {
    this.#db = db;
    this.#readOnly = config.httpReadOnly;
    this.#serverOptions = Object.freeze({ readOnly: config.httpReadOnly });
    this.#policy = config.policy ?? EMPTY_POLICY;
    this.#tenant = config.tenant;
    this.#revocations = revocations;
    this.#audit = audit;
    this.#logger = logger;
    this.#mcp = mcp;
    this.#pager = new Pager(db, new CursorKeeper(config.cursorSecret));
  }

  /** The request's work, by its route, under the caller's rights. Never throws. */
  run(work: WorkRequest, body: Buffer, maxAnswerBytes: number): Answered {
    try {
      const caller = work.caller;
      if (caller.kind === 'jwt') {
        const revoked = this.#revocations.refusal(caller.claims);
        if (revoked !== undefined) {
          this.#audit.auth('revoked', work.remote, work.route);
          throw revoked;
        }
      }
      switch (work.route) {
        case '/query':
          return this.#query(body, caller, maxAnswerBytes);
        case '/_mcp':
          return this.#message(body, caller, work.headers ?? {});
        case 'GET /_revocations':
          return { status: 200, json: JSON.stringify({ revocations: this.#revocations.list().map(revocationJson) }) };
        case 'POST /_revocations':
          return this.#revoke(body);
      }
    } catch (err) {
      return refusal(err, this.#logger, work.route);
    }
  }

  /**
   * The refusal of a request that failed outside its run (its texts could not be embedded): an MCP tool call is
   * answered it as the tool's refusal, as a model reads every other; anything else as the error.
   */
  refused(work: WorkRequest, body: Buffer, err: unknown): Answered {
    if (work.route === '/_mcp' && this.#mcp !== undefined) {
      const headers = work.headers ?? {};
      const reply = this.#mcp.refuse(
        body.toString('utf8'),
        this.#toolCaller(work.caller),
        { error: asFenecError(err) },
        (name) => {
          const value = headers[name];
          return Array.isArray(value) ? value.join(', ') : value;
        },
      );
      if (reply?.json !== undefined) return { status: reply.status, json: reply.json };
    }
    return refusal(err, this.#logger, work.route);
  }

  #query(body: Buffer, caller: Caller, maxAnswerBytes: number): Answered {
    const { statement, params, cursor } = parseQueryBody(body);
    const options: ExecuteOptions =
      caller.kind === 'server'
        ? { ...this.#serverOptions, maxAnswerBytes }
        : { readOnly: this.#readOnly, jwt: caller.claims, policy: this.#policy, maxAnswerBytes };
    // The database's own parse, kept for the execute that follows: the text is parsed once.
    const tree = this.#db.statementOf(statement);
    // An OAuth token reads with fenec:read and writes with fenec:write, within what its policy grants.
    const scope = caller.kind === 'jwt' ? scopeRefusal(caller.scopes, STATEMENT_KINDS[tree.kind].writes) : undefined;
    if (scope !== undefined) return scope;
    const text = answerText(this.#read(statement, tree, params, cursor, options, caller), maxAnswerBytes);
    // Written (and flushed) before the answer leaves: an answered change is an audited one.
    if (this.#audit.enabled) this.#auditSchema(tree, caller);
    return { status: 200, json: text };
  }

  /**
   * A statement's answer: a `get` with a limit (or a cursor) a page of its rows, with next_cursor
   * when more follow; any other statement as the database answers it.
   */
  #read(
    statement: string,
    tree: Statement,
    params: readonly unknown[],
    cursor: string | undefined,
    options: ExecuteOptions,
    caller: Caller,
  ): Answer {
    if (tree.kind !== 'Get' || (cursor === undefined && (tree.limit === undefined || !pages(tree)))) {
      if (cursor !== undefined) {
        throw new FenecError(
          'bad_request',
          '"cursor" continues a get whose answer carried next_cursor; this statement is not one',
          { hint: 'leave "cursor" out' },
        );
      }
      return this.#db.execute(statement, params, options);
    }
    const subject = cursorSubject(caller.kind === 'server' ? undefined : caller.claims);
    // A page's rows are read as rows (its keys make the cursor), bounded by its limit; the cap is held by answerText.
    const { maxAnswerBytes, ...rowOptions } = options;
    return this.#pager.read({ statement: tree, params, options: rowOptions, cursor, scope: '/query', subject })
      .answer as Answer;
  }

  /** One MCP message: its answer is JSON-RPC's, whatever the tool said; a notification is a bare 202. */
  #message(body: Buffer, caller: Caller, headers: Readonly<Record<string, string | string[] | undefined>>): Answered {
    const reply = this.#mcp!.handle(body, this.#toolCaller(caller), (name) => {
      const value = headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    });
    return { status: reply.status, json: reply.json, ...(reply.scope === undefined ? {} : { scope: reply.scope }) };
  }

  /** Who calls a tool: the caller's options, the tools its policy and scopes grant, its cursors' subject. */
  #toolCaller(caller: Caller) {
    const options: ExecuteOptions =
      caller.kind === 'server'
        ? this.#serverOptions
        : { readOnly: this.#readOnly, jwt: caller.claims, policy: this.#policy };
    const granted = caller.kind === 'server' ? undefined : this.#grants(caller.claims);
    // An OAuth token's scopes narrow the tools its policy grants; those left out are answered 403, naming the scope.
    const scoped =
      caller.kind === 'jwt' && caller.scopes !== undefined
        ? scopedTools(caller.scopes, granted, TOOL_NAMES)
        : { tools: granted, needed: undefined };
    const subject = cursorSubject(caller.kind === 'server' ? undefined : caller.claims);
    return {
      options,
      scoped: caller.kind === 'jwt',
      tools: scoped.tools,
      subject,
      scopeNeeded: scoped.needed,
    };
  }

  /** A token's tools, worked out once per token: the verifier hands back the same claims for it. */
  #grants(claims: object): ReadonlySet<string> | undefined {
    if (this.#granted.has(claims)) return this.#granted.get(claims);
    const tools = grantedTools(this.#policy, claims as Readonly<Record<string, unknown>>);
    this.#granted.set(claims, tools);
    return tools;
  }

  /** POST /_revocations: {"jti": …} or {"sub": …}, the server's token only (the guard saw to it). */
  #revoke(body: Buffer): Answered {
    const { kind, value } = parseRevocationBody(body);
    const answer = this.#revocations.revoke(kind, value);
    // Written (and flushed) before the answer leaves, as every change of who may do what.
    this.#audit.revocation(kind, value, this.#tenant, answer.created);
    return {
      status: answer.created ? 201 : 200,
      json: JSON.stringify({ revoked: revocationJson(answer.revocation), created: answer.created }),
    };
  }

  #auditSchema(statement: Statement, caller: Caller): void {
    const change = auditedChange(statement);
    if (change === undefined) return;
    const who = caller.kind === 'server' ? caller : { kind: 'jwt' as const, sub: subjectOf(caller.claims) };
    this.#audit.schema(change.statement, change.collection, who);
  }
}

/** The 403 of an OAuth token without the scope a /query statement needs; undefined when it has it (or is none). */
function scopeRefusal(scopes: readonly FenecScope[] | undefined, writes: boolean): Answered | undefined {
  if (scopes === undefined) return undefined;
  const needed = scopeOfStatement(writes);
  if (scopes.includes(needed)) return undefined;
  const error = new FenecError(
    'insufficient_scope',
    `this statement ${writes ? 'writes' : 'reads'}: it needs the OAuth scope ${needed}`,
    {
      hint: `sign in again asking for ${needed}`,
    },
  );
  return { status: error.status, json: JSON.stringify(error.toJSON()), scope: needed };
}

/** A refusal as its answer; a fault (5xx) is logged too. */
export function refusal(err: unknown, logger: Logger, route: string): Answered {
  const error = asFenecError(err);
  // A pass stopped for texts to embed is no fault: its answer is never sent (embedding-passes.ts).
  if (error.status >= 500 && !(err instanceof EmbeddingsWanted))
    logger.error({ err: error.cause ?? error, code: error.code, route }, 'request failed');
  return { status: error.status, json: JSON.stringify(error.toJSON()) };
}

/** A revocation as answers show it: its time as an ISO date. */
function revocationJson(revocation: Revocation): Record<string, string> {
  return { [revocation.kind]: revocation.value, at: new Date(revocation.at).toISOString() };
}
