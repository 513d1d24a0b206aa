/**
 * Option values as typed on a command line (fenec-server's and fenec-router's alike): each parser
 * returns the value or throws `invalid_option` naming the option and what it takes.
 */
import * as fs from 'node:fs';
import { JwtVerifier } from '../auth/jwt.js';
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
