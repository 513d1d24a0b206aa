/**
 * OAuth scopes as fenecdb's powers. A scope opens a set of MCP tools (and, over /query, reads or
 * writes); it meets the grants there are — the server's flags, the policy's tools line and its row
 * rules — and adds no power of its own: a tool or a write a policy does not give stays refused.
 */
import type { ToolName } from '../../mcp/tools.js';

export const SCOPES = Object.freeze(['fenec:read', 'fenec:memory', 'fenec:write'] as const);
export type FenecScope = (typeof SCOPES)[number];

/** The tools each scope opens. */
const SCOPE_TOOLS: Readonly<Record<FenecScope, readonly ToolName[]>> = Object.freeze({
  'fenec:read': ['query', 'search', 'schema'],
  'fenec:memory': ['remember', 'recall', 'forget'],
  'fenec:write': ['write'],
});

const TOOL_SCOPE: ReadonlyMap<string, FenecScope> = new Map(
  SCOPES.flatMap((scope) => SCOPE_TOOLS[scope].map((tool) => [tool, scope] as const)),
);

/** The scope a tool needs. */
export function scopeOfTool(tool: string): FenecScope | undefined {
  return TOOL_SCOPE.get(tool);
}

/** The scope a /query statement needs: fenec:write for one that writes, else fenec:read. */
export function scopeOfStatement(writes: boolean): FenecScope {
  return writes ? 'fenec:write' : 'fenec:read';
}

/**
 * fenecdb's scopes among a token's: RFC 9068's `scope` (a space-separated string), or `scp` as some
 * IdPs write it (a string or an array of strings). Others are left out; anything malformed gives none.
 */
export function scopesOf(claims: Readonly<Record<string, unknown>>): readonly FenecScope[] {
  const claim = claims.scope ?? claims.scp;
  const words =
    typeof claim === 'string'
      ? claim.split(' ')
      : Array.isArray(claim) && claim.every((word) => typeof word === 'string')
        ? (claim as string[])
        : [];
  return SCOPES.filter((scope) => words.includes(scope));
}

/**
 * The tools a token's scopes leave among `granted` (the policy's, undefined for all of `offered`), and the scope each
 * one left out would need: a call of one of those is answered 403 insufficient_scope, not "unknown tool".
 */
export function scopedTools(
  scopes: readonly FenecScope[],
  granted: ReadonlySet<string> | undefined,
  offered: readonly string[],
): { readonly tools: ReadonlySet<string>; readonly needed: ReadonlyMap<string, FenecScope> } {
  const tools = new Set<string>();
  const needed = new Map<string, FenecScope>();
  for (const tool of granted ?? offered) {
    const scope = scopeOfTool(tool);
    if (scope === undefined) continue;
    if (scopes.includes(scope)) tools.add(tool);
    else needed.set(tool, scope);
  }
  return { tools, needed };
}
