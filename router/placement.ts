/**
 * Which node holds a tenant: a pin from `--placement FILE` when there is one, else rendezvous
 * (highest random weight) hashing of the tenant over the nodes' names. Every router with the same
 * `--nodes` and placement file picks the same node, without talking to any other: that is what
 * makes routers stateless and interchangeable. Adding a node moves only the tenants it now wins.
 *
 * A tenant moved by `fenec tenant move` leaves a tombstone on the node it left; every router reads the
 * nodes' tombstones (`GET /_moved`, each second) and follows them, so a move needs no placement edit
 * and no restart. The placement file is re-read when it changes.
 */
import { FenecError } from '../shared/errors.js';
import { rendezvous } from '../shared/rendezvous.js';
import type { Directory } from '../shared/nats/directory.js';
import { isTenantName } from '../shared/tenant-name.js';

export interface NodeTarget {
  /** The node's name, as `--nodes` gives it: stable across address changes (hashing uses it). */
  readonly name: string;
  /** Its base URL, `http://host:port`. */
  readonly url: URL;
}

const NODE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** Tenants whose node was computed, remembered: hashing costs a sha256 per node. */
const MEMO_SIZE = 10_000;

/**
 * Reads `--nodes name=url,…`.
 *
 * @throws FenecError `invalid_option`: an empty list, a malformed entry, a name given twice, a URL that is not http(s).
 */
export function parseNodes(text: string): readonly NodeTarget[] {
  const nodes: NodeTarget[] = [];
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')) {
    const eq = entry.indexOf('=');
    const name = eq === -1 ? '' : entry.slice(0, eq);
    const address = eq === -1 ? '' : entry.slice(eq + 1);
    if (!NODE_NAME.test(name))
      throw invalidNodes(`entry ${JSON.stringify(entry)} is not NAME=URL (NAME: letters, digits, . _ -)`);
    let url: URL;
    try {
      url = new URL(address);
    } catch {
      throw invalidNodes(`node ${name}'s URL ${JSON.stringify(address)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw invalidNodes(`node ${name}'s URL must be http:// or https://`);
    if (url.pathname !== '/' || url.search !== '')
      throw invalidNodes(`node ${name}'s URL must be a bare origin (no path), like http://10.0.0.5:8080`);
    if (nodes.some((node) => node.name === name)) throw invalidNodes(`node ${name} is named twice`);
    nodes.push(Object.freeze({ name, url }));
  }
  if (nodes.length === 0)
    throw invalidNodes('names no node; give name=url,… e.g. a=http://127.0.0.1:8081,b=http://127.0.0.1:8082');
  return Object.freeze(nodes);
}

/**
 * Reads a placement file: one pin a line, `TENANT NODE`; `#` starts a comment. A later line for
 * the same tenant wins, so a move appends a line.
 *
 * @throws FenecError `invalid_option` naming `source:line`: a bad tenant name, an unknown node.
 */
export function parsePlacement(
  text: string,
  source: string,
  nodes: readonly NodeTarget[],
): ReadonlyMap<string, string> {
  const pins = new Map<string, string>();
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    const [tenant = '', node = '', ...rest] = line.split(/\s+/);
    const where = `${source}:${index + 1}`;
    if (rest.length > 0 || node === '')
      throw new FenecError('invalid_option', `${where}: a pin is "TENANT NODE", not ${JSON.stringify(line)}`);
    if (!isTenantName(tenant))
      throw new FenecError(
        'invalid_option',
        `${where}: ${JSON.stringify(tenant)} is not a tenant name ([a-z0-9][a-z0-9-]{0,62})`,
      );
    if (!nodes.some((target) => target.name === node)) {
      throw new FenecError(
        'invalid_option',
        `${where}: node ${JSON.stringify(node)} is not in --nodes (${nodes.map((target) => target.name).join(', ')})`,
      );
    }
    pins.set(tenant, node);
  });
  return pins;
}

/** The node rendezvous hashing gives a tenant among `nodes` (not empty), by their names. */
export function rendezvousNode(tenant: string, nodes: readonly NodeTarget[]): NodeTarget {
  return rendezvous(tenant, nodes, (node) => node.name)!;
}

export class Placement {
  readonly nodes: readonly NodeTarget[];
  readonly #byName: ReadonlyMap<string, NodeTarget>;
  #pins: ReadonlyMap<string, string>;
  /** node → (tenant → the node it moved to), as each node's `GET /_moved` says. */
  readonly #moved = new Map<string, ReadonlyMap<string, string>>();
  readonly #memo = new Map<string, NodeTarget>();

  readonly #directory: Directory | undefined;

  constructor(nodes: readonly NodeTarget[], pins: ReadonlyMap<string, string> = new Map(), directory?: Directory) {
    this.nodes = nodes;
    this.#byName = new Map(nodes.map((node) => [node.name, node]));
    this.#pins = pins;
    this.#directory = directory;
  }

  /** The node that holds `tenant` (a valid tenant name). */
  nodeOf(tenant: string): NodeTarget {
    // Replicated nodes (--nats): the tenant's owner, else the live nodes' rendezvous; no live node known, the hash.
    if (this.#directory !== undefined) {
      const placed = this.#directory.placed(
        tenant,
        this.nodes.map((node) => node.name),
      );
      return (placed === undefined ? undefined : this.#byName.get(placed)) ?? this.#hashed(tenant);
    }
    const pinned = this.#pins.get(tenant);
    let node = pinned === undefined ? this.#hashed(tenant) : this.#byName.get(pinned)!;
    // A tenant moved away leaves a tombstone naming where it went: follow them (a tenant moved
    // a → b → c is found from a), never more hops than there are nodes.
    for (let hops = 0; hops < this.nodes.length; hops += 1) {
      const next = this.#byName.get(this.#moved.get(node.name)?.get(tenant) ?? '');
      if (next === undefined) break;
      node = next;
    }
    return node;
  }

  /** Takes a new placement file's pins (the router re-reads it when it changes). */
  setPins(pins: ReadonlyMap<string, string>): void {
    this.#pins = pins;
  }

  /** Takes the tenants that moved away from `node`, as that node lists them. */
  setMoved(node: string, moved: ReadonlyMap<string, string>): void {
    this.#moved.set(node, moved);
  }

  /** Records one move at once (the router that made it need not wait for its next read of the node). */
  learnMove(tenant: string, from: string, to: string): void {
    this.#moved.set(from, new Map([...(this.#moved.get(from) ?? []), [tenant, to]]));
  }

  #hashed(tenant: string): NodeTarget {
    let node = this.#memo.get(tenant);
    if (node === undefined) {
      node = rendezvousNode(tenant, this.nodes);
      if (this.#memo.size >= MEMO_SIZE) this.#memo.clear();
      this.#memo.set(tenant, node);
    }
    return node;
  }
}

function invalidNodes(what: string): FenecError {
  return new FenecError('invalid_option', `--nodes ${what}`);
}
