/**
 * The console in a real browser: Debian's Chromium, driven by playwright-core, against real
 * fenec-server and fenec-router processes. Every page is loaded with a listener on the browser's
 * console and on every request it makes (nothing may leave the server's origin).
 *
 * Functions that run in the page are written against `globalThis as any`: Playwright serializes them
 * (a string would be evaluated, which the console's CSP forbids), and the tests compile without the
 * DOM's types.
 *
 * FENEC_CONSOLE_SCREENSHOTS=DIR writes a screenshot of each page into DIR (`make console-screenshots`
 * refreshes docs/console/).
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as path from 'node:path';
import jwt from 'jsonwebtoken';
import { chromium, type Browser, type Page } from 'playwright-core';
import { consoleBundle } from '../../shared/console.js';
import { FENEC_ROUTER, query, request, Sandbox, type ServerProcess } from '../integration/processes.js';

const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'console-test-server-token';
const SECRET = 'a-secret-of-at-least-thirty-two-bytes!';
const POLICY = 'notes read,write where owner = $jwt.sub\nmemories read where owner = $jwt.sub\n';
const SHOTS = process.env.FENEC_CONSOLE_SCREENSHOTS;
/** The flags this machine's closed network needs (no background connections, no sandbox as root). */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

interface Watched {
  readonly page: Page;
  /** Console errors, uncaught exceptions and requests that failed or left the server's origin. */
  readonly problems: string[];
}

describe('the console (/_console) in headless Chromium', function () {
  this.timeout(120_000);
  const sandbox = new Sandbox();
  let browser: Browser;
  let server: ServerProcess;
  let readOnly: ServerProcess;
  const watched: Watched[] = [];

  const ada = (): string => jwt.sign({ sub: 'ada' }, SECRET, { algorithm: 'HS256', expiresIn: 600 });

  async function open(base: string): Promise<Watched> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`page: ${err.message}`));
    page.on('requestfailed', (req) => problems.push(`failed: ${req.url()}`));
    page.on('request', (req) => {
      if (!req.url().startsWith(`${base}/`) && !req.url().startsWith('data:'))
        problems.push(`left the origin: ${req.url()}`);
    });
    const tab = { page, problems };
    watched.push(tab);
    return tab;
  }

  async function signIn(base: string, token: string, tenant?: string): Promise<Watched> {
    const tab = await open(base);
    await tab.page.goto(`${base}/_console/`);
    await tab.page.fill('#token', token);
    if (tenant !== undefined) await tab.page.fill('#tenant', tenant);
    await tab.page.click('button[type=submit]');
    await tab.page.waitForSelector(tenant === '' ? 'main[data-page=tenants]' : 'main[data-page=collections]');
    return tab;
  }

  async function visit(tab: Watched, hash: string, page: string): Promise<void> {
    await tab.page.evaluate((to) => {
      (globalThis as any).location.hash = to;
    }, hash);
    await tab.page.waitForSelector(`main[data-page=${page}]`);
  }

  async function shoot(tab: Watched, name: string): Promise<void> {
    if (SHOTS === undefined) return;
    fs.mkdirSync(SHOTS, { recursive: true });
    await tab.page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });
  }

  before(async function () {
    if (!fs.existsSync(CHROMIUM))
      throw new Error(`${CHROMIUM} is missing: make test installs Debian's chromium (scripts/install-test-tools.sh)`);
    const dir = sandbox.dir();
    fs.writeFileSync(path.join(dir, 'policy.txt'), POLICY);
    const args = ['--http-token', TOKEN, '--jwt-secret', SECRET, '--policy', path.join(dir, 'policy.txt')];
    [server, readOnly] = await Promise.all([
      sandbox.startServer(['--file', path.join(dir, 'console.fenec'), ...args]),
      sandbox.startServer(['--file', path.join(dir, 'read-only.fenec'), '--http-read-only', ...args]),
    ]);
    const statements: [string, unknown[]?][] = [
      ['create collection notes (title text required, body text @text, owner text @hash, vec vector<3> @hnsw(cosine))'],
      ['create collection secrets (k text)'],
      [
        'create collection memories (text text required @text, tags [text], owner text @hash, at timestamp @sorted, expires timestamp @ttl(1ms))',
      ],
      ['insert into secrets {k: "launch codes"}'],
      [
        'insert into notes [{title: "deploys", body: "the deploy runs on fridays", owner: "ada", vec: [0.9, 0.1, 0]}, ' +
          '{title: "regions", body: "staging is in eu-west-1", owner: "ada", vec: [0, 0.2, 1]}, ' +
          '{title: "foxes", body: "the cat watches the fox", owner: "bob", vec: [0.1, 0.9, 0.1]}]',
      ],
      [
        'insert into memories [{text: "ada prefers short answers", tags: ["style"], owner: "ada", at: now()}, ' +
          '{text: "the build runs nightly", tags: ["ops"], owner: "bob", at: now(), expires: now() + 7d}]',
      ],
    ];
    for (let i = 0; i < 57; i += 1)
      statements.push([
        'insert into notes {title: $1, body: "filler row", owner: "bob", vec: [0.5, 0.5, 0.5]}',
        [`filler ${i}`],
      ]);
    for (const [statement, params] of statements) {
      const reply = await query(server.url, statement, params ?? [], TOKEN);
      expect(reply.status, `${statement}: ${reply.text}`).to.equal(200);
    }
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, timeout: 30_000 });
  });

  afterEach(function () {
    const problems = watched.flatMap((tab) => tab.problems);
    watched.length = 0;
    expect(problems, 'console errors, failed requests or requests off the origin').to.deep.equal([]);
  });

  after(async () => {
    await browser?.close();
    await sandbox.cleanUp();
  });

  it('is served from the package with a policy that keeps the page to its own origin, small', async () => {
    const page = await request(server.url, { path: '/_console/', headers: { 'accept-encoding': 'gzip' } });
    expect(page.status).to.equal(200);
    expect(page.headers['content-security-policy']).to.match(
      /default-src 'none'; script-src 'self'.*connect-src 'self'/,
    );
    expect(page.headers['content-security-policy']).to.include("frame-ancestors 'none'");
    expect(page.headers['content-encoding']).to.equal('gzip');
    const again = await request(server.url, {
      path: '/_console/console.js',
      headers: { 'if-none-match': String((await request(server.url, { path: '/_console/console.js' })).headers.etag) },
    });
    expect(again.status).to.equal(304);
    expect((await request(server.url, { path: '/_console/../package.json' })).status).to.not.equal(200);
    expect((await request(server.url, { path: '/_console/nothing.js' })).status).to.equal(404);
    const gzip = consoleBundle().reduce((total, file) => total + file.gzipBytes, 0);
    expect(gzip, 'the whole console, gzipped').to.be.below(40_000);
  });

  it("asks for a token and keeps it in the tab's session storage only", async () => {
    const tab = await open(server.url);
    await tab.page.goto(`${server.url}/_console/#/collections`);
    await tab.page.waitForSelector('#token');
    await tab.page.fill('#token', 'not-the-token');
    await tab.page.click('button[type=submit]');
    await tab.page.waitForSelector('.error[data-code=invalid_token]');
    tab.problems.splice(0); // the refused sign-in is the 401 this test asked for
    await tab.page.fill('#token', TOKEN);
    await tab.page.click('button[type=submit]');
    await tab.page.waitForSelector('main[data-page=collections]');
    const stored = await tab.page.evaluate(() => {
      const { sessionStorage, localStorage } = globalThis as any;
      return { session: sessionStorage.getItem('fenec.token') as string, local: JSON.stringify(localStorage) };
    });
    expect(stored.session).to.equal(TOKEN);
    expect(stored.local).to.not.include(TOKEN);
  });

  it('shows the collections with their fields, annotations and row counts', async () => {
    const tab = await signIn(server.url, TOKEN);
    const notes = tab.page.locator('tr[data-collection=notes]');
    expect(await notes.locator('td').nth(1).textContent()).to.equal('60');
    expect(await notes.textContent())
      .to.include('body text @text')
      .and.include('vec vector<3> @hnsw(cosine)');
    expect(await tab.page.locator('tr[data-collection]').count()).to.equal(3);
    await shoot(tab, 'collections');
  });

  it("shows each index's state in words, never a raw `building false`", async () => {
    const tab = await signIn(server.url, TOKEN);
    const indexes = (await tab.page.locator('tr[data-collection=notes] td').nth(3).textContent()) ?? '';
    expect(indexes).to.not.match(/building (true|false)|pending \d/);
    expect(indexes).to.match(/vec: @hnsw\(cosine\) · 60 rows · (ready|\d+ to index|building)/);
    expect(indexes).to.include('body: @text').and.include('owner: @hash');
  });

  it('lists the indexed fields under a JWT too, which schema tells no index state', async () => {
    const tab = await signIn(server.url, ada());
    const indexes = (await tab.page.locator('tr[data-collection=notes] td').nth(3).textContent()) ?? '';
    expect(indexes).to.include('vec: @hnsw(cosine)').and.include('body: @text').and.include('owner: @hash');
  });

  it('pages through rows by id, 50 at a time', async () => {
    const tab = await signIn(server.url, TOKEN);
    await visit(tab, '#/rows/notes', 'rows');
    const ids = (): Promise<string[]> => tab.page.locator('table.rows tbody tr td:first-child').allTextContents();
    const first = await ids();
    expect(first).to.have.length(50);
    expect(first[0]).to.equal('1');
    await shoot(tab, 'rows');
    await tab.page.click('#next');
    await tab.page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('table.rows tbody tr').length === 10,
    );
    expect((await ids())[0]).to.equal('51');
    expect(await tab.page.isDisabled('#next')).to.equal(true);
    await tab.page.click('#previous');
    await tab.page.waitForFunction(
      () => (globalThis as any).document.querySelectorAll('table.rows tbody tr').length === 50,
    );
  });

  it('runs a statement typed into the editor and shows its rows, as a table and as JSON', async () => {
    const tab = await signIn(server.url, TOKEN);
    await visit(tab, '#/query', 'query');
    await tab.page.fill('#statement', 'get notes select title where owner = $1 order id');
    await tab.page.fill('#params', '["ada"]');
    await tab.page.click('#run');
    await tab.page.waitForSelector('#output table');
    expect(await tab.page.locator('#output tbody tr').allTextContents()).to.deep.equal(['1deploys', '2regions']);
    expect(await tab.page.textContent('#history')).to.include('get notes select title where owner = $1 order id');
    await shoot(tab, 'query');
    await tab.page.check('#as-json');
    expect(JSON.parse((await tab.page.textContent('#output pre')) ?? '')).to.deep.equal({
      rows: [
        { id: 1, title: 'deploys' },
        { id: 2, title: 'regions' },
      ],
      count: 2,
    });
  });

  it('shows a syntax error at its line and column', async () => {
    const tab = await signIn(server.url, TOKEN);
    await visit(tab, '#/query', 'query');
    await tab.page.fill('#params', '');
    await tab.page.fill('#statement', 'get notes\nwhere title = = "x"');
    await tab.page.keyboard.press('Control+Enter');
    const error = tab.page.locator('#output .error');
    await error.waitFor();
    const direct = JSON.parse((await query(server.url, 'get notes\nwhere title = = "x"', [], TOKEN)).text) as {
      error: { code: string; line: number; column: number };
    };
    expect(await error.getAttribute('data-code')).to.equal(direct.error.code);
    const position = `at line ${direct.error.line}, column ${direct.error.column}`;
    expect(await error.textContent()).to.include(position);
    expect((await error.textContent())!.split(position), 'the position, shown once').to.have.length(2);
    expect(await tab.page.textContent('#output pre.caret')).to.equal(
      `where title = = "x"\n${' '.repeat(direct.error.column - 1)}^`,
    );
    tab.problems.splice(0); // the 400 is the answer asked for
    await shoot(tab, 'query-error');
  });

  it('puts match, near and fuse side by side for one query, with scores and snippets', async () => {
    const tab = await signIn(server.url, TOKEN);
    await visit(tab, '#/search', 'search');
    await tab.page.selectOption('#search-collection', 'notes');
    await tab.page.fill('#words', 'deploy fridays');
    await tab.page.fill('#vector', '[1, 0, 0]');
    await tab.page.click('#search');
    for (const column of ['match', 'near', 'fuse']) await tab.page.waitForSelector(`#${column}-results .hit`);
    expect(await tab.page.getAttribute('#match-results .hit', 'data-id')).to.equal('1');
    expect(await tab.page.textContent('#match-results .hit mark')).to.equal('deploy');
    expect(await tab.page.getAttribute('#near-results .hit', 'data-id')).to.equal('1');
    expect(Number(await tab.page.textContent('#near-results .hit .score'))).to.be.greaterThan(0.9);
    expect(await tab.page.getAttribute('#fuse-results .hit', 'data-id')).to.equal('1');
    await shoot(tab, 'search');
    await tab.page.fill('#vector', '3');
    await tab.page.click('#search');
    await tab.page.waitForFunction(
      () => (globalThis as any).document.querySelector('#near-results .hit')?.getAttribute('data-id') === '3',
    );
  });

  it('shows the memory collection by owner, with tags and expiry', async () => {
    const tab = await signIn(server.url, TOKEN);
    await visit(tab, '#/memory', 'memory');
    await tab.page.waitForSelector('section[data-owner=bob]');
    expect(await tab.page.locator('section.owner').count()).to.equal(2);
    expect(await tab.page.textContent('section[data-owner=bob]'))
      .to.include('ops')
      .and.include('expires in 7 d');
    expect(await tab.page.textContent('section[data-owner=ada]')).to.include('kept');
    await shoot(tab, 'memory');
  });

  it("draws live charts from the node's own metrics", async () => {
    const tab = await signIn(server.url, TOKEN);
    await visit(tab, '#/metrics', 'metrics');
    // Traffic to chart while the page samples /_metrics every 2 s.
    for (let i = 0; i < 40; i += 1) {
      await query(server.url, i % 4 === 0 ? 'get nothing' : 'get notes where id = $1', [i], TOKEN);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    await tab.page.waitForFunction(
      () => Number((globalThis as any).document.querySelector('#chart-requests')?.dataset.series) > 0,
      undefined,
      { timeout: 15_000 },
    );
    await tab.page.waitForFunction(
      () => Number((globalThis as any).document.querySelector('#chart-latency')?.dataset.series) === 3,
      undefined,
      { timeout: 15_000 },
    );
    // The alpha channel of every pixel: a drawn line leaves some of them opaque.
    const inked = await tab.page.evaluate(() => {
      const canvas = (globalThis as any).document.querySelector('#chart-requests');
      const pixels: Uint8ClampedArray = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      let count = 0;
      for (let i = 3; i < pixels.length; i += 4) if (pixels[i]! > 0) count += 1;
      return count;
    });
    expect(inked, 'pixels drawn on the requests chart').to.be.greaterThan(500);
    expect(await tab.page.textContent('.chart:first-child .legend')).to.include('/query');
    await shoot(tab, 'metrics');
  });

  it('holds a scoped token to its policy: only its rows, no collection it may not read, no metrics', async () => {
    const tab = await signIn(server.url, ada());
    expect(await tab.page.locator('tr[data-collection] td:first-child').allTextContents()).to.have.members([
      'notes',
      'memories',
    ]);
    expect(await tab.page.locator('tr[data-collection=notes] td').nth(1).textContent()).to.equal('2');
    await visit(tab, '#/rows/notes', 'rows');
    expect(await tab.page.locator('table.rows tbody tr').count()).to.equal(2);
    await visit(tab, '#/query', 'query');
    await tab.page.fill('#params', '');
    await tab.page.fill('#statement', 'get secrets');
    await tab.page.click('#run');
    expect(await tab.page.getAttribute('#output .error', 'data-code')).to.equal('unknown_collection');
    tab.problems.splice(0); // the refusal is the answer asked for
    const asked: string[] = [];
    tab.page.on('request', (req) => {
      if (new URL(req.url()).pathname === '/_metrics') asked.push(req.url());
    });
    await visit(tab, '#/metrics', 'metrics');
    // Longer than the page's 2 s between samples: a page that polled for a JWT would have asked by now.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(asked, 'requests to /_metrics with a scoped token').to.deep.equal([]);
    expect(await tab.page.textContent('main')).to.include("server's token only");
  });

  it('adds no power: a server started --http-read-only refuses a write typed into the editor', async () => {
    const tab = await signIn(readOnly.url, TOKEN);
    await visit(tab, '#/query', 'query');
    await tab.page.fill('#params', '');
    await tab.page.fill('#statement', 'create collection notes (title text)');
    await tab.page.click('#run');
    expect(await tab.page.getAttribute('#output .error', 'data-code')).to.equal('read_only');
    tab.problems.splice(0);
    expect(JSON.parse((await query(readOnly.url, 'schema', [], TOKEN)).text)).to.deep.equal({ collections: [] });
  });

  it('on a router, lists the tenants with their nodes and quotas, and opens one', async () => {
    const root = sandbox.dir();
    const node = await sandbox.startServer(['--data-dir', root, '--http-token', TOKEN, '--jwt-secret', SECRET]);
    const router = await sandbox.startProgram(FENEC_ROUTER, [
      '--port',
      '0',
      '--nodes',
      `n1=${node.url}`,
      '--http-token',
      TOKEN,
      '--jwt-secret',
      SECRET,
    ]);
    expect(
      (await request(router.url, { method: 'PUT', path: '/t/acme', headers: { authorization: `Bearer ${TOKEN}` } }))
        .status,
    ).to.equal(201);
    expect(
      (
        await request(router.url, {
          method: 'POST',
          path: '/t/acme/query',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ statement: 'create collection notes (title text)' }),
        })
      ).status,
    ).to.equal(200);
    const tab = await signIn(router.url, TOKEN, '');
    expect(await tab.page.textContent('tr[data-tenant=acme]'))
      .to.include('n1')
      .and.include('rate');
    await shoot(tab, 'tenants');
    await tab.page.click('tr[data-tenant=acme] button');
    await tab.page.waitForSelector('tr[data-collection=notes]');
    const onNode = await signIn(node.url, TOKEN, 'acme');
    expect(await onNode.page.locator('tr[data-collection]').count()).to.equal(1);
  });
});
