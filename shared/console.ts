/**
 * The browser console's files (`console/` at the package's root), served at `/_console` by
 * fenec-server and fenec-router alike.
 *
 * The files are public and hold no data: the page asks for a token and every figure it shows comes
 * from the same routes any client calls (`/query`, `/_metrics`, `/_tenants`), so the console has no
 * power of its own. They are read once, at first use, and kept with a gzip copy and an ETag; the
 * Content-Security-Policy lets the page load nothing but its own files and talk to nothing but its
 * own origin.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';

/** Which program serves the page: the console shows the pages that make sense there. */
export type ConsoleKind = 'file' | 'tenant-node' | 'router';

export const CONSOLE_PATH = '/_console';

/** `dist/shared/console.js` and `shared/console.ts` both sit two folders below the package's root. */
const CONSOLE_DIR = new URL('../../console/', import.meta.url);

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

const HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // Revalidated on every load (a 304 is cheap): an upgraded server never serves an old page.
  'cache-control': 'no-cache',
};

interface Asset {
  readonly type: string;
  readonly plain: Buffer;
  readonly gzip: Buffer;
  readonly etag: string;
}

const assetsByKind = new Map<ConsoleKind, ReadonlyMap<string, Asset>>();

/** True for `/_console` and the paths below it. */
export function isConsolePath(pathname: string): boolean {
  return pathname === CONSOLE_PATH || pathname.startsWith(`${CONSOLE_PATH}/`);
}

/**
 * Answers a request for one of the console's files (GET or HEAD). `/_console` redirects to
 * `/_console/` so that the page's relative links resolve under it.
 */
export function serveConsole(req: IncomingMessage, res: ServerResponse, pathname: string, kind: ConsoleKind): void {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    return plain(res, 405, 'the console takes GET', { allow: 'GET, HEAD' });
  }
  if (pathname === CONSOLE_PATH) return plain(res, 308, '', { location: `${CONSOLE_PATH}/` });
  const name = pathname.slice(CONSOLE_PATH.length + 1) || 'index.html';
  const asset = assetsOf(kind).get(name);
  if (asset === undefined) return plain(res, 404, `the console has no file ${JSON.stringify(name.slice(0, 100))}`);
  if (req.headers['if-none-match'] === asset.etag) return plain(res, 304, '', { etag: asset.etag, ...HEADERS });
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
  const body = gzip ? asset.gzip : asset.plain;
  res.writeHead(200, {
    ...HEADERS,
    'content-type': asset.type,
    'content-length': body.length,
    etag: asset.etag,
    vary: 'accept-encoding',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The console's files as shipped, each with its size plain and gzipped (for docs and tests). */
export function consoleBundle(kind: ConsoleKind = 'file'): { name: string; bytes: number; gzipBytes: number }[] {
  return [...assetsOf(kind)].map(([name, asset]) => ({
    name,
    bytes: asset.plain.length,
    gzipBytes: asset.gzip.length,
  }));
}

function assetsOf(kind: ConsoleKind): ReadonlyMap<string, Asset> {
  let assets = assetsByKind.get(kind);
  if (assets === undefined) {
    assets = loadAssets(kind);
    assetsByKind.set(kind, assets);
  }
  return assets;
}

function loadAssets(kind: ConsoleKind): ReadonlyMap<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(CONSOLE_DIR)) {
    const type = TYPES[name.slice(name.lastIndexOf('.'))];
    if (type === undefined) continue;
    let plainBytes = readFileSync(new URL(name, CONSOLE_DIR));
    // The page learns which program serves it from a meta tag, not from a request of its own.
    if (name === 'index.html') plainBytes = Buffer.from(plainBytes.toString('utf8').replace('{{kind}}', kind));
    const etag = `"${createHash('sha256').update(plainBytes).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { type, plain: plainBytes, gzip: gzipSync(plainBytes, { level: 9 }), etag });
  }
  return assets;
}

function plain(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}
