import { expect } from 'chai';
import { JwtVerifier } from '../../shared/auth/jwt.js';
import { mintToken } from '../../shared/auth/token.js';
import { FenecError } from '../../shared/errors.js';
import { TokenCheck } from '../../router/token-check.js';

const SECRET = 'a-router-test-secret-of-32-bytes-or-more';
const check = new TokenCheck('server-token', JwtVerifier.create({ secret: SECRET }));
const jwtOf = (tenant: string): string => mintToken({ secret: SECRET, tenant, sub: 'agent', ttlSeconds: 600 });

describe('the router token check', () => {
  it('takes the server token for every tenant', () => {
    const caller = check.caller('Bearer server-token');
    expect(caller).to.deep.equal({ kind: 'server' });
    expect(TokenCheck.tenantRefusal(caller as { kind: 'server' }, 'anyone')).to.equal(undefined);
  });

  it('takes a JWT for the tenant its claim names and refuses it for another (403)', () => {
    const caller = check.caller(`Bearer ${jwtOf('acme')}`);
    expect(caller).to.deep.equal({ kind: 'jwt', tenant: 'acme' });
    expect(TokenCheck.tenantRefusal(caller as { kind: 'jwt'; tenant: string }, 'acme')).to.equal(undefined);
    const refusal = TokenCheck.tenantRefusal(caller as { kind: 'jwt'; tenant: string }, 'globex');
    expect(refusal).to.be.instanceOf(FenecError).with.property('status', 403);
    expect(refusal!.code).to.equal('wrong_tenant');
  });

  it('refuses no token, a non-bearer header, a bad token and a JWT without a tenant (401)', () => {
    const noTenant = mintToken({ secret: SECRET, tenant: 'x', sub: 's', ttlSeconds: 60 });
    const forged = `${noTenant.slice(0, -4)}AAAA`;
    for (const header of [undefined, '', 'Basic abc', 'Bearer nope', `Bearer ${forged}`]) {
      const caller = check.caller(header);
      expect(caller, String(header)).to.be.instanceOf(FenecError).with.property('status', 401);
    }
  });
});
