/**
 * Tenant names, one rule for the router, the node and the CLI: `[a-z0-9][a-z0-9-]{0,62}`. A name is
 * also a file name (`D/<tenant>.fenec`) and a DNS-safe label, so nothing in it can climb a path.
 */
import { FenecError } from './errors.js';

/** A tenant name as a regular expression's part, for patterns that hold one (a path's, say). */
export const TENANT_NAME_PATTERN = '[a-z0-9][a-z0-9-]{0,62}';
export const TENANT_NAME = new RegExp(`^${TENANT_NAME_PATTERN}$`);
/** The rule in words, for refusals. */
export const TENANT_NAME_RULE = 'a-z, 0-9 and -, 1 to 63 characters, not starting with -';

export function isTenantName(name: string): boolean {
  return TENANT_NAME.test(name);
}

/** The refusal of a path's tenant that is not a name, the same from the router and a node. */
export function invalidTenant(name: string): FenecError {
  return new FenecError(
    'invalid_tenant',
    `${JSON.stringify(name.slice(0, 80))} is not a tenant name: ${TENANT_NAME_RULE}`,
  );
}
