/**
 * One front door: a router and the tenant node behind it refuse the same request with the same
 * answer — status, body and headers — whichever of the two it reaches. Both real processes.
 */
import { expect } from 'chai';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import {
  FENEC_ROUTER,
  request,
  Sandbox,
  type Reply,
  type RequestOptions,
  type ServerProcess,
} from '../integration/processes.js';

const TOKEN = 'front-door-server-token';
const SECRET = 'front-door-secret-of-at-least-32-bytes';
const ENV = { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET };
const jwt = (claims: { tenant?: string; now?: number } = {}): string =>
  mintToken({ secret: SECRET, sub: 'agent-7', ttlSeconds: 600, ...claims });
const valid = jwt({ tenant: 'acme' });

const query = (
  authorization: string | undefined,
  headers: Record<string, string> = {},
  tenant = 'acme',
): RequestOptions => ({
  method: 'POST',
  path: `/t/${tenant}/query`,
  headers: {
    'content-type': 'application/json',
    ...(authorization === undefined ? {} : { authorization }),
    ...headers,
  },
  body: '{"statement": "get notes count"}',
});

/** Refusals both doors make, with the status and code each must answer. */
const REFUSALS: readonly [what: string, options: RequestOptions, status: number, code: string][] = [
  ['no token', query(undefined), 401, 'unauthorized'],
  ['a Basic header', query('Basic YWRtaW46YWRtaW4='), 401, 'invalid_token'],
  ['a forged token', query(`Bearer ${valid.slice(0, -6)}AAAAAA`), 401, 'invalid_token'],
  ['an expired token', query(`Bearer ${jwt({ tenant: 'acme', now: Date.now() - 3_600_000 })}`), 401, 'invalid_token'],
  ["a token that is not the server's and no JWT", query('Bearer not-a-jwt'), 401, 'invalid_token'],
  ['a JWT without a tenant claim', query(`Bearer ${jwt()}`), 401, 'invalid_token'],
  ["another tenant's JWT", query(`Bearer ${jwt({ tenant: 'globex' })}`), 403, 'wrong_tenant'],
  [
    'a foreign Origin with the server token',
    query(`Bearer ${TOKEN}`, { origin: 'https://evil.example' }),
    403,
    'forbidden_origin',
  ],
  [
    'a foreign Origin with a valid JWT',
    query(`Bearer ${valid}`, { origin: 'https://evil.example' }),
    403,
    'forbidden_origin',
  ],
  ['a path whose tenant is not a name', query(`Bearer ${TOKEN}`, {}, 'Acme'), 400, 'invalid_tenant'],
  [
    'a JWT creating a tenant',
    { method: 'PUT', path: '/t/initech', headers: { authorization: `Bearer ${valid}` } },
    401,
    'invalid_token',
  ],
  [
    'a JWT listing revocations',
    { method: 'GET', path: '/t/acme/_revocations', headers: { authorization: `Bearer ${valid}` } },
    401,
    'invalid_token',
  ],
  ['a JWT listing tenants', { path: '/_tenants', headers: { authorization: `Bearer ${valid}` } }, 401, 'invalid_token'],
  [
    'a JWT asking for a backup',
    { path: '/t/acme/_backup', headers: { authorization: `Bearer ${valid}` } },
    401,
    'invalid_token',
  ],
];

/** What must be the same from both doors: everything but the date. */
function answer(reply: Reply): { status: number; body: string; headers: Record<string, unknown> } {
  const { date: _date, ...headers } = reply.headers;
  return { status: reply.status, body: reply.text, headers };
}

describe('one front door: the router and a node refuse alike', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let node: ServerProcess;
  let router: ServerProcess;

  before(async () => {
    const dir = sandbox.dir();
    node = await sandbox.startServer(['--data-dir', path.join(dir, 'data')], ENV);
    router = await sandbox.startProgram(FENEC_ROUTER, ['--port', '0', '--nodes', `a=${node.url}`], ENV);
    for (const tenant of ['acme', 'globex']) {
      expect(
        (
          await request(router.url, {
            method: 'PUT',
            path: `/t/${tenant}`,
            headers: { authorization: `Bearer ${TOKEN}` },
          })
        ).status,
      ).to.equal(201);
    }
  });
  after(() => sandbox.cleanUp());

  for (const [what, options, status, code] of REFUSALS) {
    it(`answers ${what} with ${status} ${code}, byte for byte the same from the router and the node`, async () => {
      const [atRouter, atNode] = await Promise.all([request(router.url, options), request(node.url, options)]);
      expect(atNode.status, atNode.text).to.equal(status);
      expect(atNode.json.error.code).to.equal(code);
      expect(atNode.headers['content-type']).to.equal('application/json');
      expect(atNode.headers['www-authenticate']).to.equal(status === 401 ? 'Bearer' : undefined);
      expect(answer(atRouter)).to.deep.equal(answer(atNode));
    });
  }

  it('takes the requests it refused once they are right, at both doors', async () => {
    for (const base of [router.url, node.url]) {
      const reply = await request(base, query(`Bearer ${TOKEN}`));
      // No collection yet: the request went through the front door to the tenant's file.
      expect(reply.json.error.code, base).to.equal('unknown_collection');
    }
  });
});
