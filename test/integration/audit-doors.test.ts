/**
 * Every refused token is an audit line, at every door: a router (`fenec-router --audit FILE`) and a
 * tenant node (`fenec-server --data-dir D --audit FILE`), both real processes, read from their files.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mintToken } from '../../shared/auth/token.js';
import { FENEC_ROUTER, request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const TOKEN = 'audit-doors-server-token';
const SECRET = 'audit-doors-secret-of-at-least-32-bytes';

const jwt = (claims: { tenant?: string; now?: number } = {}): string =>
  mintToken({ secret: SECRET, sub: 'agent-7', ttlSeconds: 600, ...claims });
const valid = jwt({ tenant: 'acme' });
/** Tokens refused, by what the audit must say of them. */
const REFUSED: readonly [why: string, authorization: string | undefined][] = [
  ['missing', undefined],
  ['not_bearer', 'Basic YWRtaW46YWRtaW4='],
  ['malformed', 'Bearer not-a-jwt'],
  ['bad_signature', `Bearer ${valid.slice(0, -6)}AAAAAA`],
  [
    'bad_signature',
    `Bearer ${mintToken({ secret: 'another-secret-that-is-32-bytes-long!!', tenant: 'acme', sub: 'mallory', ttlSeconds: 600 })}`,
  ],
  ['expired', `Bearer ${jwt({ tenant: 'acme', now: Date.now() - 3_600_000 })}`],
];

interface AuditLine {
  readonly event: string;
  readonly why: string;
  readonly ip: string | null;
  readonly route: string;
}

/** The audit lines a file holds past `from` bytes. */
function linesOf(file: string, from = 0): AuditLine[] {
  const text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8').slice(from) : '';
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as AuditLine);
}

const post = (base: string, route: string, authorization: string | undefined): Promise<Reply> =>
  request(base, {
    method: 'POST',
    path: `/t/acme/${route}`,
    headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
    body:
      route === 'query' ? '{"statement": "get notes count"}' : '{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
  });

describe('audit lines for refused tokens at every door (--audit)', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let nodeAudit: string;
  let routerAudit: string;
  let node: ServerProcess;
  let router: ServerProcess;

  before(async () => {
    const dir = sandbox.dir();
    nodeAudit = path.join(dir, 'node-audit.jsonl');
    routerAudit = path.join(dir, 'router-audit.jsonl');
    node = await sandbox.startServer(['--data-dir', path.join(dir, 'data'), '--mcp', '--audit', nodeAudit], {
      FENEC_TOKEN: TOKEN,
      FENEC_JWT_SECRET: SECRET,
    });
    router = await sandbox.startProgram(
      FENEC_ROUTER,
      ['--port', '0', '--nodes', `a=${node.url}`, '--audit', routerAudit],
      { FENEC_TOKEN: TOKEN, FENEC_JWT_SECRET: SECRET },
    );
    const created = await request(router.url, {
      method: 'PUT',
      path: '/t/acme',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(created.status).to.equal(201);
    expect(
      (await request(router.url, { method: 'PUT', path: '/t/globex', headers: { authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).to.equal(201);
  });
  after(() => sandbox.cleanUp());

  for (const door of ['router', 'node'] as const) {
    it(`${door}: names the tenant asked for, and the tenant and sub a refused token claimed`, async () => {
      const base = door === 'router' ? router.url : node.url;
      const file = door === 'router' ? routerAudit : nodeAudit;
      const from = fs.existsSync(file) ? fs.statSync(file).size : 0;
      expect((await post(base, 'query', `Bearer ${jwt({ tenant: 'globex' })}`)).status).to.equal(403);
      expect(linesOf(file, from).at(-1)).to.include({
        why: 'wrong_tenant',
        tenant: 'acme',
        token_tenant: 'globex',
        sub: 'agent-7',
      });
    });

    it(`${door}: tells a wrong server token that it matches neither the server token nor a JWT`, async () => {
      const reply = await post(door === 'router' ? router.url : node.url, 'query', 'Bearer not-the-server-token');
      expect(reply.status).to.equal(401);
      expect(reply.json.error.message).to.equal(
        'the token matches neither the server token nor a JSON Web Token this server takes',
      );
      expect(reply.json.error.message).not.to.contain('fenec token');
    });

    it(`${door}: writes a line for each refused token, on /query and /_mcp, before the answer, and none for a token taken`, async () => {
      const base = door === 'router' ? router.url : node.url;
      const file = door === 'router' ? routerAudit : nodeAudit;
      const otherFile = door === 'router' ? nodeAudit : routerAudit;
      const from = fs.existsSync(file) ? fs.statSync(file).size : 0;
      const otherFrom = fs.existsSync(otherFile) ? fs.statSync(otherFile).size : 0;
      const expected: Omit<AuditLine, 'ip'>[] = [];
      for (const route of ['query', '_mcp']) {
        for (const [why, authorization] of REFUSED) {
          const reply = await post(base, route, authorization);
          expect(reply.status, `${why} on ${route}`).to.equal(401);
          expected.push({ event: 'auth', why, route: `/t/<tenant>/${route}` });
          // Written before the answer left: the line is there as soon as the answer is.
          expect(linesOf(file, from), `${why} on ${route}`).to.have.length(expected.length);
        }
        const wrong = await post(base, route, `Bearer ${jwt({ tenant: 'globex' })}`);
        expect(wrong.status).to.equal(403);
        expect(wrong.json.error.code).to.equal('wrong_tenant');
        expected.push({ event: 'auth', why: 'wrong_tenant', route: `/t/<tenant>/${route}` });
        // A JWT without a tenant claim reaches no tenant: refused alike by the router and a node.
        const untenanted = await post(base, route, `Bearer ${jwt()}`);
        expect(untenanted.status).to.equal(401);
        expect(untenanted.json.error.code).to.equal('invalid_token');
        expected.push({ event: 'auth', why: 'no_tenant', route: `/t/<tenant>/${route}` });
        // Taken: no line.
        expect((await post(base, route, `Bearer ${valid}`)).status).to.be.oneOf([200, 403, 404]);
      }
      const admin = await request(base, {
        method: 'PUT',
        path: '/t/initech',
        headers: { authorization: `Bearer ${valid}` },
      });
      expect(admin.status).to.equal(401);
      expected.push({ event: 'auth', why: 'not_server_token', route: 'PUT /t/<tenant>' });
      const list = await request(base, { path: '/_tenants', headers: { authorization: `Bearer ${valid}` } });
      expect(list.status).to.equal(401);
      expected.push({ event: 'auth', why: 'not_server_token', route: '/_tenants' });

      const lines = linesOf(file, from);
      expect(lines.map(({ event, why, route }) => ({ event, why, route }))).to.deep.equal(expected);
      for (const line of lines) expect(line.ip).to.match(/127\.0\.0\.1$/);
      // A token is never written, not even a forged or expired one.
      const text = fs.readFileSync(file, 'utf8');
      for (const [, authorization] of REFUSED)
        if (authorization !== undefined) expect(text).not.to.include(authorization.slice(7));
      expect(text).not.to.include(valid);
      if (door === 'router') {
        // The router forwarded none of the requests it refused: the node wrote nothing meanwhile.
        expect(linesOf(otherFile, otherFrom)).to.deep.equal([]);
      }
    });
  }
});
