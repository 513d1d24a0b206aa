// @ts-check
// The console's only way to the server: the same routes and tokens any client uses. The token lives
// in this tab's sessionStorage and nowhere else; closing the tab forgets it.

/** `file`, `node` or `router`: the server's kind, written into the page it serves. */
export const kind =
  /** @type {HTMLMetaElement | null} */ (document.querySelector('meta[name="fenec-kind"]'))?.content ?? 'file';

const TOKEN = 'fenec.token';
const TENANT = 'fenec.tenant';

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN);
  },
  get tenant() {
    return sessionStorage.getItem(TENANT) ?? '';
  },
  get signedIn() {
    return sessionStorage.getItem(TOKEN) !== null;
  },
  /** A JSON Web Token (three dot-separated parts) is scoped by its policy: no metrics, no tenant list. */
  get scoped() {
    return (sessionStorage.getItem(TOKEN) ?? '').split('.').length === 3;
  },
  signIn(token, tenant) {
    sessionStorage.setItem(TOKEN, token);
    if (tenant) sessionStorage.setItem(TENANT, tenant);
    else sessionStorage.removeItem(TENANT);
  },
  signOut() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(TENANT);
  },
};

/** A refusal as the server gave it: code, message, hint, and line and column when it points into the text. */
export class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'http_error';
    this.hint = error?.hint;
    this.line = error?.line;
    this.column = error?.column;
  }
}

function headers(extra = {}) {
  const token = session.token;
  return token ? { authorization: `Bearer ${token}`, ...extra } : extra;
}

/** Where statements go: /query on one file, /t/<tenant>/query on a tenant node or through a router. */
function queryPath() {
  return kind === 'file' ? '/query' : `/t/${encodeURIComponent(session.tenant)}/query`;
}

async function answerOf(res) {
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(res.status, { code: 'not_json', message: text.slice(0, 300) || `HTTP ${res.status}` });
  }
  if (!res.ok) throw new ApiError(res.status, body.error);
  return body;
}

/** Runs one FenecQL statement with its parameters; resolves with the answer, rejects with an ApiError. */
export async function query(statement, params) {
  const body = params === undefined ? { statement } : { statement, params };
  const res = await fetch(queryPath(), {
    method: 'POST',
    headers: headers({ 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });
  return answerOf(res);
}

export async function getJson(path) {
  return answerOf(await fetch(path, { headers: headers() }));
}

export async function getText(path) {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) await answerOf(res);
  return res.text();
}

/** @typedef {{ name: string, labels: Record<string, string>, value: number }} Sample */

/**
 * Prometheus text exposition → [{name, labels, value}]. Enough of the format for what our servers
 * write: comments skipped, label values unescaped, no timestamps.
 * @param {string} text
 * @returns {Sample[]}
 */
export function parseMetrics(text) {
  /** @type {Sample[]} */
  const samples = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (match === null) continue;
    /** @type {Record<string, string>} */
    const labels = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key] = value.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return samples;
}
