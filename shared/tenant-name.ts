/**
 * Tenant names, one rule for the router, the node and the CLI: `[a-z0-9][a-z0-9-]{0,62}`. A name is
 * also a file name (`D/<tenant>.fenec`) and a DNS-safe label, so nothing in it can climb a path.
 */
import { FenecError } from './errors.js';

export const TENANT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function isTenantName(name: string): boolean {
  return TENANT_NAME.test(name);
}

/** The refusal of a path's tenant that is not a name, the same from the router and a node. */
export function invalidTenant(name: string): FenecError {
  return new FenecError(
    'invalid_tenant',
    `${JSON.stringify(name.slice(0, 80))} is not a tenant name: a-z, 0-9 and -, 1 to 63 characters, not starting with -`,
  );
}
