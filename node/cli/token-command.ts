/**
 * `fenec token --sub SUB [--tenant T]`: mints an agent's JSON Web Token (HS256) and prints it.
 * `fenec token revoke JTI|--sub SUB [--tenant T] --url URL`: revokes one token by its jti, or every
 * token of a sub issued until now, on the server (or, with --tenant, the tenant's node through a
 * router) with the server token from $FENEC_TOKEN. The revocation is kept in the file the token reaches.
 */
import type { Command } from 'commander';
import { mintToken, parseClaims, parseTtl } from '../../shared/auth/token.js';
import { isTenantName } from '../../shared/tenant-name.js';
import { adminRequest } from './admin-request.js';
import { usageError } from '../../shared/cli/command-line.js';

const NAME = 'fenec';

interface TokenOptions {
  tenant?: string;
  sub?: string;
  ttl: string;
  claims?: string;
  jwtSecret?: string;
}

interface RevokeOptions {
  sub?: string;
  tenant?: string;
  url: string;
}

export function addTokenCommand(program: Command): void {
  const token = program
    .command('token')
    .description("Mint an agent's JSON Web Token (HS256) and print it on stdout; fenec token revoke revokes one.")
    .option('--sub <subject>', "who holds it (its sub claim: a policy's $jwt.sub); required")
    .option('--tenant <name>', 'the tenant it reaches on a hosted node (its tenant claim); none for a one-file server')
    .option('--ttl <duration>', 'how long it is valid: 30m, 12h, 30d, 2w', '30d')
    .option(
      '--claims <json>',
      'more claims as a JSON object, e.g. \'{"team": "ops"}\' (not sub, tenant, jti, iat or exp)',
    )
    .option('--jwt-secret <secret>', "the server's HS256 secret, at least 32 bytes (default: $FENEC_JWT_SECRET)")
    .action((options: TokenOptions) => {
      if (options.sub === undefined) usageError(NAME, 'token needs --sub <subject>: who holds the token');
      const secret = options.jwtSecret ?? (process.env.FENEC_JWT_SECRET || undefined);
      if (secret === undefined) usageError(NAME, "token needs the server's secret: --jwt-secret or $FENEC_JWT_SECRET");
      const minted = mintToken({
        secret,
        sub: options.sub,
        ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
        ttlSeconds: parseTtl(options.ttl),
        claims: options.claims === undefined ? undefined : parseClaims(options.claims),
      });
      process.stdout.write(`${minted}\n`);
    });

  token
    .command('revoke [jti]')
    .description(
      'Revoke one token by its jti, or with --sub every token of that sub issued until now (server token: $FENEC_TOKEN).',
    )
    .option('--sub <subject>', 'revoke every token of this sub issued until now (a token minted later is taken)')
    .option('--tenant <name>', 'the tenant whose tokens these are, through a router or on its node')
    .requiredOption('--url <url>', "the server's (or the router's) base URL, e.g. http://127.0.0.1:8080")
    .action((jti: string | undefined, options: RevokeOptions) => {
      if ((jti === undefined) === (options.sub === undefined))
        usageError(NAME, 'token revoke takes a jti or --sub <subject>, one of the two');
      if (options.tenant !== undefined && !isTenantName(options.tenant)) {
        usageError(
          NAME,
          `${JSON.stringify(options.tenant)} is not a tenant name: a-z, 0-9 and -, 1 to 63 characters, not starting with -`,
        );
      }
      const path = options.tenant === undefined ? '/_revocations' : `/t/${options.tenant}/_revocations`;
      const body = jti === undefined ? { sub: options.sub } : { jti };
      return adminRequest('POST', options.url, path, JSON.stringify(body));
    });
}
