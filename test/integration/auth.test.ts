/**
 * Who may ask, against real fenec-server processes: JSON Web Tokens (HS256, RS256, ES256) and forged
 * ones, the audit line each refusal leaves (never the token), Origin and Host, CORS preflights,
 * /_metrics, and `fenec token` minting a token a server takes.
 */
import { createHmac, generateKeyPairSync } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { FENEC, query, request, Sandbox, type ServerProcess } from './processes.js';

const TOKEN = 'server-token-5b9e';
const SECRET = 'an-hs256-secret-of-32-bytes-or-more-7c1d';
const CORS = 'https://app.example.com';
const POLICY = '# each holder sees and writes its own notes\nnotes  read,write  where owner = $jwt.sub\n';
const now = (): number => Math.floor(Date.now() / 1000);
const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

interface AuditLine {
  readonly event: string;
  readonly why?: string;
  readonly ip?: string;
  readonly route?: string;
  readonly [key: string]: unknown;
}

describe('tokens, policies, Origin and Host over HTTP', function () {
  this.timeout(30_000);
  const sandbox = new Sandbox();
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  let dir: string;
  /** HS256 with issuer and audience, a policy, an audit file, the server token and a CORS origin. */
  let hs: ServerProcess;
  /** RS256, the same policy, its own audit file. */
  let rs: ServerProcess;
  /** ES256, the same policy, audit on stderr, no server token. */
  let es: ServerProcess;
  /** HS256 from FENEC_JWT_SECRET, no --policy: a JWT reaches nothing. */
  let bare: ServerProcess;
  let hsAudit: string;
  let rsAudit: string;

  const hsToken = (claims: object = {}): string =>
    jwt.sign({ sub: 'ada', tenant: 'acme', iss: 'fenec', aud: 'agents', ...claims }, SECRET, {
      algorithm: 'HS256',
      ...('exp' in claims ? {} : { expiresIn: 300 }),
    });

  before(async () => {
    dir = sandbox.dir();
    const file = (name: string, text: string): string => {
      const where = path.join(dir, name);
      fs.writeFileSync(where, text);
      return where;
    };
    const policy = file('policy.txt', POLICY);
    const rsaKey = file('rsa.pem', rsaPem);
    const ecKey = file('ec.pem', ec.publicKey.export({ type: 'spki', format: 'pem' }).toString());
    hsAudit = path.join(dir, 'hs-audit.log');
    rsAudit = path.join(dir, 'rs-audit.log');
    [hs, rs, es, bare] = await Promise.all([
      sandbox.startServer([
        '--file',
        path.join(dir, 'hs.fenec'),
        '--http-token',
        TOKEN,
        '--jwt-secret',
        SECRET,
        '--jwt-issuer',
        'fenec',
        '--jwt-audience',
        'agents',
        '--policy',
        policy,
        '--audit',
        hsAudit,
        '--http-cors',
        CORS,
      ]),
      sandbox.startServer([
        '--file',
        path.join(dir, 'rs.fenec'),
        '--http-token',
        TOKEN,
        '--jwt-public-key',
        rsaKey,
        '--policy',
        policy,
        '--audit',
        rsAudit,
      ]),
      sandbox.startServer([
        '--file',
        path.join(dir, 'es.fenec'),
        '--jwt-public-key',
        ecKey,
        '--policy',
        policy,
        '--audit',
      ]),
      sandbox.startServer(['--file', path.join(dir, 'bare.fenec'), '--http-token', TOKEN], {
        FENEC_JWT_SECRET: SECRET,
      }),
    ]);
    for (const server of [hs, rs, bare]) {
      const created = await query(server.url, 'create collection notes (title text, owner text @hash)', [], TOKEN);
      expect(created.status, created.text).to.equal(200);
    }
  });

  after(() => sandbox.cleanUp());

  function auditLines(file: string): AuditLine[] {
    if (!fs.existsSync(file)) return [];
    return fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditLine);
  }

  describe('forged and broken tokens', () => {
    const forged: Array<[name: string, server: () => ServerProcess, token: () => string, why: string]> = [
      [
        'alg none',
        () => hs,
        () =>
          `${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: 'ada', iss: 'fenec', aud: 'agents', exp: now() + 300 })}.`,
        'unsigned',
      ],
      [
        'the wrong secret',
        () => hs,
        () => jwt.sign({ sub: 'ada', iss: 'fenec', aud: 'agents' }, `${SECRET}-not`, { expiresIn: 300 }),
        'bad_signature',
      ],
      [
        "HS256 signed with the RS256 public key's PEM as its secret",
        () => rs,
        () => {
          const input = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({ sub: 'ada', exp: now() + 300 })}`;
          return `${input}.${createHmac('sha256', rsaPem).update(input).digest('base64url')}`;
        },
        'wrong_algorithm',
      ],
      ['expired', () => hs, () => hsToken({ exp: now() - 3600 }), 'expired'],
      ['not yet valid', () => hs, () => hsToken({ nbf: now() + 3600 }), 'not_yet_valid'],
      ['the wrong iss', () => hs, () => hsToken({ iss: 'someone-else' }), 'wrong_issuer'],
      ['the wrong aud', () => hs, () => hsToken({ aud: 'others' }), 'wrong_audience'],
      ['malformed', () => hs, () => 'this.is.not-a-token', 'malformed'],
      ['truncated', () => hs, () => hsToken().slice(0, -12), 'bad_signature'],
      ['10 KB of garbage', () => hs, () => 'A'.repeat(10 * 1024), 'malformed'],
    ];
    for (const [name, server, token, why] of forged) {
      it(`refuses ${name} with invalid_token (401) and one audit line saying ${why}, without the token`, async () => {
        const auditFile = server() === rs ? rsAudit : hsAudit;
        const before = auditLines(auditFile).length;
        const text = token();
        const reply = await query(server().url, 'get notes', [], text);
        expect(reply.status, reply.text).to.equal(401);
        expect(reply.json.error.code).to.equal('invalid_token');
        expect(reply.headers['www-authenticate']).to.equal('Bearer');
        const lines = auditLines(auditFile);
        expect(lines.length).to.equal(before + 1);
        expect(lines.at(-1)).to.include({ event: 'auth', why, ip: '127.0.0.1', route: '/query' });
        expect(lines.at(-1)!.time).to.be.a('string');
        const written = fs.readFileSync(auditFile, 'utf8');
        for (const part of text.split('.').filter((p) => p.length >= 8)) {
          expect(written).not.to.include(part);
          expect(reply.text).not.to.include(part);
        }
      });
    }

    it('refuses a request without a token with unauthorized (401), audited as missing', async () => {
      const reply = await query(hs.url, 'get notes');
      expect(reply.status).to.equal(401);
      expect(reply.json.error.code).to.equal('unauthorized');
      expect(auditLines(hsAudit).at(-1)).to.include({ event: 'auth', why: 'missing' });
    });
  });

  describe('valid tokens', () => {
    it('takes an HS256 token, held to the policy: its writes carry its sub, its reads see only its rows', async () => {
      await query(hs.url, 'insert into notes {title: "the server\'s", owner: "root"}', [], TOKEN);
      const ada = hsToken({ sub: 'ada' });
      const written = await query(hs.url, 'insert into notes {title: "ada\'s"}', [], ada);
      expect(written.status, written.text).to.equal(200);
      const read = await query(hs.url, 'get notes select title, owner', [], ada);
      expect(read.status, read.text).to.equal(200);
      expect(read.json.rows).to.deep.equal([{ id: 2, title: "ada's", owner: 'ada' }]);
      const all = await query(hs.url, 'get notes count', [], TOKEN);
      expect(all.json.count).to.equal(2);
    });

    it('takes an RS256 token on the RSA server and an ES256 token on the EC one', async () => {
      const rsToken = jwt.sign({ sub: 'bo' }, rsa.privateKey, { algorithm: 'RS256', expiresIn: 300 });
      const rsReply = await query(rs.url, 'get notes', [], rsToken);
      expect(rsReply.status, rsReply.text).to.equal(200);
      // The EC server has no notes collection (and no server token to make one): the token is past the guard.
      const esToken = jwt.sign({ sub: 'cy' }, ec.privateKey, { algorithm: 'ES256', expiresIn: 300 });
      const esReply = await query(es.url, 'get notes', [], esToken);
      expect(esReply.status, esReply.text).to.equal(404);
      expect(esReply.json.error.code).to.equal('unknown_collection');
      const forged = await query(
        es.url,
        'get notes',
        [],
        jwt.sign({ sub: 'cy' }, rsa.privateKey, { algorithm: 'RS256', expiresIn: 300 }),
      );
      expect(forged.status).to.equal(401);
    });

    it('writes audit lines to stderr under --audit with no file', async () => {
      await query(es.url, 'get notes', [], 'garbage');
      // The line was written before the answer; the pipe from the child may bring it a moment after.
      const malformed = async (): Promise<AuditLine | undefined> => {
        for (let tries = 0; tries < 50; tries++) {
          const lines = es
            .stderr()
            .split('\n')
            .filter((line) => line.includes('"event":"auth"'))
            .map((line) => JSON.parse(line) as AuditLine);
          const found = lines.find((line) => line.why === 'malformed');
          if (found !== undefined) return found;
          await sleep(20);
        }
        return undefined;
      };
      expect(await malformed()).to.include({ event: 'auth', why: 'malformed', ip: '127.0.0.1', route: '/query' });
    });

    it('holds a JWT to the empty policy on a server without --policy: no collection is visible', async () => {
      const token = jwt.sign({ sub: 'ada' }, SECRET, { expiresIn: 300 });
      const get = await query(bare.url, 'get notes', [], token);
      expect(get.status, get.text).to.equal(404);
      expect(get.json.error.code).to.equal('unknown_collection');
      const schema = await query(bare.url, 'schema', [], token);
      expect(schema.status, schema.text).to.equal(200);
      expect(schema.json.collections).to.deep.equal([]);
    });

    it("refuses schema changes to a JWT and audits the server token's, with no row contents", async () => {
      const refused = await query(hs.url, 'create collection secrets (x text)', [], hsToken());
      expect(refused.status, refused.text).to.equal(403);
      expect(refused.json.error.code).to.equal('forbidden');
      const made = await query(hs.url, '-- a comment first\nCREATE collection extra (x text)', [], TOKEN);
      expect(made.status, made.text).to.equal(200);
      await query(hs.url, 'alter collection extra add y int', [], TOKEN);
      await query(hs.url, 'compact', [], TOKEN);
      await query(hs.url, 'drop collection extra', [], TOKEN);
      const schema = auditLines(hsAudit).filter((line) => line.event === 'schema');
      const entries = schema.map(({ statement, collection, who, sub }) => ({ statement, collection, who, sub }));
      expect(entries).to.deep.equal([
        { statement: 'create', collection: 'notes', who: 'server', sub: null },
        { statement: 'create', collection: 'extra', who: 'server', sub: null },
        { statement: 'alter add', collection: 'extra', who: 'server', sub: null },
        { statement: 'compact', collection: null, who: 'server', sub: null },
        { statement: 'drop', collection: 'extra', who: 'server', sub: null },
      ]);
      expect(fs.readFileSync(hsAudit, 'utf8')).not.to.include("ada's");
    });

    it('serves /_metrics to the server token only, not to a JWT', async () => {
      const withJwt = await request(hs.url, { path: '/_metrics', headers: { authorization: `Bearer ${hsToken()}` } });
      expect(withJwt.status).to.equal(401);
      expect(withJwt.json.error.message).to.include("server's token only");
      const withToken = await request(hs.url, { path: '/_metrics', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(withToken.status).to.equal(200);
    });
  });

  describe('Origin and Host', () => {
    const get = (headers: Record<string, string>) => ({
      method: 'POST',
      path: '/query',
      headers: { 'content-type': 'application/json', ...headers },
      body: '{"statement": "get notes count"}',
    });

    it('refuses a foreign Origin with forbidden_origin (403) even with a valid token', async () => {
      for (const token of [hsToken(), TOKEN]) {
        const reply = await request(hs.url, get({ origin: 'https://evil.example', authorization: `Bearer ${token}` }));
        expect(reply.status).to.equal(403);
        expect(reply.json.error.code).to.equal('forbidden_origin');
      }
    });

    it("answers the server's own Origin and a request without Origin", async () => {
      const own = await request(
        hs.url,
        get({ origin: `http://${new URL(hs.url).host}`, authorization: `Bearer ${hsToken()}` }),
      );
      expect(own.status, own.text).to.equal(200);
      const none = await request(hs.url, get({ authorization: `Bearer ${hsToken()}` }));
      expect(none.status, none.text).to.equal(200);
    });

    it('answers a CORS preflight for the --http-cors origin only', async () => {
      const preflight = (origin: string) =>
        request(hs.url, {
          method: 'OPTIONS',
          path: '/query',
          headers: { origin, 'access-control-request-method': 'POST' },
        });
      const allowed = await preflight(CORS);
      expect(allowed.status).to.equal(204);
      expect(allowed.headers['access-control-allow-origin']).to.equal(CORS);
      expect(allowed.headers['access-control-allow-headers']).to.include('authorization');
      const other = await preflight('https://other.example.com');
      expect(other.status).to.equal(403);
      expect(other.headers['access-control-allow-origin']).to.equal(undefined);
      const cors = await request(hs.url, get({ origin: CORS, authorization: `Bearer ${hsToken()}` }));
      expect(cors.status).to.equal(200);
      expect(cors.headers['access-control-allow-origin']).to.equal(CORS);
    });

    it("takes a rebound Host with a token (the server's or a JWT) and refuses it without one", async () => {
      const host = 'rebound.example.com';
      expect((await request(hs.url, get({ host }))).status).to.equal(401);
      expect((await request(hs.url, get({ host, authorization: `Bearer ${TOKEN}` }))).status).to.equal(200);
      expect((await request(hs.url, get({ host, authorization: `Bearer ${hsToken()}` }))).status).to.equal(200);
    });
  });

  describe('fenec token', () => {
    it('mints a token that a server with the same secret and a policy takes', async () => {
      const minted = await sandbox.run(
        FENEC,
        ['token', '--tenant', 'acme', '--sub', 'dee', '--ttl', '1h', '--claims', '{"team": "ops"}'],
        { FENEC_JWT_SECRET: SECRET },
      );
      expect(minted.code, minted.stderr).to.equal(0);
      const token = minted.stdout.trim();
      const claims = jwt.verify(token, SECRET) as jwt.JwtPayload;
      expect(claims).to.include({ sub: 'dee', tenant: 'acme', team: 'ops' });
      expect(claims.exp! - claims.iat!).to.equal(3600);
      const server = await sandbox.startServer(
        ['--file', path.join(dir, 'minted.fenec'), '--policy', path.join(dir, 'policy.txt'), '--http-token', TOKEN],
        { FENEC_JWT_SECRET: SECRET },
      );
      await query(server.url, 'create collection notes (title text, owner text @hash)', [], TOKEN);
      expect((await query(server.url, 'insert into notes {title: "dee\'s"}', [], token)).status).to.equal(200);
      const read = await query(server.url, 'get notes select title, owner', [], token);
      expect(read.status, read.text).to.equal(200);
      expect(read.json.rows).to.deep.equal([{ id: 1, title: "dee's", owner: 'dee' }]);
    });

    it('refuses claims that would override sub, tenant or exp, and a missing secret, with exit 2', async () => {
      const override = await sandbox.run(
        FENEC,
        ['token', '--tenant', 'acme', '--sub', 'dee', '--claims', '{"sub": "root", "exp": 9999999999}'],
        { FENEC_JWT_SECRET: SECRET },
      );
      expect(override.code).to.equal(2);
      expect(override.stderr).to.include('--claims may not set sub, exp');
      const noSecret = await sandbox.run(FENEC, ['token', '--tenant', 'acme', '--sub', 'dee'], {
        FENEC_JWT_SECRET: '',
      });
      expect(noSecret.code).to.equal(2);
      expect(noSecret.stderr).to.include('FENEC_JWT_SECRET');
      const ttl = await sandbox.run(FENEC, ['token', '--tenant', 'acme', '--sub', 'dee', '--ttl', 'forever'], {
        FENEC_JWT_SECRET: SECRET,
      });
      expect(ttl.code).to.equal(2);
      expect(ttl.stderr.trim().split('\n')).to.have.length(1);
    });
  });

  describe('bad flags', () => {
    const cases: Array<[name: string, args: () => string[], says: string]> = [
      ['a short secret', () => ['--jwt-secret', 'short'], '--jwt-secret takes at least 32 bytes'],
      ['a key file that is not one', () => ['--jwt-public-key', path.join(dir, 'policy.txt')], 'holds no public key'],
      ['a missing key file', () => ['--jwt-public-key', path.join(dir, 'none.pem')], 'cannot read'],
      ['two keys', () => ['--jwt-secret', SECRET, '--jwt-public-key', path.join(dir, 'rsa.pem')], 'one key'],
      [
        'a policy without a key',
        () => ['--policy', path.join(dir, 'policy.txt')],
        'give --jwt-secret, --jwt-public-key or --oauth-issuer',
      ],
      [
        'a bad policy line',
        () => ['--jwt-secret', SECRET, '--policy', path.join(dir, 'bad-policy.txt')],
        'bad-policy.txt:3: ',
      ],
      ['an issuer without a key', () => ['--jwt-issuer', 'fenec'], '--jwt-issuer'],
      [
        'an audit file it cannot open',
        () => ['--audit', path.join(dir, 'no-such-dir', 'audit.log')],
        '--audit cannot open',
      ],
    ];
    for (const [name, args, says] of cases) {
      it(`fenec-server exits 2 with one line for ${name}`, async () => {
        fs.writeFileSync(path.join(dir, 'bad-policy.txt'), 'notes read\n\nnotes read,write,delete\n');
        const done = await sandbox.run(path.join(path.dirname(FENEC), 'fenec-server.js'), [
          '--file',
          path.join(dir, 'never.fenec'),
          '--port',
          '0',
          ...args(),
        ]);
        expect(done.code, done.stderr).to.equal(2);
        expect(done.stderr.trim().split('\n'), done.stderr).to.have.length(1);
        expect(done.stderr).to.include(says);
      });
    }
  });
});
