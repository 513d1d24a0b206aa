/**
 * JSON Web Token verification, through jsonwebtoken, with the key built once.
 *
 * One server takes one key, and the key's type decides the only algorithm it accepts: a secret
 * HS256, an RSA public key RS256, an EC P-256 public key ES256. `none` is never accepted, nor an
 * HS256 token on a server with a public key (the public key's PEM used as an HMAC secret). Keys are
 * `KeyObject`s made at start: given a string, jsonwebtoken would try to parse it as a public key on
 * every verify (~350 µs, against ~8.5 µs).
 *
 * An agent sends the same token with every request: the last VERIFIED_CACHE_SIZE tokens that verified
 * are remembered with their claims, so that a repeated one costs a map lookup and its `exp` and
 * `nbf` checked again against the clock. Only tokens that verified are kept: garbage cannot fill it.
 */
import { createPublicKey, createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { FenecError } from '../errors.js';
import { checkJsonValue } from '../fenecql/limits.js';

export type JwtAlgorithm = 'HS256' | 'RS256' | 'ES256';

/** A verified token's claims (its payload), as JSON: a frozen object without a prototype. */
export type JwtClaims = Readonly<Record<string, unknown>>;

/** Why a token was refused: short, stable words for the audit log and for tests. */
export type TokenWhy =
  | 'malformed'
  | 'unsigned'
  | 'wrong_algorithm'
  | 'bad_signature'
  | 'expired'
  | 'not_yet_valid'
  | 'no_expiry'
  | 'wrong_issuer'
  | 'wrong_audience'
  | 'bad_claims';

export type Verification =
  | { readonly ok: true; readonly claims: JwtClaims }
  | { readonly ok: false; readonly why: TokenWhy; readonly message: string };

export interface JwtVerifierOptions {
  /** HS256: the shared secret (`--jwt-secret`, `FENEC_JWT_SECRET`), at least 32 bytes. */
  readonly secret?: string;
  /** RS256 or ES256: the PEM of an RSA (≥ 2048 bits) or P-256 public key (`--jwt-public-key FILE`'s text). */
  readonly publicKey?: string;
  /** How messages name the public key: its file. Default `--jwt-public-key`. */
  readonly publicKeySource?: string;
  /** When set, a token's `iss` must equal it (`--jwt-issuer`). */
  readonly issuer?: string;
  /** When set, a token's `aud` must be or contain it (`--jwt-audience`). */
  readonly audience?: string;
  /** Seconds a token is still taken past its `exp`, or before its `nbf`. Default 30. */
  readonly clockToleranceSeconds?: number;
}

/** Seconds of clock difference forgiven between the token's issuer and this machine. */
export const CLOCK_TOLERANCE_SECONDS = 30;
/** The shortest HS256 secret taken: 256 bits, as RFC 7518 §3.2 asks. */
export const MIN_SECRET_BYTES = 32;
/** A longer bearer token is refused unread: no issuer of ours makes one (a minted token is ~250 bytes). */
export const MAX_TOKEN_LENGTH = 8192;
/** How many verified tokens are remembered; past it the oldest is forgotten. */
export const VERIFIED_CACHE_SIZE = 1024;

interface Verified {
  readonly accepted: Verification & { ok: true };
  /** `exp` and `nbf` in seconds, as the token says them. */
  readonly exp: number;
  readonly nbf: number | undefined;
}

export class JwtVerifier {
  readonly algorithm: JwtAlgorithm;
  readonly #key: KeyObject;
  readonly #options: jwt.VerifyOptions & { complete?: false };
  readonly #tolerance: number;
  readonly #verified = new Map<string, Verified>();

  private constructor(algorithm: JwtAlgorithm, key: KeyObject, options: JwtVerifierOptions) {
    this.algorithm = algorithm;
    this.#key = key;
    this.#tolerance = options.clockToleranceSeconds ?? CLOCK_TOLERANCE_SECONDS;
    this.#options = Object.freeze({
      algorithms: [algorithm],
      clockTolerance: options.clockToleranceSeconds ?? CLOCK_TOLERANCE_SECONDS,
      ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
      ...(options.audience === undefined ? {} : { audience: options.audience }),
    });
  }

  /**
   * Builds the verifier of one key: `secret` or `publicKey`, not both.
   *
   * @throws FenecError `invalid_option` naming the flag: no key or two, a short secret, a PEM that is
   *   not a public key, an RSA key under 2048 bits, an EC key on another curve than P-256.
   */
  static create(options: JwtVerifierOptions): JwtVerifier {
    if ((options.secret === undefined) === (options.publicKey === undefined)) {
      throw invalidOption('--jwt-secret and --jwt-public-key', 'take one key between them, not both or neither');
    }
    if (options.issuer === '') throw invalidOption('--jwt-issuer', 'must not be empty');
    if (options.audience === '') throw invalidOption('--jwt-audience', 'must not be empty');
    const tolerance = options.clockToleranceSeconds ?? CLOCK_TOLERANCE_SECONDS;
    if (!Number.isInteger(tolerance) || tolerance < 0)
      throw invalidOption('clock tolerance', `takes whole seconds ≥ 0, not ${tolerance}`);
    if (options.secret !== undefined) {
      const secret = Buffer.from(options.secret, 'utf8');
      if (secret.length < MIN_SECRET_BYTES) {
        throw invalidOption(
          '--jwt-secret',
          `takes at least ${MIN_SECRET_BYTES} bytes (256 bits), not ${secret.length}; make one with: openssl rand -hex 32`,
        );
      }
      return new JwtVerifier('HS256', createSecretKey(secret), options);
    }
    const source = options.publicKeySource ?? '--jwt-public-key';
    let key: KeyObject;
    try {
      key = createPublicKey(options.publicKey!);
    } catch (err) {
      throw invalidOption(source, `holds no public key in PEM form (${(err as Error).message})`);
    }
    return new JwtVerifier(algorithmOf(key, source), key, options);
  }

  /** Verifies a token: its claims, or why it is refused. Never throws, never repeats the token. */
  check(token: string): Verification {
    const known = this.#verified.get(token);
    if (known !== undefined) {
      const now = Date.now() / 1000;
      // As jsonwebtoken decides: expired once now ≥ exp + tolerance, early while nbf > now + tolerance.
      if (now < known.exp + this.#tolerance && (known.nbf === undefined || known.nbf <= now + this.#tolerance))
        return known.accepted;
      this.#verified.delete(token);
    }
    if (token.length > MAX_TOKEN_LENGTH)
      return refused('malformed', `the token is longer than ${MAX_TOKEN_LENGTH} characters`);
    let payload: unknown;
    try {
      payload = jwt.verify(token, this.#key, this.#options);
    } catch (err) {
      return this.#refusal(token, err);
    }
    if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
      return refused('malformed', "the token's payload is not a JSON object");
    }
    const { exp, nbf } = payload as { exp?: unknown; nbf?: unknown };
    if (typeof exp !== 'number')
      return refused('no_expiry', 'the token has no exp claim; this server takes only tokens that expire');
    // JSON's 1e400 parses as Infinity, which jsonwebtoken compares as a time that never comes: a token that never
    // expires.
    if (!Number.isFinite(exp))
      return refused(
        'bad_claims',
        "the token's exp claim is not a finite number of seconds; this server takes only tokens that expire",
      );
    // Claims reach statements as $jwt.NAME, bound as parameters are: held to what parameters are held to
    // (nesting, finite numbers, text that is Unicode), or a policy could write what /query refuses.
    try {
      checkJsonValue(payload, "the token's claims");
    } catch (err) {
      return refused('bad_claims', (err as FenecError).message);
    }
    // Without a prototype: a policy's $jwt.constructor or $jwt.toString names no claim, as it should not.
    const claims = Object.freeze(Object.assign(Object.create(null) as Record<string, unknown>, payload));
    const accepted = Object.freeze({ ok: true as const, claims });
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(token, { accepted, exp, nbf: typeof nbf === 'number' ? nbf : undefined });
    return accepted;
  }

  /**
   * Verifies a token.
   *
   * @throws FenecError `invalid_token` saying why (expired, not yet valid, bad signature, wrong
   *   algorithm, wrong issuer…), never repeating the token.
   */
  verify(token: string): JwtClaims {
    const verification = this.check(token);
    if (verification.ok) return verification.claims;
    throw new FenecError('invalid_token', verification.message);
  }

  #refusal(token: string, err: unknown): Verification {
    if (err instanceof jwt.TokenExpiredError)
      return refused('expired', `the token expired at ${err.expiredAt.toISOString()}`);
    if (err instanceof jwt.NotBeforeError)
      return refused('not_yet_valid', `the token is not valid before ${err.date.toISOString()}`);
    const message = err instanceof Error ? err.message : '';
    if (message === 'invalid signature')
      return refused('bad_signature', `the token's signature does not verify with this server's ${this.algorithm} key`);
    if (message === 'jwt signature is required')
      return refused('unsigned', `the token is unsigned; this server takes ${this.algorithm} only`);
    if (message === 'invalid algorithm' || message.startsWith('secretOrPublicKey must be')) {
      return refused(
        'wrong_algorithm',
        `the token is signed with ${headerAlgorithm(token)}; this server takes ${this.algorithm} only`,
      );
    }
    if (message.startsWith('jwt issuer invalid'))
      return refused('wrong_issuer', `the token's iss is not ${JSON.stringify(this.#options.issuer)}`);
    if (message.startsWith('jwt audience invalid'))
      return refused('wrong_audience', `the token's aud does not name ${JSON.stringify(this.#options.audience)}`);
    if (/^invalid (exp|nbf|iat) value/.test(message))
      return refused('bad_claims', `the token's ${message.split(' ')[1]} claim is not a number of seconds`);
    return refused('malformed', 'the token is not a JSON Web Token (header.payload.signature, base64url)');
  }
}

/** The one algorithm a public key takes. */
function algorithmOf(key: KeyObject, source: string): JwtAlgorithm {
  const details = key.asymmetricKeyDetails;
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details?.modulusLength ?? 0;
    if (bits < 2048) throw invalidOption(source, `holds an RSA key of ${bits} bits; RS256 takes 2048 or more`);
    return 'RS256';
  }
  if (key.asymmetricKeyType === 'ec') {
    if (details?.namedCurve !== 'prime256v1') {
      throw invalidOption(
        source,
        `holds an EC key on curve ${details?.namedCurve ?? 'unknown'}; ES256 takes P-256 (prime256v1)`,
      );
    }
    return 'ES256';
  }
  throw invalidOption(
    source,
    `holds a ${key.asymmetricKeyType ?? 'unknown'} key; this server takes RSA (RS256) or EC P-256 (ES256) public keys`,
  );
}

/** The header's `alg` as a message may show it (the header is the sender's text: quoted, cut short). */
function headerAlgorithm(token: string): string {
  const decoded = jwt.decode(token, { complete: true });
  const alg: unknown = decoded?.header.alg;
  return typeof alg === 'string' ? JSON.stringify(alg.slice(0, 16)) : 'no algorithm';
}

function refused(why: TokenWhy, message: string): Verification {
  return { ok: false, why, message };
}

function invalidOption(option: string, what: string): FenecError {
  return new FenecError('invalid_option', `${option} ${what}`);
}
