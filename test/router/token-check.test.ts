import { expect } from 'chai';
import { Audit } from '../../shared/audit.js';
import { JwtVerifier } from '../../shared/auth/jwt.js';
import { mintToken } from '../../shared/auth/token.js';
import { FenecError } from '../../shared/errors.js';
import { TokenCheck, type Door } from '../../router/token-check.js';

const SECRET = 'a-router-test-secret-of-32-bytes-or-more';
const lines: string[] = [];
const check = new TokenCheck('server-token', JwtVerifier.create({ secret: SECRET }), Audit.toSink((line) => lines.push(line)));
const jwtOf = (tenant: string): string => mintToken({ secret: SECRET, tenant, sub: 'agent', ttlSeconds: 600 });
const DOOR: Door = { ip: '10.0.0.7', route: '/t/<tenant>/query' };

/** The `why` of the audit lines written since the last call. */
function audited(): string[] {
  const whys = lines.map((line) => (JSON.parse(line) as { why: string }).why);
  lines.length = 0;
  return whys;
}

describe('the router token check', () => {
  beforeEach(() => audited());

  it('takes the server token for every tenant, and audits nothing', () => {
    const caller = check.caller('Bearer server-token', DOOR);
    expect(caller).to.deep.equal({ kind: 'server' });
    expect(check.tenantRefusal(caller as { kind: 'server' }, 'anyone', DOOR)).to.equal(undefined);
    expect(audited()).to.deep.equal([]);
  });

  it('takes a JWT for the tenant its claim names and refuses it for another (403), with an audit line', () => {
    const caller = check.caller(`Bearer ${jwtOf('acme')}`, DOOR);
    expect(caller).to.deep.equal({ kind: 'jwt', tenant: 'acme' });
    expect(check.tenantRefusal(caller as { kind: 'jwt'; tenant: string }, 'acme', DOOR)).to.equal(undefined);
    const refusal = check.tenantRefusal(caller as { kind: 'jwt'; tenant: string }, 'globex', DOOR);
    expect(refusal).to.be.instanceOf(FenecError).with.property('status', 403);
    expect(refusal!.code).to.equal('wrong_tenant');
    expect(lines.map((line) => JSON.parse(line))).to.deep.equal([{ time: JSON.parse(lines[0]!).time, event: 'auth', why: 'wrong_tenant', ip: '10.0.0.7', route: '/t/<tenant>/query' }]);
  });

  it('refuses no token, a non-bearer header, a bad token and a JWT without a tenant (401), each an audit line saying why', () => {
    const valid = mintToken({ secret: SECRET, tenant: 'x', sub: 's', ttlSeconds: 60 });
    const forged = `${valid.slice(0, -4)}AAAA`;
    const expired = mintToken({ secret: SECRET, tenant: 'x', sub: 's', ttlSeconds: 60, now: Date.now() - 3_600_000 });
    const noTenant = mintToken({ secret: SECRET, sub: 's', ttlSeconds: 60 });
    for (const header of [undefined, '', 'Basic abc', 'Bearer nope', `Bearer ${forged}`, `Bearer ${expired}`, `Bearer ${noTenant}`]) {
      const caller = check.caller(header, DOOR);
      expect(caller, String(header)).to.be.instanceOf(FenecError).with.property('status', 401);
    }
    expect(audited()).to.deep.equal(['missing', 'missing', 'not_bearer', 'malformed', 'bad_signature', 'expired', 'no_tenant']);
  });

  it('refuses a JWT where only the server token goes (403), with an audit line', () => {
    const caller = check.caller(`Bearer ${jwtOf('acme')}`, DOOR) as { kind: 'jwt'; tenant: string };
    expect(check.serverOnlyRefusal({ kind: 'server' }, { ip: '10.0.0.7', route: '/_tenants' })).to.equal(undefined);
    expect(check.serverOnlyRefusal(caller, { ip: '10.0.0.7', route: '/_tenants' })!.code).to.equal('forbidden');
    expect(audited()).to.deep.equal(['not_server_token']);
  });
});
