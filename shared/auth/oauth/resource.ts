/**
 * fenecdb as a protected resource (RFC 9728): a tenant's MCP endpoint `<public-url>/t/<tenant>/_mcp`
 * (a one-file server's `<public-url>/_mcp`) is the resource a token is asked for (RFC 8707) and names
 * in its `aud`; its metadata is at the well-known path in front of the resource's path (§3.1).
 */
import { SCOPES } from './scopes.js';
import { bearerChallenge, type ChallengeError } from './challenge.js';

export const METADATA_PREFIX = '/.well-known/oauth-protected-resource';

const TENANT_METADATA = /^\/\.well-known\/oauth-protected-resource\/t\/([^/]+)\/_mcp$/;

/**
 * What a metadata path asks for: `{tenant}` for `/.well-known/oauth-protected-resource/t/<tenant>/_mcp`,
 * `{tenant: undefined}` for a one-file server's `/.well-known/oauth-protected-resource/_mcp`, else undefined.
 * The tenant is as the path spells it: the caller checks it is a tenant name.
 */
export function metadataRequest(path: string): { readonly tenant: string | undefined } | undefined {
  if (path === `${METADATA_PREFIX}/_mcp`) return { tenant: undefined };
  const match = TENANT_METADATA.exec(path);
  return match === null ? undefined : { tenant: match[1]! };
}

export class ProtectedResource {
  /** The origin clients reach the server at (`--public-url`), without a trailing slash. */
  readonly publicUrl: string;
  readonly #issuers: readonly string[];

  constructor(publicUrl: string, issuers: readonly string[]) {
    this.publicUrl = publicUrl;
    this.#issuers = issuers;
  }

  /** The resource of a tenant's MCP endpoint, or of a one-file server's (`tenant` undefined or ''). */
  resource(tenant: string | undefined): string {
    return tenant === undefined || tenant === '' ? `${this.publicUrl}/_mcp` : `${this.publicUrl}/t/${tenant}/_mcp`;
  }

  metadataUrl(tenant: string | undefined): string {
    return this.publicUrl + METADATA_PREFIX + this.resource(tenant).slice(this.publicUrl.length);
  }

  /** The metadata document (RFC 9728 §2) of the resource, as JSON text. */
  document(tenant: string | undefined): string {
    return JSON.stringify({
      resource: this.resource(tenant),
      authorization_servers: this.#issuers,
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: tenant === undefined || tenant === '' ? 'fenecdb' : `fenecdb tenant ${tenant}`,
    });
  }

  /** The WWW-Authenticate header of a refusal on the resource's routes. */
  challenge(tenant: string | undefined, error?: ChallengeError, scope?: string): string {
    return bearerChallenge(this.metadataUrl(tenant), error, scope);
  }
}
