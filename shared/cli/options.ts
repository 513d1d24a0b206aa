/**
 * Option values as typed on a command line (fenec-server's and fenec-router's alike): each parser
 * returns the value or throws `invalid_option` naming the option and what it takes.
 */
import * as fs from 'node:fs';
import { JwtVerifier } from '../auth/jwt.js';
import { isSafeUrl, type IssuerTimings } from '../auth/oauth/issuer.js';
import { OAuthVerifier } from '../auth/oauth/verifier.js';
import { parseDuration } from '../duration.js';
import { FenecError } from '../errors.js';

/** A public key for JWTs: its PEM text, and the file it came from (for messages). */
export interface PublicKeyInput {
  readonly pem: string;
  readonly source: string;
}

/** The JWT key material and claims checks a caller gives; serverConfig and routerOptions turn them into a verifier. */
export interface JwtInput {
  /** HS256 secret, at least 32 bytes. */
  readonly jwtSecret?: string;
  /** RS256 or ES256 public key (PEM), the algorithm pinned to the key's type. */
  readonly jwtPublicKey?: PublicKeyInput;
  /** A token's `iss` must equal it. Default: not checked. */
  readonly jwtIssuer?: string;
  /** A token's `aud` must be or contain it. Default: not checked. */
  readonly jwtAudience?: string;
}

/** The JWT verifier of the key given, if any; issuer and audience alone are refused. */
export function jwtVerifier(input: JwtInput): JwtVerifier | undefined {
  if (input.jwtSecret === undefined && input.jwtPublicKey === undefined) {
    if (input.jwtIssuer !== undefined)
      throw invalidOption('--jwt-issuer', 'checks JSON Web Tokens: give --jwt-secret or --jwt-public-key too');
    if (input.jwtAudience !== undefined)
      throw invalidOption('--jwt-audience', 'checks JSON Web Tokens: give --jwt-secret or --jwt-public-key too');
    return undefined;
  }
  if (input.jwtSecret === '') throw invalidOption('--jwt-secret', 'must not be empty');
  return JwtVerifier.create({
    secret: input.jwtSecret,
    publicKey: input.jwtPublicKey?.pem,
    publicKeySource: input.jwtPublicKey === undefined ? undefined : `--jwt-public-key ${input.jwtPublicKey.source}`,
    issuer: input.jwtIssuer,
    audience: input.jwtAudience,
  });
}

/** What a caller gives for OAuth (`--public-url`, `--oauth-issuer`…); serverConfig and routerOptions verify it. */
export interface OAuthInput {
  /** The origin clients reach this server at, e.g. https://db.example.com. */
  readonly publicUrl?: string;
  /** The trusted authorization servers, exactly as their tokens' `iss`. */
  readonly oauthIssuers?: readonly string[];
  /** The one `aud` taken for every resource (IdPs that cannot set a resource as the audience). */
  readonly oauthAudience?: string;
  /** The claim naming the tenant with --oauth-audience. Default `tenant`. */
  readonly oauthTenantClaim?: string;
  /** How often issuers are asked again; the defaults but in tests. */
  readonly oauthTimings?: IssuerTimings;
}

/**
 * The OAuth verifier of the issuers given, if any.
 *
 * @throws FenecError `invalid_option` naming the flag: an issuer that is not an https URL (http only to this
 *   machine), one named twice, no --public-url or one that is not an origin, --oauth-audience without an issuer.
 */
export function oauthVerifier(input: OAuthInput): OAuthVerifier | undefined {
  const issuers = input.oauthIssuers ?? [];
  if (issuers.length === 0) {
    if (input.oauthAudience !== undefined)
      throw invalidOption('--oauth-audience', 'checks OAuth tokens: give --oauth-issuer too');
    if (input.oauthTenantClaim !== undefined)
      throw invalidOption('--oauth-tenant-claim', 'reads OAuth tokens: give --oauth-issuer and --oauth-audience too');
    if (input.publicUrl !== undefined) publicOrigin(input.publicUrl);
    return undefined;
  }
  for (const issuer of issuers) {
    if (!isSafeUrl(issuer)) {
      throw invalidOption(
        '--oauth-issuer',
        `takes an authorization server's https URL (http only on this machine), exactly as its tokens' iss, not ${JSON.stringify(issuer)}`,
      );
    }
  }
  const twice = issuers.find((issuer, i) => issuers.indexOf(issuer) !== i);
  if (twice !== undefined) throw invalidOption('--oauth-issuer', `names ${twice} twice`);
  if (input.publicUrl === undefined) {
    throw invalidOption(
      '--oauth-issuer',
      "needs --public-url (FENEC_PUBLIC_URL): the URL clients reach this server at, which a token's audience names",
    );
  }
  if (input.oauthAudience === '') throw invalidOption('--oauth-audience', 'must not be empty');
  if (input.oauthTenantClaim !== undefined && input.oauthAudience === undefined)
    throw invalidOption('--oauth-tenant-claim', 'names the tenant with --oauth-audience: give it too');
  if (input.oauthTenantClaim === '') throw invalidOption('--oauth-tenant-claim', 'must name a claim');
  return new OAuthVerifier({
    publicUrl: publicOrigin(input.publicUrl),
    issuers,
    audience: input.oauthAudience,
    tenantClaim: input.oauthTenantClaim,
    ...(input.oauthTimings === undefined ? {} : { timings: input.oauthTimings }),
  });
}

/** --public-url as an origin (scheme://host[:port]), a trailing slash dropped. */
function publicOrigin(text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || !/^https?:$/.test(url.protocol) || url.origin !== text.replace(/\/$/, '')) {
    throw invalidOption(
      '--public-url',
      `takes the origin clients reach this server at, e.g. https://db.example.com (no path), not ${JSON.stringify(text)}`,
    );
  }
  return url.origin;
}

/** A repeatable option's values, or the environment's (a comma- or blank-separated list) when none is given. */
export function listOption(values: readonly string[] | undefined, env: string | undefined): string[] {
  if (values !== undefined && values.length > 0) return [...values];
  return (env ?? '').split(/[\s,]+/).filter((value) => value !== '');
}

/** Reads a port number as typed on a command line. */
export function parsePort(text: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) {
    throw invalidOption('--port', `takes 0…65535 (0: any free port), not "${text}"`);
  }
  return Number(text);
}

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
};

/** Reads a size such as `1mb`, `512kb` or `65536` (bytes); kb and mb are binary (1024, 1024²). */
export function parseByteSize(text: string, option = '--max-body'): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const factor = match === null ? undefined : UNITS[match[2]!.toLowerCase()];
  const bytes = match === null || factor === undefined ? NaN : Math.floor(Number(match[1]) * factor);
  if (!Number.isSafeInteger(bytes) || bytes < 1) {
    throw invalidOption(option, `takes a size such as 512kb, 1mb or 65536 (bytes), not "${text}"`);
  }
  return bytes;
}

/** Reads a duration such as `500ms`, `10s`, `1m` or `0`, in milliseconds. */
export function parseDurationOption(option: string, text: string): number {
  const trimmed = text.trim();
  const ms = /^0+$/.test(trimmed) ? 0 : parseDuration(trimmed);
  if (ms === undefined)
    throw invalidOption(option, `takes a duration such as 500ms, 10s or 1m (0: never), not "${text}"`);
  return ms;
}

/** Reads a whole number of at least `min`. */
export function parseCount(option: string, text: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `from ${min} to ${max}`;
    throw invalidOption(option, `takes a whole number ${range}, not "${text}"`);
  }
  return value;
}

/** The text of a file an option names (a key, a policy, a placement). */
export function readOptionFile(option: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw invalidOption(
      option,
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

export function invalidOption(option: string, what: string): FenecError {
  return new FenecError('invalid_option', `${option} ${what}`);
}
