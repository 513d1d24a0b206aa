/**
 * The route table of fenec-server and of fenec-router: each route declared once — its methods, its path, who may
 * call it, its body limit, its handler — and looked up in one walk of the path's segments (a Map per segment, as
 * Fastify's find-my-way keeps a tree). The 404 and 405 answers, and every list of routes in an error, are built
 * from the table, so that they name exactly what is served.
 *
 * A path is written with literal segments, `<tenant>` (one segment, a tenant name, checked by
 * shared/tenant-name.ts), and a last `*` (any rest, the console's files).
 */
import { FenecError } from '../errors.js';
import { invalidTenant, isTenantName } from '../tenant-name.js';
import type { Access as DoorAccess } from './front-door.js';

/**
 * Who may call a route, as the front door asks: `public` (the front door is not asked: health, the console, the
 * OAuth resource metadata), `any` (the server's token, or a JWT under its policy), `server` (the server's token
 * only: the operator's routes).
 */
export type Access = 'public' | DoorAccess;

/**
 * The body a route takes: `none` (not read), `stream` (the handler reads it as it comes: a tenant's backup), or
 * the most bytes it may have (refused past it, 413, before a byte is read when Content-Length says so).
 */
export type BodyLimit = 'none' | 'stream' | number;

export interface Route<H> {
  /** Upper case; `*` takes any method (the router forwards, and the node answers for it). */
  readonly methods: readonly string[];
  readonly path: string;
  readonly access: Access;
  readonly body: BodyLimit;
  readonly handler: H;
}

/** A path the table does not serve, or serves for other methods. */
export interface Miss<H> {
  readonly error: FenecError;
  /** The methods the path takes, for `Allow` (a 405). */
  readonly allow?: string;
  /** A route of the path, for another method: a CORS preflight (OPTIONS) is answered for it. */
  readonly route?: Route<H>;
}

interface PathNode<H> {
  readonly literal: Map<string, PathNode<H>>;
  tenant: PathNode<H> | undefined;
  /** Routes of a `*` segment here: the rest of the path, whatever it is. */
  rest: Map<string, Route<H>> | undefined;
  /** Routes ending here, by method. */
  methods: Map<string, Route<H>> | undefined;
  /** The pattern of the path ending here (`/t/<tenant>/query`), for messages. */
  pattern: string;
}

const TENANT = '<tenant>';
const REST = '*';

function pathNode<H>(pattern: string): PathNode<H> {
  return { literal: new Map(), tenant: undefined, rest: undefined, methods: undefined, pattern };
}

export class RouteTable<H> {
  readonly routes: readonly Route<H>[];
  readonly #root: PathNode<H> = pathNode('');
  /** What serves the table, in messages: "this server", "the router". */
  readonly #who: string;

  constructor(who: string, routes: readonly Route<H>[]) {
    this.#who = who;
    this.routes = routes;
    for (const route of routes) this.#add(route);
  }

  #add(route: Route<H>): void {
    let at = this.#root;
    const segments = route.path.split('/').slice(1);
    for (const [i, segment] of segments.entries()) {
      const pattern = `${at.pattern}/${segment}`;
      if (segment === REST) {
        if (i !== segments.length - 1) throw new Error(`route ${route.path}: * must be the last segment`);
        at.rest ??= new Map();
        this.#put(at.rest, route);
        return;
      }
      if (segment === TENANT) {
        at = at.tenant ??= pathNode(pattern);
        continue;
      }
      let next = at.literal.get(segment);
      if (next === undefined) at.literal.set(segment, (next = pathNode(pattern)));
      at = next;
    }
    at.methods ??= new Map();
    this.#put(at.methods, route);
  }

  #put(methods: Map<string, Route<H>>, route: Route<H>): void {
    for (const method of route.methods) {
      if (methods.has(method)) throw new Error(`route ${method} ${route.path} is declared twice`);
      methods.set(method, route);
    }
  }

  /**
   * The route of `method` and `path` (no query string), and the tenant its path names ('' when none), or why there
   * is none: `invalid_tenant` for a `<tenant>` segment that is not a name, `not_found` (the routes listed),
   * `method_not_allowed` (with Allow).
   */
  find(method: string, path: string): { route: Route<H>; tenant: string } | Miss<H> {
    let at = this.#root;
    let tenant = '';
    let start = 1;
    let rest: Map<string, Route<H>> | undefined;
    while (start <= path.length) {
      const end = path.indexOf('/', start);
      const segment = end === -1 ? path.slice(start) : path.slice(start, end);
      rest = at.rest;
      const literal = at.literal.get(segment);
      let next: PathNode<H> | undefined = literal;
      if (next === undefined && at.tenant !== undefined) {
        if (!isTenantName(segment)) return { error: invalidTenant(segment) };
        tenant = segment;
        next = at.tenant;
      }
      if (next === undefined)
        return rest === undefined ? this.#notFound(method, path, tenant) : this.#of(rest, method, path);
      at = next;
      if (end === -1) break;
      start = end + 1;
    }
    if (at.methods === undefined) {
      if (at.rest !== undefined) return this.#of(at.rest, method, path);
      return this.#notFound(method, path, tenant);
    }
    const route = at.methods.get(method) ?? at.methods.get('*');
    if (route !== undefined) return { route, tenant };
    return this.#notAllowed(at.methods, at.pattern, method);
  }

  #of(methods: Map<string, Route<H>>, method: string, path: string): { route: Route<H>; tenant: string } | Miss<H> {
    const route = methods.get(method) ?? methods.get('*');
    if (route !== undefined) return { route, tenant: '' };
    return this.#notAllowed(methods, path, method);
  }

  #notAllowed(methods: Map<string, Route<H>>, pattern: string, method: string): Miss<H> {
    const allowed = [...methods.keys()].join(', ');
    return {
      error: new FenecError('method_not_allowed', `${pattern} takes ${allowed}, not ${method.slice(0, 20)}`),
      allow: `${allowed}, OPTIONS`,
      route: methods.values().next().value,
    };
  }

  #notFound(method: string, path: string, tenant: string): Miss<H> {
    const asked = `${method.slice(0, 20)} ${JSON.stringify(path.slice(0, 200))}`;
    if (tenant !== '') {
      const prefix = `/t/${TENANT}`;
      const routes = this.list((route) => route.path.startsWith(prefix)).replaceAll(TENANT, tenant);
      return { error: new FenecError('not_found', `no route ${asked}; a tenant's routes are ${routes}`) };
    }
    // A route a tenant has, asked without one: say where it is.
    const under = `/t/${TENANT}${path}`;
    const hint = this.routes.some((route) => route.path === under)
      ? {
          hint: `${this.#who} serves a tenant's ${path} at ${under}: name the tenant (--tenant NAME in fenec's commands)`,
        }
      : undefined;
    return { error: new FenecError('not_found', `no route ${asked}; ${this.#who} answers ${this.list()}`, hint) };
  }

  /** The routes (those `keep` keeps), as `POST /query, GET|POST /_revocations, …` (a route of any method: its path). */
  list(keep: (route: Route<H>) => boolean = () => true): string {
    return this.routes
      .filter(keep)
      .map((route) => (route.methods[0] === '*' ? route.path : `${route.methods.join('|')} ${route.path}`))
      .join(', ');
  }
}

/**
 * The route's name in audit lines and in the front door's messages: its pattern, never a tenant; with the method
 * when the path ends at the tenant (`PUT /t/<tenant>` creates, `DELETE` deletes: the path alone names no action).
 */
export function auditName(route: Route<unknown>, method: string): string {
  return route.path.endsWith(`/${TENANT}`) ? `${method} ${route.path}` : route.path;
}

/** The path of a request's URL, without its query string. */
export function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
