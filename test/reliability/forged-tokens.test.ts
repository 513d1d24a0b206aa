/**
 * The forged-token table: every kind of bad bearer token an attacker or a broken client sends — bad
 * signatures, algorithm tricks (none, HS256 with a public key, embedded keys, ECDSA's zero signature),
 * broken headers and payloads, bad claims (expired, not yet valid, issuer, audience, tenant), odd
 * shapes and sizes — each sent to every door that takes a token: `/query` and `/_mcp` of an HS256, an
 * RS256 and an ES256 server, a tenant node and a router. Each one is refused (401, or 403 for a token of
 * another tenant), with JSON and no row; a node writes an audit line for each, never holding the token.
 */
import { createHmac, createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { expect } from 'chai';
import jwt from 'jsonwebtoken';
import { FENEC_ROUTER, request, Sandbox, type Reply, type ServerProcess } from '../integration/processes.js';
import { report, sampled } from './harness.js';

const TOKEN = 'forged-table-server-token';
const SECRET = 'forged-table-hs256-secret-of-32-bytes-or-more';
const POLICY = 'notes read,write where owner = $jwt.sub\n';
/** In every row the servers hold: an answer that carries it leaked a row. */
const MARKER = 'ROW-MARKER-7f3a';

type Door = 'hs' | 'rs' | 'es' | 'tenant' | 'router';
interface Keys {
  readonly rsaPem: string;
  readonly ecPem: string;
  readonly attackerRsa: KeyObject;
  readonly attackerRsaPublicJwk: object;
  readonly attackerRsa1024: KeyObject;
  readonly attackerEc: KeyObject;
  readonly attackerEc384: KeyObject;
}
interface Kind {
  readonly name: string;
  readonly doors: readonly Door[];
  /** The Authorization header's value, or null for none. */
  readonly header: (keys: Keys) => string | null;
  /** What a refusal answers: 401 unless said (403 wrong_tenant). */
  readonly statuses?: readonly number[];
}

const now = (): number => Math.floor(Date.now() / 1000);
const b64 = (value: unknown): string =>
  Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
const claims = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  sub: 'ada',
  tenant: 'acme',
  iss: 'fenec',
  aud: 'agents',
  exp: now() + 300,
  ...extra,
});
const without = (name: string): Record<string, unknown> => {
  const all = claims();
  delete all[name];
  return all;
};
const hmac = (input: string, key: string | Buffer, hash = 'sha256'): string =>
  createHmac(hash, key).update(input).digest('base64url');
/** header.payload signed by HMAC-SHA256 with a key, both parts as given (objects or raw text). */
const hs = (header: unknown, payload: unknown, key: string | Buffer = SECRET, hash = 'sha256'): string => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${hmac(input, key, hash)}`;
};
const good = (extra: Record<string, unknown> = {}): string => hs({ alg: 'HS256', typ: 'JWT' }, claims(extra));
const bearer = (token: string): string => `Bearer ${token}`;
const parts = (token: string): string[] => token.split('.');
const asymmetric = (alg: string, key: KeyObject, payload: unknown, header: Record<string, unknown> = {}): string =>
  jwt.sign(payload as object, key, {
    algorithm: alg as jwt.Algorithm,
    header: { alg: alg as jwt.Algorithm, ...header },
    allowInsecureKeySizes: true,
  });
const DOORS_HS: readonly Door[] = ['hs'];
const ALL_NODES: readonly Door[] = ['hs', 'tenant', 'router'];

/** The table: 100 kinds, each at every door named. */
const KINDS: readonly Kind[] = [
  // Signatures that do not verify.
  { name: 'signed with another secret', doors: ALL_NODES, header: () => bearer(jwt.sign(claims(), `${SECRET}-not`)) },
  {
    name: 'signed with the secret one character short',
    doors: ALL_NODES,
    header: () => bearer(hs({ alg: 'HS256' }, claims(), SECRET.slice(0, -1))),
  },
  { name: 'signed with an empty secret', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, claims(), '')) },
  { name: 'signed with "secret"', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, claims(), 'secret')) },
  { name: 'an empty signature', doors: ALL_NODES, header: () => bearer(`${parts(good()).slice(0, 2).join('.')}.`) },
  {
    name: "another token's signature",
    doors: ALL_NODES,
    header: () =>
      bearer(
        `${parts(good({ sub: 'bob' }))
          .slice(0, 2)
          .join('.')}.${parts(good())[2]}`,
      ),
  },
  {
    name: 'a signature with its first character changed',
    doors: ALL_NODES,
    header: () => {
      const [h, p, s] = parts(good());
      return bearer(`${h}.${p}.${s![0] === 'A' ? 'B' : 'A'}${s!.slice(1)}`);
    },
  },
  { name: 'a signature one character short', doors: ALL_NODES, header: () => bearer(good().slice(0, -1)) },
  { name: 'a signature one character long', doors: ALL_NODES, header: () => bearer(`${good()}A`) },
  {
    name: 'a signature in standard base64 with padding',
    doors: ALL_NODES,
    header: () => {
      const [h, p] = parts(good());
      return bearer(`${h}.${p}.${createHmac('sha256', SECRET).update(`${h}.${p}`).digest('base64')}`);
    },
  },
  {
    name: 'a signature in hex',
    doors: ALL_NODES,
    header: () => {
      const [h, p] = parts(good());
      return bearer(`${h}.${p}.${createHmac('sha256', SECRET).update(`${h}.${p}`).digest('hex')}`);
    },
  },
  {
    name: 'HS384 with the right secret',
    doors: ALL_NODES,
    header: () => bearer(jwt.sign(claims(), SECRET, { algorithm: 'HS384' })),
  },
  {
    name: 'HS512 with the right secret',
    doors: ALL_NODES,
    header: () => bearer(jwt.sign(claims(), SECRET, { algorithm: 'HS512' })),
  },
  {
    name: 'alg HS256 over an HMAC-SHA512 signature',
    doors: ALL_NODES,
    header: () => bearer(hs({ alg: 'HS256' }, claims(), SECRET, 'sha512')),
  },
  {
    name: 'the payload changed after signing (sub)',
    doors: ALL_NODES,
    header: () => {
      const [h, , s] = parts(good());
      return bearer(`${h}.${b64(claims({ sub: 'bob' }))}.${s}`);
    },
  },
  {
    name: 'the payload changed after signing (exp a year later)',
    doors: ALL_NODES,
    header: () => {
      const [h, , s] = parts(good());
      return bearer(`${h}.${b64(claims({ exp: now() + 31_536_000 }))}.${s}`);
    },
  },
  {
    name: 'the header changed after signing',
    doors: ALL_NODES,
    header: () => {
      const [, p, s] = parts(good());
      return bearer(`${b64({ alg: 'HS256', typ: 'at+jwt' })}.${p}.${s}`);
    },
  },
  {
    name: 'a signature over the payload alone',
    doors: ALL_NODES,
    header: () => {
      const [h, p] = parts(good());
      return bearer(`${h}.${p}.${hmac(p!, SECRET)}`);
    },
  },
  {
    name: 'a signature over header.payload. (a trailing dot)',
    doors: ALL_NODES,
    header: () => {
      const [h, p] = parts(good());
      return bearer(`${h}.${p}.${hmac(`${h}.${p}.`, SECRET)}`);
    },
  },
  {
    name: 'a signature with a space inside',
    doors: ALL_NODES,
    header: () => {
      const t = good();
      return bearer(`${t.slice(0, -8)} ${t.slice(-8)}`);
    },
  },
  {
    name: 'header and payload in standard base64',
    doors: DOORS_HS,
    header: () => {
      const h = Buffer.from(JSON.stringify({ alg: 'HS256' })).toString('base64');
      const p = Buffer.from(JSON.stringify(claims({ note: '>>>???' }))).toString('base64');
      return bearer(`${h}.${p}.${hmac(`${h}.${p}`, SECRET)}`);
    },
  },
  // The algorithm.
  {
    name: 'alg none, no signature',
    doors: ALL_NODES,
    header: () => bearer(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`),
  },
  { name: 'alg None', doors: ALL_NODES, header: () => bearer(`${b64({ alg: 'None' })}.${b64(claims())}.`) },
  { name: 'alg NONE', doors: ALL_NODES, header: () => bearer(`${b64({ alg: 'NONE' })}.${b64(claims())}.`) },
  { name: 'alg nOnE', doors: ALL_NODES, header: () => bearer(`${b64({ alg: 'nOnE' })}.${b64(claims())}.`) },
  {
    name: 'alg none with the right HMAC as its signature',
    doors: ALL_NODES,
    header: () => {
      const input = `${b64({ alg: 'none' })}.${b64(claims())}`;
      return bearer(`${input}.${hmac(input, SECRET)}`);
    },
  },
  {
    name: 'alg none without the third part',
    doors: ALL_NODES,
    header: () => bearer(`${b64({ alg: 'none' })}.${b64(claims())}`),
  },
  { name: 'no alg', doors: ALL_NODES, header: () => bearer(hs({ typ: 'JWT' }, claims())) },
  { name: 'alg null', doors: ALL_NODES, header: () => bearer(hs({ alg: null }, claims())) },
  { name: 'alg a number', doors: ALL_NODES, header: () => bearer(hs({ alg: 256 }, claims())) },
  { name: 'alg empty', doors: ALL_NODES, header: () => bearer(hs({ alg: '' }, claims())) },
  { name: 'alg "HS256 " with a space', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256 ' }, claims())) },
  { name: 'alg hs256 in lower case', doors: ALL_NODES, header: () => bearer(hs({ alg: 'hs256' }, claims())) },
  { name: 'alg an array', doors: ALL_NODES, header: () => bearer(hs({ alg: ['HS256'] }, claims())) },
  { name: 'alg RS256 over an HMAC', doors: ALL_NODES, header: () => bearer(hs({ alg: 'RS256' }, claims())) },
  { name: 'alg ES256 over an HMAC', doors: ALL_NODES, header: () => bearer(hs({ alg: 'ES256' }, claims())) },
  { name: 'alg PS256', doors: ALL_NODES, header: (k) => bearer(asymmetric('PS256', k.attackerRsa, claims())) },
  {
    name: 'alg EdDSA',
    doors: ALL_NODES,
    header: () => bearer(`${b64({ alg: 'EdDSA' })}.${b64(claims())}.${Buffer.alloc(64).toString('base64url')}`),
  },
  {
    name: 'a kid of ../../../dev/null, signed with an empty key',
    doors: ALL_NODES,
    header: () => bearer(hs({ alg: 'HS256', kid: '../../../dev/null' }, claims(), '')),
  },
  {
    name: 'a kid holding SQL',
    doors: ALL_NODES,
    header: () => bearer(hs({ alg: 'HS256', kid: "x' union select 'k" }, claims(), 'k')),
  },
  // Asymmetric servers: key confusion and foreign keys.
  {
    name: "HS256 signed with the RSA public key's PEM (key confusion)",
    doors: ['rs'],
    header: (k) => bearer(hs({ alg: 'HS256', typ: 'JWT' }, claims(), k.rsaPem)),
  },
  {
    name: "HS256 signed with the RSA public key's PEM without its last newline",
    doors: ['rs'],
    header: (k) => bearer(hs({ alg: 'HS256' }, claims(), k.rsaPem.trimEnd())),
  },
  {
    name: "HS256 signed with the EC public key's PEM (key confusion)",
    doors: ['es'],
    header: (k) => bearer(hs({ alg: 'HS256' }, claims(), k.ecPem)),
  },
  {
    name: 'RS256 signed with another RSA key',
    doors: ['rs', 'hs'],
    header: (k) => bearer(asymmetric('RS256', k.attackerRsa, claims())),
  },
  {
    name: 'RS256 signed with a 1024-bit RSA key',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('RS256', k.attackerRsa1024, claims())),
  },
  {
    name: 'RS512 signed with another RSA key',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('RS512', k.attackerRsa, claims())),
  },
  {
    name: 'RS256 carrying its own key in jwk',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('RS256', k.attackerRsa, claims(), { jwk: k.attackerRsaPublicJwk })),
  },
  {
    name: 'RS256 naming its own key at jku',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('RS256', k.attackerRsa, claims(), { jku: 'http://127.0.0.1:9/keys.json' })),
  },
  {
    name: 'RS256 naming its own certificate at x5u',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('RS256', k.attackerRsa, claims(), { x5u: 'http://127.0.0.1:9/cert.pem' })),
  },
  {
    name: 'RS256 with an all-zero signature',
    doors: ['rs'],
    header: () => bearer(`${b64({ alg: 'RS256' })}.${b64(claims())}.${Buffer.alloc(256).toString('base64url')}`),
  },
  {
    name: 'PS256 on the RSA server',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('PS256', k.attackerRsa, claims())),
  },
  {
    name: 'ES256 on the RSA server',
    doors: ['rs'],
    header: (k) => bearer(asymmetric('ES256', k.attackerEc, claims())),
  },
  {
    name: 'alg none on the RSA server',
    doors: ['rs'],
    header: () => bearer(`${b64({ alg: 'none' })}.${b64(claims())}.`),
  },
  {
    name: 'ES256 signed with another EC key',
    doors: ['es', 'hs'],
    header: (k) => bearer(asymmetric('ES256', k.attackerEc, claims())),
  },
  {
    name: 'ES256 with r = s = 0 (the psychic signature)',
    doors: ['es'],
    header: () => bearer(`${b64({ alg: 'ES256' })}.${b64(claims())}.${Buffer.alloc(64).toString('base64url')}`),
  },
  {
    name: 'ES256 with r = s = 2^256 - 1',
    doors: ['es'],
    header: () => bearer(`${b64({ alg: 'ES256' })}.${b64(claims())}.${Buffer.alloc(64, 0xff).toString('base64url')}`),
  },
  {
    name: 'ES256 with a DER signature instead of r||s',
    doors: ['es'],
    header: (k) => {
      const input = `${b64({ alg: 'ES256' })}.${b64(claims())}`;
      return bearer(`${input}.${createSign('sha256').update(input).sign(k.attackerEc).toString('base64url')}`);
    },
  },
  {
    name: 'ES384 signed with a P-384 key',
    doors: ['es'],
    header: (k) => bearer(asymmetric('ES384', k.attackerEc384, claims())),
  },
  {
    name: 'RS256 on the EC server',
    doors: ['es'],
    header: (k) => bearer(asymmetric('RS256', k.attackerRsa, claims())),
  },
  {
    name: 'alg none on the EC server',
    doors: ['es'],
    header: () => bearer(`${b64({ alg: 'none' })}.${b64(claims())}.`),
  },
  // Headers that are not a header.
  { name: 'a header that is not JSON', doors: ALL_NODES, header: () => bearer(hs('{"alg":"HS256"', claims())) },
  { name: 'a header that is a JSON array', doors: ALL_NODES, header: () => bearer(hs(['HS256'], claims())) },
  { name: 'a header that is a JSON string', doors: ALL_NODES, header: () => bearer(hs('"HS256"', claims())) },
  { name: 'an empty header', doors: ALL_NODES, header: () => bearer(hs('', claims())) },
  {
    name: 'a header that is not base64url',
    doors: ALL_NODES,
    header: () => {
      const [, p, s] = parts(good());
      return bearer(`!!!.${p}.${s}`);
    },
  },
  // Claims: time.
  { name: 'expired an hour ago', doors: ALL_NODES, header: () => bearer(good({ exp: now() - 3600 })) },
  {
    name: 'expired 60 s ago (past the 30 s tolerance)',
    doors: ALL_NODES,
    header: () => bearer(good({ exp: now() - 60 })),
  },
  { name: 'without exp', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, without('exp'))) },
  { name: 'exp as a string', doors: ALL_NODES, header: () => bearer(good({ exp: String(now() + 300) })) },
  { name: 'exp null', doors: ALL_NODES, header: () => bearer(good({ exp: null })) },
  { name: 'exp an object', doors: ALL_NODES, header: () => bearer(good({ exp: { $gt: 0 } })) },
  {
    name: 'exp 1e400 (Infinity once parsed)',
    doors: ALL_NODES,
    header: () => bearer(hs({ alg: 'HS256' }, JSON.stringify(claims()).replace(/"exp":\d+/, '"exp":1e400'))),
  },
  { name: 'exp negative', doors: ALL_NODES, header: () => bearer(good({ exp: -1 })) },
  { name: 'exp 0', doors: ALL_NODES, header: () => bearer(good({ exp: 0 })) },
  { name: 'exp a fraction in the past', doors: ALL_NODES, header: () => bearer(good({ exp: now() - 3600.5 })) },
  {
    name: 'exp given twice, the last one past',
    doors: ALL_NODES,
    header: () => bearer(hs({ alg: 'HS256' }, JSON.stringify(claims()).replace(/}$/, `,"exp":${now() - 3600}}`))),
  },
  {
    name: 'exp only on __proto__',
    doors: ALL_NODES,
    header: () =>
      bearer(
        hs({ alg: 'HS256' }, JSON.stringify(without('exp')).replace(/}$/, `,"__proto__":{"exp":${now() + 300}}}`)),
      ),
  },
  { name: 'not valid before an hour from now', doors: ALL_NODES, header: () => bearer(good({ nbf: now() + 3600 })) },
  {
    name: 'not valid before 60 s from now (past the tolerance)',
    doors: ALL_NODES,
    header: () => bearer(good({ nbf: now() + 60 })),
  },
  { name: 'nbf as a string', doors: ALL_NODES, header: () => bearer(good({ nbf: 'tomorrow' })) },
  // Claims: issuer and audience (the HS256 server asks for both).
  { name: 'the wrong issuer', doors: DOORS_HS, header: () => bearer(good({ iss: 'someone-else' })) },
  { name: 'no issuer', doors: DOORS_HS, header: () => bearer(hs({ alg: 'HS256' }, without('iss'))) },
  { name: 'the issuer in an array', doors: DOORS_HS, header: () => bearer(good({ iss: ['fenec'] })) },
  { name: 'the issuer in another case', doors: DOORS_HS, header: () => bearer(good({ iss: 'Fenec' })) },
  { name: 'the wrong audience', doors: DOORS_HS, header: () => bearer(good({ aud: 'others' })) },
  { name: 'no audience', doors: DOORS_HS, header: () => bearer(hs({ alg: 'HS256' }, without('aud'))) },
  {
    name: 'an audience list without ours',
    doors: DOORS_HS,
    header: () => bearer(good({ aud: ['others', 'agents2'] })),
  },
  { name: 'an empty audience list', doors: DOORS_HS, header: () => bearer(good({ aud: [] })) },
  { name: 'the audience with a trailing space', doors: DOORS_HS, header: () => bearer(good({ aud: 'agents ' })) },
  // Payloads that are not claims, signed with the right key.
  { name: 'a payload that is not JSON', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, '{"sub":"ada"')) },
  { name: 'a payload that is a JSON array', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, '[1,2]')) },
  { name: 'a payload that is a JSON string', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, '"ada"')) },
  { name: 'a payload that is null', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, 'null')) },
  { name: 'a payload that is a number', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, '42')) },
  { name: 'an empty payload', doors: ALL_NODES, header: () => bearer(hs({ alg: 'HS256' }, '')) },
  // Shapes and sizes.
  { name: 'no Authorization header', doors: ALL_NODES, header: () => null },
  { name: 'Bearer and nothing', doors: ALL_NODES, header: () => 'Bearer' },
  { name: 'Bearer and a space', doors: ALL_NODES, header: () => 'Bearer ' },
  { name: 'Basic with a good token', doors: ALL_NODES, header: () => `Basic ${good()}` },
  { name: 'Token with a good token', doors: ALL_NODES, header: () => `Token ${good()}` },
  { name: 'two parts', doors: ALL_NODES, header: () => bearer(parts(good()).slice(0, 2).join('.')) },
  { name: 'four parts', doors: ALL_NODES, header: () => bearer(`${good()}.${parts(good())[2]}`) },
  {
    name: "five parts (a JWE's shape)",
    doors: ALL_NODES,
    header: () => bearer(`${b64({ alg: 'dir', enc: 'A128GCM' })}..${b64('iv')}.${b64('ciphertext')}.${b64('tag')}`),
  },
  { name: 'one part', doors: ALL_NODES, header: () => bearer(b64(claims())) },
  { name: 'dots only', doors: ALL_NODES, header: () => bearer('...') },
  {
    name: 'a Latin-1 character inside',
    doors: ALL_NODES,
    header: () => bearer(`${good().slice(0, 20)}é${good().slice(20)}`),
  },
  { name: 'the server token with a suffix', doors: ALL_NODES, header: () => bearer(`${TOKEN}x`) },
  { name: 'the server token one character short', doors: ALL_NODES, header: () => bearer(TOKEN.slice(0, -1)) },
  { name: 'the server token in upper case', doors: ALL_NODES, header: () => bearer(TOKEN.toUpperCase()) },
  {
    name: 'past 8 192 characters, signed with the right key',
    doors: ALL_NODES,
    header: () => bearer(good({ pad: 'x'.repeat(9000) })),
  },
  { name: '14 KB of base64', doors: ALL_NODES, header: () => bearer('QUFB'.repeat(3500)) },
  // The tenant claim, on the tenant node and the router (tenant acme's path).
  {
    name: "another tenant's token",
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: 'globex' })),
    statuses: [403],
  },
  {
    name: 'no tenant claim',
    doors: ['tenant', 'router'],
    header: () => bearer(hs({ alg: 'HS256' }, without('tenant'))),
    statuses: [401, 403],
  },
  {
    name: 'the tenant in an array',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: ['acme'] })),
    statuses: [401, 403],
  },
  {
    name: 'the tenant in upper case',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: 'ACME' })),
    statuses: [401, 403],
  },
  {
    name: 'the tenant with a trailing space',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: 'acme ' })),
    statuses: [401, 403],
  },
  {
    name: 'the tenant null',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: null })),
    statuses: [401, 403],
  },
  {
    name: 'the tenant as a path (acme/../globex)',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: 'globex/../acme' })),
    statuses: [401, 403],
  },
  {
    name: 'the tenant *',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: '*' })),
    statuses: [401, 403],
  },
  {
    name: 'the tenant a number',
    doors: ['tenant', 'router'],
    header: () => bearer(good({ tenant: 7 })),
    statuses: [401, 403],
  },
];

interface AuditLine {
  readonly event: string;
  readonly [key: string]: unknown;
}

describe('reliability: the forged-token table', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  const doors = new Map<Door, { server: ServerProcess; prefix: string; audit?: string }>();
  let keys: Keys;

  before(async () => {
    const dir = sandbox.dir();
    const write = (name: string, text: string): string => (
      fs.writeFileSync(path.join(dir, name), text),
      path.join(dir, name)
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const attackerRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    keys = {
      rsaPem: rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      ecPem: ec.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      attackerRsa: attackerRsa.privateKey,
      attackerRsaPublicJwk: attackerRsa.publicKey.export({ format: 'jwk' }),
      attackerRsa1024: generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey,
      attackerEc: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey,
      attackerEc384: generateKeyPairSync('ec', { namedCurve: 'secp384r1' }).privateKey,
    };
    const policy = write('policy.txt', POLICY);
    const data = path.join(dir, 'data');
    fs.mkdirSync(data);
    const audit = (name: string): string => path.join(dir, `${name}-audit.log`);
    // One after another: four servers starting at once on a loaded machine miss their start timeout.
    const hsServer = await sandbox.startServer([
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
      audit('hs'),
      '--mcp',
    ]);
    const rsServer = await sandbox.startServer([
      '--file',
      path.join(dir, 'rs.fenec'),
      '--http-token',
      TOKEN,
      '--jwt-public-key',
      write('rsa.pem', keys.rsaPem),
      '--policy',
      policy,
      '--audit',
      audit('rs'),
      '--mcp',
    ]);
    const esServer = await sandbox.startServer([
      '--file',
      path.join(dir, 'es.fenec'),
      '--http-token',
      TOKEN,
      '--jwt-public-key',
      write('ec.pem', keys.ecPem),
      '--policy',
      policy,
      '--audit',
      audit('es'),
      '--mcp',
    ]);
    const tenantNode = await sandbox.startServer([
      '--data-dir',
      data,
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
      '--policy',
      policy,
      '--audit',
      audit('tenant'),
      '--mcp',
      '--tenant-rate',
      '10000',
      '--tenant-burst',
      '10000',
    ]);
    const router = await sandbox.startProgram(FENEC_ROUTER, [
      '--port',
      '0',
      '--nodes',
      `a=${tenantNode.url}`,
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
    ]);
    doors.set('hs', { server: hsServer, prefix: '', audit: audit('hs') });
    doors.set('rs', { server: rsServer, prefix: '', audit: audit('rs') });
    doors.set('es', { server: esServer, prefix: '', audit: audit('es') });
    doors.set('tenant', { server: tenantNode, prefix: '/t/acme', audit: audit('tenant') });
    doors.set('router', { server: router, prefix: '/t/acme' });
    for (const tenant of ['acme', 'globex']) {
      const made = await request(router.url, {
        method: 'PUT',
        path: `/t/${tenant}`,
        headers: { authorization: bearer(TOKEN) },
      });
      expect(made.status, made.text).to.equal(201);
    }
    for (const [door, { server, prefix }] of doors) {
      if (door === 'router') continue;
      for (const statement of [
        'create collection notes (title text, owner text @hash)',
        `insert into notes [{title: "${MARKER}", owner: "ada"}, {title: "${MARKER}", owner: "bob"}]`,
      ]) {
        const reply = await request(server.url, {
          method: 'POST',
          path: `${prefix}/query`,
          headers: { authorization: bearer(TOKEN), 'content-type': 'application/json' },
          body: JSON.stringify({ statement }),
        });
        expect(reply.status, reply.text).to.equal(200);
      }
    }
  });
  after(() => sandbox.cleanUp());

  const auditLines = (file: string): AuditLine[] =>
    fs.existsSync(file)
      ? fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l) as AuditLine)
      : [];

  it(`has at least 95 kinds of forged token (${KINDS.length})`, () => {
    expect(KINDS.length).to.be.at.least(95);
    expect(new Set(KINDS.map((k) => k.name)).size).to.equal(KINDS.length);
  });

  it('refuses every kind at every door it is meant for, over /query and /_mcp, JSON, no row, an audit line at each node, never the token', async () => {
    let attempts = 0;
    const failures: string[] = [];
    const table = KINDS.flatMap((kind) =>
      kind.doors.flatMap((door) => (['/query', '/_mcp'] as const).map((route) => ({ kind, door, route }))),
    );
    for (const { kind, door, route } of sampled(table, 4)) {
      const { server, prefix, audit } = doors.get(door)!;
      const header = kind.header(keys);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      if (header !== null) headers.authorization = header;
      const body =
        route === '/query'
          ? JSON.stringify({ statement: 'get notes' })
          : JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'tools/call',
              params: { name: 'query', arguments: { statement: 'get notes' } },
            });
      const before = audit === undefined ? 0 : auditLines(audit).length;
      let reply: Reply;
      try {
        reply = await request(server.url, {
          method: 'POST',
          path: `${prefix}${route}`,
          headers,
          body,
          timeoutMs: 5000,
        });
      } catch (err) {
        failures.push(`${kind.name} at ${door} ${route}: ${(err as Error).message}`);
        continue;
      }
      attempts += 1;
      const where = `${kind.name} at ${door} ${route}`;
      const statuses = kind.statuses ?? [401];
      if (!statuses.includes(reply.status)) failures.push(`${where}: ${reply.status} ${reply.text.slice(0, 200)}`);
      if (reply.json === undefined) failures.push(`${where}: not JSON: ${reply.text.slice(0, 200)}`);
      if (reply.text.includes(MARKER)) failures.push(`${where}: a row leaked`);
      const token = header?.replace(/^\S+ ?/, '') ?? '';
      for (const part of token.split('.').filter((p) => p.length >= 12))
        if (reply.text.includes(part)) failures.push(`${where}: the answer repeats the token`);
      // wrong_tenant's audit line is issue 9's point 6, checked with the other regressions.
      if (audit !== undefined && reply.status === 401) {
        const lines = auditLines(audit);
        if (lines.length !== before + 1 || lines.at(-1)!.event !== 'auth')
          failures.push(`${where}: ${lines.length - before} audit lines, not one auth line`);
        const written = JSON.stringify(lines.slice(before));
        for (const part of token.split('.').filter((p) => p.length >= 12))
          if (written.includes(part)) failures.push(`${where}: the audit line holds the token`);
      }
    }
    report(
      'forged tokens',
      `${KINDS.length} kinds, ${attempts} of ${table.length} attempts over /query and /_mcp at 5 doors (HS256, RS256, ES256 servers, a tenant node, a router): ${failures.length} accepted or answered wrongly`,
    );
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });
});
