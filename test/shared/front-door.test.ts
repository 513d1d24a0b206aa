import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { Audit } from '../../shared/audit.js';
import { JwtVerifier } from '../../shared/auth/jwt.js';
import { mintToken } from '../../shared/auth/token.js';
import { FenecError } from '../../shared/errors.js';
import { FrontDoor, SERVER_CALLER } from '../../shared/http/front-door.js';

const SECRET = 'a-front-door-test-secret-of-32-bytes-or-more';
const lines: string[] = [];
const door = new FrontDoor(
  { httpToken: 'server-token', jwt: JwtVerifier.create({ secret: SECRET }), host: '127.0.0.1' },
  Audit.toSink((line) => lines.push(line)),
);
const jwtOf = (tenant: string): string => mintToken({ secret: SECRET, tenant, sub: 'agent', ttlSeconds: 600 });
const ROUTE = '/t/<tenant>/query';

/** The request's parts the front door reads: its headers and its peer's address. */
function requestWith(headers: Record<string, string | undefined>): IncomingMessage {
  return {
    headers: { host: 'db.example.com', ...headers },
    socket: { remoteAddress: '10.0.0.7' },
  } as unknown as IncomingMessage;
}
const bearer = (token: string | undefined) =>
  requestWith({ authorization: token === undefined ? undefined : `Bearer ${token}` });

/** The `why` of the audit lines written since the last call. */
function audited(): string[] {
  const whys = lines.map((line) => (JSON.parse(line) as { why: string }).why);
  lines.length = 0;
  return whys;
}

describe('the front door (router and node alike)', () => {
  beforeEach(() => audited());

  it('takes the server token for every tenant and every route, and audits nothing', () => {
    expect(door.tenantCaller(bearer('server-token'), 'anyone', ROUTE)).to.equal(SERVER_CALLER);
    expect(door.caller(bearer('server-token'), '/_tenants', 'server')).to.equal(SERVER_CALLER);
    expect(audited()).to.deep.equal([]);
  });

  it('takes a JWT for the tenant its claim names and refuses it for another (403), with an audit line', () => {
    const caller = door.tenantCaller(bearer(jwtOf('acme')), 'acme', ROUTE);
    expect(caller).to.include({ kind: 'jwt' });
    const refusal = door.tenantCaller(bearer(jwtOf('acme')), 'globex', ROUTE);
    expect(refusal).to.be.instanceOf(FenecError).with.property('status', 403);
    expect((refusal as FenecError).code).to.equal('wrong_tenant');
    expect(lines.map((line) => JSON.parse(line))).to.deep.equal([
      {
        time: JSON.parse(lines[0]!).time,
        event: 'auth',
        why: 'wrong_tenant',
        ip: '10.0.0.7',
        route: ROUTE,
        // Who tried what: the tenant asked for, and the tenant and sub the token claimed.
        tenant: 'globex',
        token_tenant: 'acme',
        sub: 'agent',
      },
    ]);
  });

  it('refuses no token, a non-bearer header, a bad token and a JWT without a tenant (401), each an audit line saying why', () => {
    const valid = mintToken({ secret: SECRET, tenant: 'x', sub: 's', ttlSeconds: 60 });
    const forged = `${valid.slice(0, -4)}AAAA`;
    const expired = mintToken({ secret: SECRET, tenant: 'x', sub: 's', ttlSeconds: 60, now: Date.now() - 3_600_000 });
    const noTenant = mintToken({ secret: SECRET, sub: 's', ttlSeconds: 60 });
    for (const header of [
      undefined,
      '',
      'Basic abc',
      'Bearer nope',
      `Bearer ${forged}`,
      `Bearer ${expired}`,
      `Bearer ${noTenant}`,
    ]) {
      const caller = door.tenantCaller(requestWith({ authorization: header }), 'x', ROUTE);
      expect(caller, String(header)).to.be.instanceOf(FenecError).with.property('status', 401);
    }
    expect(audited()).to.deep.equal([
      'missing',
      'missing',
      'not_bearer',
      'malformed',
      'bad_signature',
      'expired',
      'no_tenant',
    ]);
  });

  it('refuses a JWT, even a valid one, where only the server token goes (401, not verified), with an audit line', () => {
    const refusal = door.caller(bearer(jwtOf('acme')), '/_tenants', 'server') as FenecError;
    expect(refusal.code).to.equal('invalid_token');
    expect(refusal.message).to.equal("/_tenants takes the server's token only; the token given is not it");
    expect(audited()).to.deep.equal(['not_server_token']);
  });

  it('refuses a route of the server token to every caller where JWTs alone are taken, saying to start with --http-token', () => {
    const jwtOnly = new FrontDoor(
      { httpToken: undefined, jwt: JwtVerifier.create({ secret: SECRET }), host: '127.0.0.1' },
      Audit.toSink((line) => lines.push(line)),
    );
    for (const token of [undefined, jwtOf('acme'), 'guess']) {
      const refusal = jwtOnly.caller(bearer(token), '/_metrics', 'server') as FenecError;
      expect(refusal.code, String(token)).to.equal('unauthorized');
      expect(refusal.message).to.include('started without one');
      expect(refusal.hint).to.include('--http-token');
    }
    expect(audited()).to.deep.equal(['not_server_token', 'not_server_token', 'not_server_token']);
    expect(jwtOnly.caller(bearer(jwtOf('acme')), ROUTE)).to.have.property('kind', 'jwt');
  });

  it("refuses a foreign Origin before the token, and takes the page's own origin and the --http-cors one", () => {
    const foreign = door.caller(
      requestWith({ origin: 'https://evil.example', authorization: 'Bearer server-token' }),
      ROUTE,
    ) as FenecError;
    expect(foreign.code).to.equal('forbidden_origin');
    expect(
      door.caller(requestWith({ origin: 'https://db.example.com', authorization: 'Bearer server-token' }), ROUTE),
    ).to.equal(SERVER_CALLER);
    const cors = new FrontDoor({
      httpToken: 'server-token',
      jwt: undefined,
      httpCors: 'https://app.example',
      host: '127.0.0.1',
    });
    expect(
      cors.caller(requestWith({ origin: 'https://app.example', authorization: 'Bearer server-token' }), ROUTE),
    ).to.equal(SERVER_CALLER);
    expect((cors.caller(requestWith({ origin: 'https://evil.example' }), ROUTE) as FenecError).message).to.include(
      'or https://app.example',
    );
    // Refused before the token was looked at: no audit line.
    expect(audited()).to.deep.equal([]);
  });
});
