import { expect } from 'chai';
import { JwtVerifier } from '../../../shared/auth/jwt.js';
import { mintToken, parseClaims, parseTtl } from '../../../shared/auth/token.js';
import { refusal } from '../../helpers/assertions.js';

const SECRET = 'a-secret-of-at-least-thirty-two-bytes-0123';

describe('mintToken', () => {
  const verifier = JwtVerifier.create({ secret: SECRET });

  it("signs sub, tenant, jti, iat, exp and the extra claims with HS256, which the server's verifier takes", () => {
    const now = Date.now();
    const token = mintToken({
      secret: SECRET,
      tenant: 'acme',
      sub: 'ada',
      ttlSeconds: 3600,
      claims: { team: 'ops' },
      now,
    });
    const { jti, ...claims } = verifier.verify(token);
    const iat = Math.floor(now / 1000);
    expect(claims).to.deep.equal({ team: 'ops', sub: 'ada', tenant: 'acme', iat, exp: iat + 3600 });
    expect(jti).to.match(/^[0-9a-f]{32}$/);
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).to.deep.equal({
      alg: 'HS256',
      typ: 'JWT',
    });
  });

  it("mints a one-file server's token without a tenant claim, and a jti of its own each time", () => {
    const [a, b] = [0, 1].map(() => verifier.verify(mintToken({ secret: SECRET, sub: 'ada', ttlSeconds: 60 })));
    expect(a).to.not.have.property('tenant');
    expect(a!.jti).to.be.a('string').and.not.equal(b!.jti);
  });

  it('mints a token the verifier refuses once its ttl is past', () => {
    const token = mintToken({ secret: SECRET, tenant: 'acme', sub: 'ada', ttlSeconds: 60, now: Date.now() - 3600_000 });
    expect(verifier.check(token)).to.include({ ok: false, why: 'expired' });
  });

  for (const [what, options, says] of [
    ['a short secret', { secret: 'short' }, '--jwt-secret'],
    ['a bad tenant name', { tenant: 'Acme Corp' }, '--tenant'],
    ['an empty sub', { sub: '' }, '--sub'],
    [
      'claims overriding sub and exp',
      { claims: { sub: 'root', exp: 1, team: 'ops' } },
      '--claims may not set sub, exp',
    ],
    ['a claim overriding tenant', { claims: { tenant: 'other' } }, 'tenant'],
    ['a claim setting the jti', { claims: { jti: 'mine' } }, '--claims may not set jti'],
  ] as const) {
    it(`refuses ${what} with invalid_option`, () => {
      const valid = { secret: SECRET, tenant: 'acme', sub: 'ada', ttlSeconds: 60 };
      const err = refusal(() => mintToken({ ...valid, ...options }));
      expect(err.code).to.equal('invalid_option');
      expect(err.message).to.include(says);
    });
  }
});

describe('parseTtl', () => {
  it('reads 90s, 30m, 12h, 30d and 2w as seconds', () => {
    expect(['90s', '30m', '12h', '30d', '2w'].map(parseTtl)).to.deep.equal([90, 1800, 43_200, 2_592_000, 1_209_600]);
  });

  it('refuses anything else, naming --ttl', () => {
    for (const text of ['', '0d', '30', '1y', '-1h', '1.5h', 'forever']) {
      expect(refusal(() => parseTtl(text)).message, text).to.include('--ttl');
    }
  });
});

describe('parseClaims', () => {
  it('takes a JSON object and refuses anything else', () => {
    expect(parseClaims('{"team": "ops", "n": 1}')).to.deep.equal({ team: 'ops', n: 1 });
    for (const text of ['[1]', '"x"', 'null', '{bad', '7'])
      expect(refusal(() => parseClaims(text)).message, text).to.include('--claims');
  });
});
