/**
 * `make requests-bench`: one row by id through `POST /query` of a real fenec-server, beside a bare
 * node:http server answering the same JSON, at 1 and 8 concurrent clients, measured in one run. The
 * fenec-server is asked twice: with its server token, and with a JSON Web Token (HS256, its key a
 * KeyObject built at start) held to the policy `notes read where owner = $jwt.sub`.
 *
 * Each server runs in a process of its own and the load generator (autocannon) in this one: on a
 * two-core machine that is one core for the generator and one for the server. Latency percentiles
 * are taken from every response's own time (autocannon's histogram counts whole milliseconds).
 *
 * The three targets are measured in turns, BENCH_ROUNDS times (default 5) for each number of clients,
 * in another order every round (harness.ts, loadInTurns), and the medians reported with the spread of
 * the per-round ratios: on two cores one run alone moves with whatever else the machine does.
 *
 * Env: BENCH_SECONDS (default 5) per measured run, each after a 1 s warm-up; BENCH_ROUNDS (default 5).
 * Writes bench/results/requests.json. Targets (issue 2): at 8 clients at least 0.40 of the bare
 * server's requests/s; at 1 client a p50 under 0.3 ms. Issue 4: JWT requests at least 0.9 of the
 * server token's requests/s, at 8 clients.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { mintToken } from '../shared/auth/token.js';
import { startDevIssuer } from '../scripts/dev-oidc.js';
import { accessToken, freePort } from '../test/integration/oauth/sign-in.js';
import {
  failuresLine,
  intEnv,
  LOAD_HEADER,
  loadCells,
  loadInTurns,
  medianMeasure,
  numberEnv,
  Programs,
  ratioCells,
  request,
  runInfo,
  table,
  verdict,
  writeResults,
  type LoadTarget,
  type Measure as Figures,
} from './harness.js';
import { pairedRatio, ratios, spread } from './stats.js';

const SECONDS = numberEnv('BENCH_SECONDS', 5);
const ROUNDS = intEnv('BENCH_ROUNDS', 5, 1);
const CLIENTS = [1, 8] as const;
const ROWS = 1000;
const ROW_ID = 500;
const STATEMENT = 'get notes where id = $1';
const TOKEN = randomBytes(16).toString('hex');
const JWT_SECRET = randomBytes(32).toString('hex');
const SUB = 'bench';
const POLICY = 'notes read where owner = $jwt.sub\n';
const JWT = mintToken({ secret: JWT_SECRET, tenant: 'bench', sub: SUB, ttlSeconds: 86_400 });
const TARGET_RATIO = 0.4;
const TARGET_P50_MS = 0.3;
const TARGET_JWT_RATIO = 0.9;

interface Target {
  readonly name: string;
  readonly url: string;
  /** The bearer token its requests carry. */
  readonly token: string;
}

interface Measure extends Figures {
  ratioToBare?: number;
  /** The lowest and highest of the per-round ratios to the bare server. */
  ratioSpread?: [number, number];
  /** JWT runs: the median of the per-round ratios of requests/s to the server token's, and their spread. */
  ratioToServerToken?: number;
  ratioToServerTokenSpread?: [number, number];
  /**
   * µs per request beyond the server token's (JWT and OAuth runs): at 8 clients the server is saturated, and the
   * difference of 1/requests per second is its extra time on the serving thread per request.
   */
  extraCpuUs?: number;
}

/** µs per request beyond `baseline`'s: the difference of their 1/requests per second. */
function extraCpu(measure: Measure, baseline: Measure): number {
  return 1e6 / measure.requestsPerSecond - 1e6 / baseline.requestsPerSecond;
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fenec-bench-'));
  const programs = new Programs();
  // The OAuth runs' issuer: asked once, for its keys; every request after is the cached verification.
  const issuer = await startDevIssuer();
  try {
    const policy = path.join(dir, 'policy.txt');
    fs.writeFileSync(policy, POLICY);
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    const server = await programs.start('dist/node/cli/fenec-server.js', [
      '--file',
      path.join(dir, 'bench.fenec'),
      '--port',
      String(port),
      '--public-url',
      publicUrl,
      '--oauth-issuer',
      issuer.issuer,
      '--http-token',
      TOKEN,
      '--jwt-secret',
      JWT_SECRET,
      '--policy',
      policy,
    ]);
    const fenec: Target = { name: 'fenec-server', url: server.url, token: TOKEN };
    const answer = await seed(fenec.url);
    const bare: Target = {
      name: 'bare node:http',
      url: (await programs.start('dist/bench/bare-server.js', [], { env: { BARE_ANSWER: answer } })).url,
      token: TOKEN,
    };
    // The same server process, asked with a JWT: the only difference is the credential and its policy.
    const fenecJwt: Target = { ...fenec, name: 'fenec-server (JWT)', token: JWT };
    await checkJwtAnswer(fenecJwt, answer);
    // And with an OAuth access token for the server's resource: a verified request, its result cached.
    const oauth = await accessToken(issuer.keys[0]!, {
      iss: issuer.issuer,
      aud: `${publicUrl}/_mcp`,
      sub: SUB,
      scope: 'fenec:read',
      exp: Math.floor(Date.now() / 1000) + 86_400,
    });
    const fenecOAuth: Target = { ...fenec, name: 'fenec-server (OAuth)', token: oauth };
    await checkJwtAnswer(fenecOAuth, answer);

    const measures: Measure[] = [];
    for (const clients of CLIENTS) {
      const [bareRuns, fenecRuns, jwtRuns, oauthRuns] = await loadInTurns(
        [bare, fenec, fenecJwt, fenecOAuth].map((target) => loadTarget(target, clients)),
        ROUNDS,
        SECONDS,
      );
      const baseline = medianMeasure(bareRuns!);
      measures.push(baseline);
      for (const runs of [fenecRuns!, jwtRuns!, oauthRuns!]) {
        const ours: Measure = { ...medianMeasure(runs) };
        ours.ratioToBare = ours.requestsPerSecond / baseline.requestsPerSecond;
        ours.ratioSpread = spread(ratios(rates(runs), rates(bareRuns!)));
        measures.push(ours);
      }
      // The JWT and server-token runs of a round are next to each other in time: their ratio, round by
      // round, is less moved by the rest of the machine than the ratio of two medians.
      for (const [measure, runs] of [
        [measures.at(-2)!, jwtRuns!],
        [measures.at(-1)!, oauthRuns!],
      ] as const) {
        const paired = pairedRatio(rates(runs), rates(fenecRuns!));
        measure.ratioToServerToken = paired.ratio;
        measure.ratioToServerTokenSpread = paired.spread;
        // What a request of this token costs beyond the server token's, in CPU per request of the server.
        measure.extraCpuUs = extraCpu(measure, measures.at(-3)!);
      }
    }
    report(measures);
  } finally {
    await issuer.close();
    await programs.stopAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function rates(runs: readonly Figures[]): number[] {
  return runs.map((run) => run.requestsPerSecond);
}

/** Creates the collection and its rows; answers the JSON of the row the bench reads. */
async function seed(url: string): Promise<string> {
  await post(url, 'create collection notes (title text, body text, n int, owner text @hash)', []);
  const rows = Array.from(
    { length: ROWS },
    (_, i) =>
      `{title: ${JSON.stringify(`note ${i + 1}`)}, body: ${JSON.stringify(`the body of note ${i + 1}, a few words long`)}, n: ${i + 1}, owner: ${JSON.stringify(SUB)}}`,
  );
  await post(url, `insert into notes [${rows.join(', ')}]`, []);
  const answer = await post(url, STATEMENT, [ROW_ID]);
  if ((JSON.parse(answer) as { count: number }).count !== 1) throw new Error(`row ${ROW_ID} not found: ${answer}`);
  return answer;
}

/** The JWT reads the same row, under its policy, as the server token does. */
async function checkJwtAnswer(target: Target, answer: string): Promise<void> {
  const seen = await post(target.url, STATEMENT, [ROW_ID], target.token);
  if (seen !== answer) throw new Error(`the JWT reads ${seen}, the server token ${answer}`);
}

function post(url: string, statement: string, params: unknown[], token = TOKEN): Promise<string> {
  return request(url, token, 'POST', '/query', { statement, params });
}

function loadTarget(target: Target, clients: number): LoadTarget {
  return {
    target: target.name,
    url: `${target.url}/query`,
    clients,
    headers: { authorization: `Bearer ${target.token}` },
    body: JSON.stringify({ statement: STATEMENT, params: [ROW_ID] }),
  };
}

function report(measures: readonly Measure[]): void {
  const header = [...LOAD_HEADER, 'vs bare', 'per round', 'vs token', 'per round'];
  const lines = measures.map((m) => [
    ...loadCells(m),
    ...ratioCells(m.ratioToBare, m.ratioSpread),
    ...ratioCells(m.ratioToServerToken, m.ratioToServerTokenSpread),
  ]);
  const at8 = measures.find((m) => m.target === 'fenec-server' && m.clients === 8);
  const at1 = measures.find((m) => m.target === 'fenec-server' && m.clients === 1);
  const jwtAt8 = measures.find((m) => m.target === 'fenec-server (JWT)' && m.clients === 8);
  const oauthAt8 = measures.find((m) => m.target === 'fenec-server (OAuth)' && m.clients === 8);
  process.stdout.write(
    `\nrequests-bench: ${STATEMENT} [${ROW_ID}] over ${ROWS} rows, medians of ${ROUNDS} rounds of ${SECONDS} s, ` +
      `${os.cpus().length} cores, Node ${process.versions.node}\n\n` +
      `${table(header, lines)}\n\n` +
      `target: ≥ ${TARGET_RATIO} of bare at 8 clients — ${at8?.ratioToBare?.toFixed(2)} ${verdict(at8 !== undefined && at8.ratioToBare! >= TARGET_RATIO)}\n` +
      `target: p50 < ${TARGET_P50_MS} ms at 1 client — ${at1?.p50Ms.toFixed(3)} ms ${verdict(at1 !== undefined && at1.p50Ms < TARGET_P50_MS)}\n` +
      `target: JWT ≥ ${TARGET_JWT_RATIO} of the server token at 8 clients — ${jwtAt8?.ratioToServerToken?.toFixed(2)} ` +
      `${verdict(jwtAt8 !== undefined && jwtAt8.ratioToServerToken! >= TARGET_JWT_RATIO)}\n` +
      `OAuth (a verified token, cached): ${oauthAt8?.ratioToServerToken?.toFixed(2)} of the server token at 8 clients, ` +
      `${oauthAt8?.extraCpuUs?.toFixed(1)} µs more per request (JWT: ${jwtAt8?.extraCpuUs?.toFixed(1)} µs)\n` +
      failuresLine(measures),
  );
  writeResults('requests', {
    ...runInfo('requests'),
    statement: STATEMENT,
    rows: ROWS,
    seconds: SECONDS,
    rounds: ROUNDS,
    policy: POLICY.trim(),
    targets: { ratioToBareAt8: TARGET_RATIO, p50MsAt1: TARGET_P50_MS, jwtRatioToServerTokenAt8: TARGET_JWT_RATIO },
    results: measures,
  });
}

await main();
