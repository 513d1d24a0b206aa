/**
 * The key set of a trusted issuer, against an issuer served here over real HTTP on 127.0.0.1 (its
 * metadata and its JWKS, each request counted): a rotated key is taken once the set is fetched again,
 * junk kids make at most one fetch per refetch interval, and a fetch past its size cap or its time-out
 * fails in bounded time, never a stall.
 */
import { expect } from 'chai';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JWK } from 'jose';
import { signingKey } from '../../../scripts/dev-oidc.js';
import { OAuthVerifier, type OAuthCheck } from '../../../shared/auth/oauth/verifier.js';
import { accessToken } from '../../integration/oauth/sign-in.js';

interface FakeIssuer {
  readonly url: string;
  keys: JWK[];
  jwksFetches: number;
  /** Answer the JWKS with this many bytes of padding, or never (stall). */
  mode: 'normal' | 'huge' | 'stall';
  close(): Promise<void>;
}

async function issuer(): Promise<FakeIssuer> {
  const state = { keys: [] as JWK[], jwksFetches: 0, mode: 'normal' as FakeIssuer['mode'] };
  const server = http.createServer((req, res) => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    if (req.url === '/.well-known/oauth-authorization-server') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ issuer: url, jwks_uri: `${url}/jwks` }));
    }
    if (req.url === '/jwks') {
      state.jwksFetches += 1;
      if (state.mode === 'stall') return;
      const keys = state.keys.map(({ d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub }) => pub);
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ keys, ...(state.mode === 'huge' ? { pad: 'x'.repeat(1024 * 1024) } : {}) }));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}

describe('OAuth issuer key set', function () {
  this.timeout(30_000);
  let idp: FakeIssuer;
  beforeEach(async () => {
    idp = await issuer();
    idp.keys = [await signingKey('k1')];
  });
  afterEach(() => idp.close());

  const verifier = (refetchMs: number, timeoutMs = 2000) =>
    new OAuthVerifier({
      publicUrl: 'http://127.0.0.1:1',
      issuers: [idp.url],
      timings: { fetch: { timeoutMs, maxBytes: 64 * 1024 }, refetchMs, keysMaxAgeMs: 600_000 },
    });
  const token = (key: JWK) => accessToken(key, { iss: idp.url, aud: 'http://127.0.0.1:1/_mcp' });
  const check = async (v: OAuthVerifier, t: string): Promise<OAuthCheck> => (await v.check(t))!;

  it('takes a key rotated at the IdP once the key set is fetched again, and caches a verified token', async () => {
    const v = verifier(200);
    expect((await check(v, await token(idp.keys[0]!))).ok).to.equal(true);
    const k2 = await signingKey('k2');
    idp.keys = [k2, idp.keys[0]!];
    await new Promise((resolve) => setTimeout(resolve, 250));
    const rotated = await token(k2);
    expect((await check(v, rotated)).ok).to.equal(true);
    expect(idp.jwksFetches).to.equal(2);
    // Verified once: the same token again is answered at once, from the cache.
    expect(v.check(rotated)).not.to.be.instanceOf(Promise);
  });

  it('fetches the key set at most once per refetch interval however many unknown kids come', async () => {
    const v = verifier(60_000);
    expect((await check(v, await token(idp.keys[0]!))).ok).to.equal(true);
    const junk = await Promise.all(Array.from({ length: 10 }, async (_, i) => token(await signingKey(`junk-${i}`))));
    const checks = await Promise.all(junk.map((t) => check(v, t)));
    expect(checks.every((c) => !c.ok && c.why === 'unknown_key')).to.equal(true);
    expect(idp.jwksFetches).to.equal(1);
  });

  it('refuses a key set past the size cap, and one that does not answer within the time-out', async () => {
    idp.mode = 'huge';
    const big = await check(verifier(0), await token(idp.keys[0]!));
    expect(big).to.deep.include({ ok: false, why: 'issuer_unreachable' });
    expect((big as { message: string }).message, (big as { message: string }).message).to.match(/more than the 65536/);
    idp.mode = 'stall';
    const started = Date.now();
    const stalled = await check(verifier(0, 300), await token(idp.keys[0]!));
    expect(Date.now() - started).to.be.below(2_000);
    expect((stalled as { message: string }).message).to.contain('did not answer within 300 ms');
  });
});
