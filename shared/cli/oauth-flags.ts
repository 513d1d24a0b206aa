/**
 * The OAuth flags fenec-server and fenec-router share, and their environment forms: `--public-url`
 * (FENEC_PUBLIC_URL), `--oauth-issuer`, repeatable (FENEC_OAUTH_ISSUER, a comma- or blank-separated
 * list), `--oauth-audience` (FENEC_OAUTH_AUDIENCE), `--oauth-tenant-claim` (FENEC_OAUTH_TENANT_CLAIM).
 * A flag given wins over its variable.
 */
import type { Command } from 'commander';
import { listOption, type OAuthInput } from './options.js';

export interface OAuthFlags {
  publicUrl?: string;
  oauthIssuer?: string[];
  oauthAudience?: string;
  oauthTenantClaim?: string;
}

export function addOAuthFlags(program: Command): Command {
  return program
    .option(
      '--public-url <url>',
      "the URL clients reach this server at (behind a TLS terminator, its https origin); a tenant's OAuth resource is URL/t/<tenant>/_mcp (default: $FENEC_PUBLIC_URL)",
    )
    .option(
      '--oauth-issuer <url>',
      "take OAuth access tokens (RFC 9068 JWTs) from this authorization server, exactly as its tokens' iss; repeatable (default: $FENEC_OAUTH_ISSUER)",
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option(
      '--oauth-audience <aud>',
      'take OAuth tokens whose aud is this rather than the resource, the tenant read from --oauth-tenant-claim (for IdPs that cannot set a resource as the audience; default: $FENEC_OAUTH_AUDIENCE)',
    )
    .option(
      '--oauth-tenant-claim <claim>',
      'with --oauth-audience, the claim that names the tenant (default: $FENEC_OAUTH_TENANT_CLAIM, else tenant)',
    );
}

/** The flags as OAuthInput, each taken from its environment variable when not given (an empty variable is unset). */
export function oauthInput(flags: OAuthFlags, env: NodeJS.ProcessEnv): OAuthInput {
  const publicUrl = flags.publicUrl ?? (env.FENEC_PUBLIC_URL || undefined);
  const audience = flags.oauthAudience ?? (env.FENEC_OAUTH_AUDIENCE || undefined);
  const tenantClaim = flags.oauthTenantClaim ?? (env.FENEC_OAUTH_TENANT_CLAIM || undefined);
  return {
    oauthIssuers: listOption(flags.oauthIssuer, env.FENEC_OAUTH_ISSUER),
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...(audience === undefined ? {} : { oauthAudience: audience }),
    ...(tenantClaim === undefined ? {} : { oauthTenantClaim: tenantClaim }),
  };
}
