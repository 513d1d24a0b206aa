import { createHmac, generateKeyPairSync } from 'node:crypto';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { CLOCK_TOLERANCE_SECONDS, JwtVerifier, MAX_TOKEN_LENGTH } from '../../../shared/auth/jwt.js';
import { refusal } from '../../helpers/assertions.js';

const SECRET = 'a-secret-of-at-least-thirty-two-bytes-0123';
const now = (): number => Math.floor(Date.now() / 1000);
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token signed with HMAC-SHA256 over whatever key bytes are given, whatever the header says. */
function hmacToken(header: object, payload: object, key: string | Buffer): string {
  const signingInput = `${b64(header)}.${b64(payload)}`;
  return `${signingInput}.${createHmac('sha256', key).update(signingInput).digest('base64url')}`;
}

describe('JwtVerifier', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const ecPem = ec.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const hs = JwtVerifier.create({ secret: SECRET, issuer: 'fenec', audience: 'agents' });
  const rs = JwtVerifier.create({ publicKey: rsaPem });
  const es = JwtVerifier.create({ publicKey: ecPem });
  const claims = { sub: 'ada', tenant: 'acme', iss: 'fenec', aud: 'agents' };
  const plain = JwtVerifier.create({ secret: SECRET });
  /** HS256 with SECRET; an exp of one minute unless the payload has its own. */
  const sign = (payload: object): string =>
    jwt.sign(payload, SECRET, { algorithm: 'HS256', ...('exp' in payload ? {} : { expiresIn: 60 }) });

  it('pins the algorithm to the key: a secret HS256, an RSA key RS256, a P-256 key ES256', () => {
    expect([hs.algorithm, rs.algorithm, es.algorithm]).to.deep.equal(['HS256', 'RS256', 'ES256']);
  });

  it("answers a valid token's claims, for each kind of key", () => {
    expect(hs.verify(sign(claims))).to.include({ sub: 'ada', tenant: 'acme' });
    const rsToken = jwt.sign({ sub: 'bo' }, rsa.privateKey, { algorithm: 'RS256', expiresIn: 60 });
    expect(rs.verify(rsToken)).to.include({ sub: 'bo' });
    const esToken = jwt.sign({ sub: 'cy' }, ec.privateKey, { algorithm: 'ES256', expiresIn: 60 });
    expect(es.verify(esToken)).to.include({ sub: 'cy' });
  });

  it('answers claims without a prototype, so that no inherited name reads as a claim', () => {
    const claims = plain.verify(sign({ sub: 'ada' }));
    expect(Object.getPrototypeOf(claims)).to.equal(null);
    expect(Object.isFrozen(claims)).to.equal(true);
    for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty'])
      expect(claims[name], name).to.equal(undefined);
  });

  it(`forgives ${CLOCK_TOLERANCE_SECONDS} s of clock difference on exp and nbf, and no more`, () => {
    expect(hs.check(sign({ ...claims, exp: now() - 20 })).ok).to.equal(true);
    expect(hs.check(sign({ ...claims, nbf: now() + 20 })).ok).to.equal(true);
    expect(hs.check(sign({ ...claims, exp: now() - 40 }))).to.include({ ok: false, why: 'expired' });
    expect(hs.check(sign({ ...claims, nbf: now() + 40 }))).to.include({ ok: false, why: 'not_yet_valid' });
  });

  it('remembers a verified token, and still refuses it once it expires or before it starts', () => {
    const verifier = JwtVerifier.create({ secret: SECRET });
    const token = sign({ sub: 'ada', exp: now() + 5 });
    const first = verifier.check(token);
    expect(first.ok).to.equal(true);
    expect(verifier.check(token)).to.equal(first);
    const later = sign({ sub: 'ada', nbf: now() + 60, exp: now() + 600 });
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + 60_000;
      expect(verifier.check(later).ok).to.equal(true);
      Date.now = () => realNow() + 40_000;
      expect(verifier.check(token)).to.include({ ok: false, why: 'expired' });
      Date.now = realNow;
      expect(verifier.check(later)).to.include({ ok: false, why: 'not_yet_valid' });
    } finally {
      Date.now = realNow;
    }
  });

  describe('refuses forged and broken tokens with invalid_token saying why, never repeating the token', () => {
    const good = sign(claims);
    const cases: Array<[name: string, verifier: () => JwtVerifier, token: () => string, why: string, says: string]> = [
      [
        'alg none',
        () => hs,
        () => `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ ...claims, exp: now() + 60 })}.`,
        'unsigned',
        'unsigned',
      ],
      [
        'alg none with a signature',
        () => hs,
        () => `${b64({ alg: 'none' })}.${b64({ ...claims, exp: now() + 60 })}.c2ln`,
        'wrong_algorithm',
        '"none"',
      ],
      [
        'the wrong secret',
        () => hs,
        () => jwt.sign(claims, `${SECRET}-other`, { expiresIn: 60 }),
        'bad_signature',
        'signature',
      ],
      [
        "HS256 signed with the RSA public key's PEM",
        () => rs,
        () => hmacToken({ alg: 'HS256', typ: 'JWT' }, { sub: 'x', exp: now() + 60 }, rsaPem),
        'wrong_algorithm',
        'takes RS256 only',
      ],
      [
        'RS256 on an ES256 server',
        () => es,
        () => jwt.sign({ sub: 'x' }, rsa.privateKey, { algorithm: 'RS256', expiresIn: 60 }),
        'wrong_algorithm',
        'ES256',
      ],
      [
        'HS512 with the right secret',
        () => hs,
        () => jwt.sign(claims, SECRET, { algorithm: 'HS512', expiresIn: 60 }),
        'wrong_algorithm',
        '"HS512"',
      ],
      ['expired', () => hs, () => sign({ ...claims, exp: now() - 3600 }), 'expired', 'expired at'],
      ['not yet valid', () => hs, () => sign({ ...claims, nbf: now() + 3600 }), 'not_yet_valid', 'not valid before'],
      ['no exp', () => hs, () => jwt.sign(claims, SECRET), 'no_expiry', 'no exp'],
      [
        'a string exp',
        () => hs,
        () => hmacToken({ alg: 'HS256' }, { ...claims, exp: 'soon' }, SECRET),
        'bad_claims',
        'exp',
      ],
      [
        'an exp of 1e400, Infinity once parsed: a token that never expires',
        () => hs,
        () => {
          const input = `${b64({ alg: 'HS256' })}.${Buffer.from(JSON.stringify(claims).replace(/}$/, ',"exp":1e400}')).toString('base64url')}`;
          return `${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`;
        },
        'bad_claims',
        'exp claim is not a finite number',
      ],
      [
        'a claim holding a lone surrogate, which a policy would write as bytes that are not UTF-8',
        () => hs,
        () => sign({ ...claims, sub: 'ada\ud83e' }),
        'bad_claims',
        String.raw`the token's claims.sub holds a lone surrogate (\ud83e)`,
      ],
      ['the wrong issuer', () => hs, () => sign({ ...claims, iss: 'elsewhere' }), 'wrong_issuer', '"fenec"'],
      ['no issuer', () => hs, () => sign({ sub: 'ada', aud: 'agents' }), 'wrong_issuer', 'iss'],
      ['the wrong audience', () => hs, () => sign({ ...claims, aud: 'others' }), 'wrong_audience', '"agents"'],
      ['malformed', () => hs, () => 'not-a-jwt', 'malformed', 'not a JSON Web Token'],
      ['four parts', () => hs, () => `${good}.x`, 'malformed', 'not a JSON Web Token'],
      ['truncated', () => hs, () => good.slice(0, good.length - 10), 'bad_signature', 'signature'],
      ['cut in its payload', () => hs, () => good.slice(0, good.indexOf('.') + 8), 'malformed', 'not a JSON Web Token'],
      ['10 KB of garbage', () => hs, () => 'Zm9v.'.repeat(2048), 'malformed', `longer than ${MAX_TOKEN_LENGTH}`],
      [
        'a payload that is not an object',
        () => plain,
        () => hmacToken({ alg: 'HS256' }, [1, 2], SECRET),
        'malformed',
        '',
      ],
    ];
    for (const [name, verifier, token, why, says] of cases) {
      it(name, () => {
        const text = token();
        const verification = verifier().check(text);
        expect(verification).to.include({ ok: false, why });
        const err = refusal(() => verifier().verify(text));
        expect(err.code).to.equal('invalid_token');
        expect(err.status).to.equal(401);
        expect(err.message).to.include(says);
        for (const part of text.split('.').filter((p) => p.length > 8)) expect(err.message).not.to.include(part);
      });
    }
  });

  describe('refuses keys it cannot pin an algorithm to, with invalid_option', () => {
    const cases: Array<[name: string, options: () => Parameters<typeof JwtVerifier.create>[0], says: string]> = [
      ['no key', () => ({}), 'one key'],
      ['two keys', () => ({ secret: SECRET, publicKey: rsaPem }), 'one key'],
      ['a short secret', () => ({ secret: 'short' }), '--jwt-secret takes at least 32 bytes'],
      [
        'a PEM that is no key',
        () => ({ publicKey: 'hello', publicKeySource: 'key.pem' }),
        'key.pem holds no public key',
      ],
      [
        'RSA 1024',
        () => ({
          publicKey: generateKeyPairSync('rsa', { modulusLength: 1024 })
            .publicKey.export({ type: 'spki', format: 'pem' })
            .toString(),
        }),
        '2048',
      ],
      [
        'EC P-384',
        () => ({
          publicKey: generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
            .publicKey.export({ type: 'spki', format: 'pem' })
            .toString(),
        }),
        'P-256',
      ],
      [
        'Ed25519',
        () => ({
          publicKey: generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        }),
        'ed25519',
      ],
      ['an empty issuer', () => ({ secret: SECRET, issuer: '' }), '--jwt-issuer'],
    ];
    for (const [name, options, says] of cases) {
      it(name, () => {
        const err = refusal(() => JwtVerifier.create(options()));
        expect(err.code).to.equal('invalid_option');
        expect(err.message).to.include(says);
      });
    }
  });
});
