/**
 * Moving a tenant from node to node over HTTP, orchestrated by the router that is asked
 * (`POST /t/<tenant>/_move {"to": NODE}`, `fenec tenant move`), with no shared disk:
 *
 *   1. pause it on its node: new requests get 429 `tenant_moving` + Retry-After, the ones under way finish;
 *   2. stream its backup (SQLite's backup API on the node) straight into a restore on the target;
 *   3. carry its own policy file, if it has one;
 *   4. leave a tombstone on the old node naming the target, which deletes the old copy there.
 *
 * Every write acknowledged before the pause is in the copy; none is acknowledged after it by the old
 * node. Each router learns the tombstone within a second (`GET /_moved` of every node) and sends the
 * tenant's requests to the target from then on; this one learns it at once. A failure before step 4
 * resumes the tenant where it was and removes the copy made on the target (a target that holds a
 * tenant of that name already is refused: nothing there is overwritten).
 */
import * as http from 'node:http';
import * as https from 'node:https';
import { CATALOGUE, FenecError, type ErrorCode } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Directory } from '../shared/nats/directory.js';
import type { NodeTarget, Placement } from './placement.js';

/** How often each router reads every node's tombstones. */
const MOVED_POLL_MS = 1000;

export interface NodeClient {
  readonly httpAgent: http.Agent;
  readonly httpsAgent: https.Agent;
  readonly timeoutMs: number;
}

export interface Moved {
  readonly moved: string;
  readonly from: string;
  readonly to: string;
  readonly bytes: number;
  readonly ms: number;
}

export async function moveTenant(
  tenant: string,
  to: NodeTarget,
  placement: Placement,
  client: NodeClient,
  authorization: string,
): Promise<Moved> {
  const from = placement.nodeOf(tenant);
  if (from.name === to.name) throw new FenecError('bad_request', `tenant ${tenant} is on node ${to.name} already`);
  const started = performance.now();
  await call(client, from, 'POST', `/t/${tenant}/_pause`, authorization);
  let copied = false;
  try {
    const bytes = await copy(client, tenant, from, to, authorization);
    copied = true;
    // The tenant's own policy goes with it: without it the target would hold its tokens to the node's.
    const { policy } = (await call(client, from, 'GET', `/t/${tenant}/_policy`, authorization)) as {
      policy: string | null;
    };
    if (policy !== null)
      await call(client, to, 'PUT', `/t/${tenant}/_policy`, authorization, JSON.stringify({ policy }));
    await call(client, from, 'POST', `/t/${tenant}/_moved?to=${encodeURIComponent(to.name)}`, authorization);
    placement.learnMove(tenant, from.name, to.name);
    return { moved: tenant, from: from.name, to: to.name, bytes, ms: Math.round(performance.now() - started) };
  } catch (err) {
    await call(client, from, 'POST', `/t/${tenant}/_resume`, authorization).catch(() => undefined);
    if (copied) await call(client, to, 'DELETE', `/t/${tenant}`, authorization).catch(() => undefined);
    throw err;
  }
}

/**
 * Reads every node's tombstones each second into `placement`, until the returned function is called.
 * A node that does not answer keeps what was last read of it.
 */
export function watchMoves(
  placement: Placement,
  client: NodeClient,
  authorization: string,
  logger?: Logger,
): () => void {
  let stopped = false;
  const readAll = async (): Promise<void> => {
    await Promise.all(
      placement.nodes.map(async (node) => {
        try {
          const answer = (await call(client, node, 'GET', '/_moved', authorization)) as {
            moved: Record<string, string>;
          };
          placement.setMoved(node.name, new Map(Object.entries(answer.moved)));
        } catch (err) {
          logger?.debug({ node: node.name, err: (err as Error).message }, 'tombstones not read');
        }
      }),
    );
  };
  const loop = (): void => {
    if (stopped) return;
    void readAll().finally(() => {
      if (!stopped) setTimeout(loop, MOVED_POLL_MS).unref();
    });
  };
  loop();
  return () => {
    stopped = true;
  };
}

/** GET the backup from one node, PUT it to the other as it arrives; resolves with its size. */
function copy(
  client: NodeClient,
  tenant: string,
  from: NodeTarget,
  to: NodeTarget,
  authorization: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const source = request(client, from, 'GET', `/t/${tenant}/_backup`, authorization, (backup) => {
      if (backup.statusCode !== 200) return refusalOf(backup, from).then(reject, reject);
      const bytes = Number(backup.headers['content-length'] ?? 0);
      const target = request(
        client,
        to,
        'PUT',
        `/t/${tenant}/_backup`,
        authorization,
        (restored) => {
          if (restored.statusCode === 200 || restored.statusCode === 201) {
            restored.resume();
            return resolve(bytes);
          }
          refusalOf(restored, to).then(reject, reject);
        },
        {
          'content-type': 'application/vnd.sqlite3',
          'content-length': String(bytes),
          'fenec-quotas': String(backup.headers['fenec-quotas'] ?? ''),
        },
      );
      target.on('error', (err) => reject(unavailable(to, err)));
      backup.on('error', (err) => {
        target.destroy();
        reject(unavailable(from, err));
      });
      backup.pipe(target);
    });
    source.on('error', (err) => reject(unavailable(from, err)));
    source.end();
  });
}

/** One call to a node's admin route; resolves with its JSON answer, rejects with its refusal. */
function call(
  client: NodeClient,
  node: NodeTarget,
  method: string,
  path: string,
  authorization: string,
  body?: string,
): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      client,
      node,
      method,
      path,
      authorization,
      (answer) => {
        if (answer.statusCode !== 200) return refusalOf(answer, node).then(reject, reject);
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch {
            reject(unavailable(node, new Error('an answer that is not JSON')));
          }
        });
      },
      body === undefined
        ? {}
        : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
    );
    req.on('error', (err) => reject(unavailable(node, err)));
    req.end(body);
  });
}

function request(
  client: NodeClient,
  node: NodeTarget,
  method: string,
  path: string,
  authorization: string,
  onAnswer: (answer: http.IncomingMessage) => void,
  headers: Record<string, string> = {},
): http.ClientRequest {
  const url = new URL(path, node.url);
  const secure = url.protocol === 'https:';
  const req = (secure ? https : http).request(
    url,
    {
      method,
      headers: { authorization, ...headers },
      agent: secure ? client.httpsAgent : client.httpAgent,
      timeout: client.timeoutMs,
    },
    onAnswer,
  );
  req.on('timeout', () => req.destroy(new Error(`no answer within ${client.timeoutMs} ms`)));
  return req;
}

/** A node's refusal, as the FenecError it wrote (its code and message), said to come from that node. */
async function refusalOf(answer: http.IncomingMessage, node: NodeTarget): Promise<FenecError> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(chunk as Buffer);
  try {
    const { error } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      error: { code: string; message: string; hint?: string };
    };
    if (error.code in CATALOGUE) {
      return new FenecError(
        error.code as ErrorCode,
        `node ${node.name}: ${error.message}`,
        error.hint === undefined ? {} : { hint: error.hint },
      );
    }
  } catch {
    // not a refusal of ours: said below
  }
  return unavailable(node, new Error(`status ${answer.statusCode}`));
}

function unavailable(node: NodeTarget, err: Error): FenecError {
  return new FenecError(
    'unavailable',
    `node ${node.name} does not answer: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
    { hint: 'retry the move once the node answers' },
  );
}

/**
 * A replicated tenant's move (`--nats`): its owner set to `to` by compare-and-set in the directory. The new owner
 * catches up from the log as it sees the change (or at the tenant's next request); the old one's next write is
 * fenced by the log. Nothing is copied through the router.
 */
export async function moveOwner(
  directory: Directory,
  tenant: string,
  to: string,
): Promise<{ moved: string; from: string | null; to: string; ms: number }> {
  const started = Date.now();
  let from: string | null = null;
  const written = await directory.update(tenant, (held) => {
    if (held === undefined) return undefined;
    from = held.entry.owner;
    return { ...held.entry, owner: to };
  });
  if (written === undefined) throw new FenecError('unknown_tenant', `no tenant ${tenant} in the directory`);
  return { moved: tenant, from, to, ms: Date.now() - started };
}
