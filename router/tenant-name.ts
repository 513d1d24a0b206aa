/**
 * Tenant names, one rule for the router, the node and the CLI: `[a-z0-9][a-z0-9-]{0,62}`. A name is
 * also a file name (`D/<tenant>.fenec`) and a DNS-safe label, so nothing in it can climb a path.
 */
export const TENANT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function isTenantName(name: string): boolean {
  return TENANT_NAME.test(name);
}
