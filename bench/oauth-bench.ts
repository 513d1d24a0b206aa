/**
 * What OAuth verification costs the serving thread (issue 28, item 5): 1 000 distinct access tokens a
 * second, each verified once (the issuer's key set fetched once, from the development authorization
 * server on 127.0.0.1), while the event loop's delay is sampled; then the CPU of a token verified
 * before (the cache: a hash and a lookup) against the server token's check, through the front door.
 *
 * `node dist/bench/oauth-bench.js` (not part of make test: it is a measure, not a check).
 */
import type { IncomingMessage } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startDevIssuer } from '../scripts/dev-oidc.js';
import { OAuthVerifier } from '../shared/auth/oauth/verifier.js';
import { FrontDoor } from '../shared/http/front-door.js';
import { accessToken } from '../test/integration/oauth/sign-in.js';

const RATE = 1000;
const SECONDS = 5;
const PUBLIC_URL = 'http://127.0.0.1:1';
const SERVER_TOKEN = 'oauth-bench-server-token';

async function main(): Promise<void> {
  const issuer = await startDevIssuer();
  const oauth = new OAuthVerifier({ publicUrl: PUBLIC_URL, issuers: [issuer.issuer] });
  await oauth.warm();
  const tokens = await Promise.all(
    Array.from({ length: RATE * SECONDS }, (_, i) =>
      accessToken(issuer.keys[0]!, { iss: issuer.issuer, aud: `${PUBLIC_URL}/_mcp`, sub: `agent-${i}` }),
    ),
  );
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const cpuBefore = process.cpuUsage();
  delay.enable();
  let failed = 0;
  const started = performance.now();
  const pending: Promise<unknown>[] = [];
  // One token a millisecond, each new: every one is a signature check.
  for (let i = 0; i < tokens.length; i++) {
    const due = started + i * (1000 / RATE);
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const check = oauth.check(tokens[i]!);
    pending.push(Promise.resolve(check).then((c) => c?.ok !== true && failed++));
  }
  await Promise.all(pending);
  delay.disable();
  const cpu = process.cpuUsage(cpuBefore);
  const elapsed = (performance.now() - started) / 1000;
  const ms = (ns: number) => (ns / 1e6).toFixed(2);
  process.stdout.write(
    `oauth-bench: ${tokens.length} distinct tokens at ${RATE}/s over ${elapsed.toFixed(1)} s, ${failed} refused\n` +
      `  loop delay: p50 ${ms(delay.percentile(50))} ms, p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms\n` +
      `  CPU of this process: ${(((cpu.user + cpu.system) / 1000 / (elapsed * 1000)) * 100).toFixed(1)} % of a core, ` +
      `${((cpu.user + cpu.system) / tokens.length).toFixed(1)} µs per first verification\n`,
  );

  // A request seen before: the front door with the server token, and with a cached OAuth token.
  const door = new FrontDoor({ httpToken: SERVER_TOKEN, jwt: undefined, oauth, host: '127.0.0.1' });
  const request = (token: string) =>
    ({ headers: { authorization: `Bearer ${token}`, host: '127.0.0.1' }, socket: {} }) as unknown as IncomingMessage;
  const server = request(SERVER_TOKEN);
  const cached = request(tokens[0]!);
  const per = (req: IncomingMessage, tenant: string): number => {
    const n = 200_000;
    const before = process.cpuUsage();
    for (let i = 0; i < n; i++) door.tenantCaller(req, tenant, '/_mcp');
    const used = process.cpuUsage(before);
    return (used.user + used.system) / n;
  };
  per(server, '');
  per(cached, '');
  const serverUs = per(server, '');
  const cachedUs = per(cached, '');
  process.stdout.write(
    `  front door, a request seen before: server token ${serverUs.toFixed(2)} µs, OAuth token (cached) ${cachedUs.toFixed(2)} µs, ` +
      `extra ${(cachedUs - serverUs).toFixed(2)} µs\n`,
  );
  await issuer.close();
}

await main();
