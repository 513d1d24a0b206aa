/**
 * Minting agents' tokens (`fenec token`): HS256 JSON Web Tokens carrying `sub`, `tenant` (hosted
 * only), `jti`, `iat`, `exp` and whatever other claims the operator adds (a policy may name them as
 * `$jwt.NAME`). The `jti` names this one token, so that it can be revoked alone (`fenec token revoke`).
 */
import { createSecretKey, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { FenecError } from '../errors.js';
import { isTenantName, TENANT_NAME_RULE } from '../tenant-name.js';
import { MIN_SECRET_BYTES } from './jwt.js';

export interface MintOptions {
  /** The HS256 secret the server verifies with (`--jwt-secret`, `FENEC_JWT_SECRET`). */
  readonly secret: string;
  /**
   * The tenant the token reaches on a hosted node (a tenant name, shared/tenant-name.ts); none for a one-file
   * server.
   */
  readonly tenant?: string;
  /** Who holds it: the policy's `$jwt.sub`, the audit's `sub`. */
  readonly sub: string;
  /** How long it is valid, in seconds from `now`. */
  readonly ttlSeconds: number;
  /** More claims; they may not set sub, tenant, iat or exp. */
  readonly claims?: Readonly<Record<string, unknown>>;
  /** Now, in ms since the epoch. Default Date.now(). */
  readonly now?: number;
}

/** Claims `fenec token` sets itself: --claims may not override them. */
export const RESERVED_CLAIMS: readonly string[] = ['sub', 'tenant', 'jti', 'iat', 'exp'];
/**
 * Random bytes in a `jti`: 128 bits, as a UUID has, so that no two tokens share one. Written in hex: a
 * base64url jti began with "-" one time in 64, and `fenec token revoke <jti>` read it as an option.
 */
const JTI_BYTES = 16;

const TTL_UNITS: Readonly<Record<string, number>> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/**
 * Signs a token.
 *
 * @throws FenecError `invalid_option` naming the flag: a short secret, a bad tenant name, an empty
 *   sub, a claim that would override one of RESERVED_CLAIMS.
 */
export function mintToken(options: MintOptions): string {
  const secret = Buffer.from(options.secret, 'utf8');
  if (secret.length < MIN_SECRET_BYTES) {
    throw invalidOption(
      '--jwt-secret',
      `takes at least ${MIN_SECRET_BYTES} bytes (256 bits), as the server does, not ${secret.length}`,
    );
  }
  if (options.tenant !== undefined && !isTenantName(options.tenant)) {
    throw invalidOption('--tenant', `takes a tenant name (${TENANT_NAME_RULE}), not ${JSON.stringify(options.tenant)}`);
  }
  if (options.sub === '') throw invalidOption('--sub', 'must not be empty');
  if (!Number.isSafeInteger(options.ttlSeconds) || options.ttlSeconds < 1)
    throw invalidOption('--ttl', `takes a positive duration, not ${options.ttlSeconds} s`);
  const claims = options.claims ?? {};
  const overridden = RESERVED_CLAIMS.filter((name) => Object.hasOwn(claims, name));
  if (overridden.length > 0) {
    throw invalidOption(
      '--claims',
      `may not set ${overridden.join(', ')}: fenec token sets ${RESERVED_CLAIMS.join(', ')} itself (use --sub, --tenant, --ttl; the jti is random)`,
    );
  }
  const iat = Math.floor((options.now ?? Date.now()) / 1000);
  const jti = randomBytes(JTI_BYTES).toString('hex');
  const tenant = options.tenant === undefined ? {} : { tenant: options.tenant };
  const payload = { ...claims, sub: options.sub, ...tenant, jti, iat, exp: iat + options.ttlSeconds };
  return jwt.sign(payload, createSecretKey(secret), { algorithm: 'HS256' });
}

/** Reads a token's lifetime: `30m`, `12h`, `30d`, `2w`, `90s`, in seconds. */
export function parseTtl(text: string): number {
  const match = /^(\d+)(s|m|h|d|w)$/.exec(text.trim());
  const seconds = match === null ? NaN : Number(match[1]) * TTL_UNITS[match[2]!]!;
  if (!Number.isSafeInteger(seconds) || seconds < 1) {
    throw invalidOption('--ttl', `takes a duration such as 30m, 12h, 30d or 2w, not ${JSON.stringify(text)}`);
  }
  return seconds;
}

/** Reads --claims: a JSON object. */
export function parseClaims(text: string): Record<string, unknown> {
  let claims: unknown;
  try {
    claims = JSON.parse(text);
  } catch {
    claims = undefined;
  }
  if (claims === null || typeof claims !== 'object' || Array.isArray(claims)) {
    throw invalidOption(
      '--claims',
      `takes a JSON object such as '{"team": "ops"}', not ${text.length > 80 ? `${text.slice(0, 80)}…` : text}`,
    );
  }
  return claims as Record<string, unknown>;
}

function invalidOption(option: string, what: string): FenecError {
  return new FenecError('invalid_option', `${option} ${what}`);
}
