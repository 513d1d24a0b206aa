// @ts-check
// fenecdb's console: one page per route (#/collections, #/rows/NAME, #/query, #/search, #/memory,
// #/metrics, #/tenants), each drawn from the answers of the routes any client calls, with the token
// the user gave. It never builds a statement out of a value: values travel as parameters, and names
// come from the schema the server answered.

import { ApiError, getJson, getText, kind, parseMetrics, query, session } from './api.js';
import { colorOf, drawChart } from './chart.js';

/**
 * An element index.html holds: its absence is a broken page, said at once rather than as a null later.
 * @param {string} id
 * @returns {HTMLElement}
 */
function byId(id) {
  const el = document.getElementById(id);
  if (el === null) throw new Error(`index.html has no #${id}`);
  return el;
}

const main = byId('main');
const nav = byId('nav');
const PAGE_SIZE = 50;
const HISTORY = 'fenec.history';
const HISTORY_SIZE = 50;

/** @typedef {import('./api.js').Sample} Sample */
/** @typedef {Node | string | number | null | undefined | false | unknown[]} Child a child, or a list of them */

/**
 * `h('td', {class: 'cell'}, 'text', node)`: an element with attributes and children (text is never HTML).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown>} [attrs] attributes; `on…` ones are listeners, `value` the property
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    else if (key === 'value') /** @type {HTMLInputElement} */ (el).value = String(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** @param {...(Node | string)} children the page's content */
function show(...children) {
  main.replaceChildren(...children);
}

/**
 * A refusal as the page shows it: its code, message, hint, and for a statement the line with a caret.
 * @param {unknown} err
 * @param {string} [statement]
 * @returns {HTMLElement}
 */
function errorBox(err, statement) {
  if (!(err instanceof ApiError)) return h('div', { class: 'error', role: 'alert' }, String(err));
  // A syntax error's message names its position already; another error's position is added once.
  const position = `at line ${err.line}, column ${err.column}`;
  const where = err.line !== undefined && !err.message.includes(position) ? ` ${position}` : '';
  const box = h(
    'div',
    { class: 'error', role: 'alert', 'data-code': err.code },
    h('span', { class: 'code' }, err.code),
    where,
    ': ',
    err.message,
    err.hint ? h('div', { class: 'muted' }, `hint: ${err.hint}`) : undefined,
  );
  if (statement !== undefined && err.line !== undefined) {
    const line = statement.split('\n')[err.line - 1] ?? '';
    box.append(h('pre', { class: 'caret' }, `${line}\n${' '.repeat(Math.max(0, err.column - 1))}^`));
  }
  return box;
}

/**
 * @param {unknown} value
 * @returns {string}
 */
function cellText(value) {
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** Rows as a table: `id` first, then every key any row has, in the order first seen. */
function rowsTable(rows) {
  const keys = [...new Set(rows.flatMap((row) => Object.keys(row)))];
  if (keys.includes('id')) {
    keys.splice(keys.indexOf('id'), 1);
    keys.unshift('id');
  }
  return h(
    'table',
    { class: 'rows' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        keys.map((key) => h('th', {}, key)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((row) =>
        h(
          'tr',
          {},
          keys.map((key) => {
            const text = cellText(row[key]);
            return h('td', { class: 'cell', title: text.length > 60 ? text.slice(0, 2000) : undefined }, text);
          }),
        ),
      ),
    ),
  );
}

/** `the **fox** ran` → text with <mark>s: the snippet's markers, never its text, become elements. */
function snippet(text) {
  if (typeof text !== 'string') return h('span', { class: 'muted' }, 'no snippet');
  return h(
    'span',
    {},
    text.split('**').map((part, i) => (i % 2 === 1 ? h('mark', {}, part) : part)),
  );
}

async function schema() {
  return (await query('schema')).collections;
}

// ─── Sign in ──────────────────────────────────────────────────────────────────────────────────────

function signInPage(next) {
  const token = h('input', { type: 'password', id: 'token', autocomplete: 'off', placeholder: 'server token or JWT' });
  const tenant =
    kind === 'file' ? undefined : h('input', { id: 'tenant', placeholder: 'tenant name', value: session.tenant });
  const status = h('div');
  const form = h(
    'form',
    {
      class: 'sign-in',
      onsubmit: async (event) => {
        event.preventDefault();
        session.signIn(token.value.trim(), tenant?.value.trim());
        status.replaceChildren(h('span', { class: 'muted' }, 'checking…'));
        try {
          if (kind === 'file' || session.tenant !== '') await query('schema');
          else if (!session.scoped) await getJson('/_tenants');
          else throw new ApiError(400, { code: 'invalid_tenant', message: 'name the tenant your token is for' });
          go(
            next && next !== '#/sign-in'
              ? next
              : kind !== 'file' && session.tenant === ''
                ? '#/tenants'
                : '#/collections',
          );
        } catch (err) {
          session.signOut();
          status.replaceChildren(errorBox(err));
        }
      },
    },
    h('h1', {}, 'Sign in'),
    h(
      'p',
      { class: 'muted' },
      'The console sends this token with every request and keeps it in this tab only (session storage). ' +
        'It sees exactly what the token may see through /query.',
    ),
    h('label', { for: 'token' }, 'Token'),
    token,
    tenant && [
      h('label', { for: 'tenant' }, 'Tenant'),
      tenant,
      h('span', { class: 'muted' }, 'Leave it empty with the server token to list the tenants first.'),
    ],
    h('button', { type: 'submit' }, 'Sign in'),
    status,
  );
  show(form);
  token.focus();
}

// ─── Collections ─────────────────────────────────────────────────────────────────────────────────

/** What indexes a field: its annotations but `@ttl` (which indexes its field too) and `unique`. */
const INDEXING = /^@(text|hnsw|hash|sorted|ttl)\b/;

/**
 * A field's index, in words: what indexes it, and for a vector index the state `schema` reports to the
 * server's token (`{rows, pending, building}`; a JWT is told no state). Undefined for a field not indexed.
 */
function indexState(field) {
  const kinds = field.annotations.filter((a) => INDEXING.test(a));
  if (field.unique && field.name !== 'id') kinds.push('unique');
  const index = field.index;
  if (kinds.length === 0 && (index === undefined || index === null)) return undefined;
  const parts = [kinds.join(' ')];
  if (index !== undefined && index !== null) {
    parts.push(`${index.rows} rows`);
    if (index.building) parts.push('building');
    else parts.push(index.pending > 0 ? `${index.pending} to index` : 'ready');
  }
  return h('span', { class: 'chip note', title: index ? JSON.stringify(index) : undefined }, parts.join(' · '));
}

async function collectionsPage() {
  show(h('h1', {}, 'Collections'), h('p', { class: 'muted' }, 'loading…'));
  const collections = await schema();
  const counts = await Promise.all(
    collections.map((c) =>
      query(`get ${c.name} count`).then(
        (a) => a.count,
        () => '—',
      ),
    ),
  );
  show(
    h('h1', {}, 'Collections'),
    collections.length === 0
      ? h('p', { class: 'muted' }, 'No collection this token may read.')
      : h(
          'table',
          { id: 'collections' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['collection', 'rows', 'fields', 'indexes'].map((t) => h('th', {}, t)),
            ),
          ),
          h(
            'tbody',
            {},
            collections.map((c, i) =>
              h(
                'tr',
                { 'data-collection': c.name },
                h('td', {}, h('a', { href: `#/rows/${encodeURIComponent(c.name)}` }, c.name)),
                h('td', { class: 'mono' }, String(counts[i])),
                h(
                  'td',
                  {},
                  c.fields.map((f) =>
                    h(
                      'span',
                      { class: 'chip', title: f.default !== undefined ? `default ${f.default}` : undefined },
                      `${f.name} ${f.type}${f.required ? ' required' : ''}${f.unique ? ' unique' : ''}${f.annotations.length ? ` ${f.annotations.join(' ')}` : ''}`,
                    ),
                  ),
                ),
                h(
                  'td',
                  {},
                  c.fields.map((f) => {
                    const state = indexState(f);
                    return state && h('div', {}, `${f.name}: `, state);
                  }),
                ),
              ),
            ),
          ),
        ),
  );
}

// ─── Rows ────────────────────────────────────────────────────────────────────────────────────────

/** Pages by id (keyset), not offset: a page never repeats or skips a row when rows come and go. */
async function rowsPage(name) {
  const collections = await schema();
  const chosen = name ?? collections[0]?.name;
  const picker = h(
    'select',
    {
      id: 'collection',
      onchange: () => {
        location.hash = `#/rows/${encodeURIComponent(picker.value)}`;
      },
    },
    collections.map((c) => h('option', { value: c.name, selected: c.name === chosen }, c.name)),
  );
  const table = h('div');
  const pager = h('div', { class: 'row' });
  show(
    h('h1', {}, 'Rows'),
    h('div', { class: 'row' }, h('label', { for: 'collection' }, 'Collection'), picker),
    table,
    pager,
  );
  if (chosen === undefined)
    return table.replaceChildren(h('p', { class: 'muted' }, 'No collection this token may read.'));
  const starts = [0];
  const load = async () => {
    const after = starts[starts.length - 1];
    try {
      const answer = await query(`get ${chosen} where id > $1 order id limit $2`, [after, PAGE_SIZE + 1]);
      const rows = answer.rows.slice(0, PAGE_SIZE);
      const more = answer.rows.length > PAGE_SIZE;
      table.replaceChildren(rows.length === 0 ? h('p', { class: 'muted' }, 'No rows.') : rowsTable(rows));
      pager.replaceChildren(
        h(
          'button',
          {
            class: 'quiet',
            id: 'previous',
            disabled: starts.length === 1,
            onclick: () => {
              starts.pop();
              load();
            },
          },
          '← previous',
        ),
        h('span', { class: 'muted' }, `page ${starts.length} · ${rows.length} rows`),
        h(
          'button',
          {
            class: 'quiet',
            id: 'next',
            disabled: !more,
            onclick: () => {
              starts.push(rows[rows.length - 1].id);
              load();
            },
          },
          'next →',
        ),
      );
    } catch (err) {
      table.replaceChildren(errorBox(err));
    }
  };
  await load();
}

// ─── Query editor ────────────────────────────────────────────────────────────────────────────────

function history() {
  try {
    return JSON.parse(localStorage.getItem(HISTORY) ?? '[]');
  } catch {
    return [];
  }
}

function remember(statement, params) {
  const entries = history().filter((e) => e.statement !== statement || e.params !== params);
  entries.unshift({ statement, params });
  localStorage.setItem(HISTORY, JSON.stringify(entries.slice(0, HISTORY_SIZE)));
}

function queryPage() {
  const last = history()[0];
  const text = h('textarea', {
    id: 'statement',
    rows: 8,
    spellcheck: 'false',
    placeholder: 'get notes limit 10',
    value: last?.statement ?? '',
  });
  const params = h('textarea', {
    id: 'params',
    rows: 2,
    spellcheck: 'false',
    placeholder: '[] parameters as a JSON array: $1, $2, …',
    value: last?.params ?? '',
  });
  const asJson = h('input', { type: 'checkbox', id: 'as-json' });
  const output = h('div', { id: 'output' });
  const past = h('div', { class: 'history', id: 'history' });
  let answer;
  const render = () => {
    if (answer === undefined) return;
    if (asJson.checked || !Array.isArray(answer.rows))
      output.replaceChildren(h('pre', { class: 'json' }, JSON.stringify(answer, null, 2)));
    else
      output.replaceChildren(
        answer.rows.length === 0 ? h('p', { class: 'muted' }, 'No rows.') : rowsTable(answer.rows),
      );
  };
  const drawHistory = () =>
    past.replaceChildren(
      ...history().map((e) =>
        h(
          'button',
          {
            type: 'button',
            title: e.statement,
            onclick: () => {
              text.value = e.statement;
              params.value = e.params;
              text.focus();
            },
          },
          e.statement.replace(/\s+/g, ' '),
        ),
      ),
    );
  const run = async () => {
    const statement = text.value;
    let values;
    if (params.value.trim() !== '') {
      try {
        values = JSON.parse(params.value);
        if (!Array.isArray(values)) throw new Error('the parameters are a JSON array: [1, "two"]');
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        return output.replaceChildren(errorBox(new ApiError(0, { code: 'bad_params', message })));
      }
    }
    const started = performance.now();
    try {
      answer = await query(statement, values);
      remember(statement, params.value);
      drawHistory();
      status.textContent = `${Math.round(performance.now() - started)} ms${answer.count !== undefined ? ` · count ${answer.count}` : ''}`;
      render();
    } catch (err) {
      answer = undefined;
      status.textContent = '';
      output.replaceChildren(errorBox(err, statement));
      if (err instanceof ApiError && err.line !== undefined) selectAt(text, err.line, err.column);
    }
  };
  const status = h('span', { class: 'muted', id: 'status' });
  text.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      run();
    }
  });
  asJson.addEventListener('change', render);
  drawHistory();
  show(
    h('h1', {}, 'Query'),
    h(
      'div',
      { class: 'editor' },
      h(
        'div',
        {},
        text,
        params,
        h(
          'div',
          { class: 'row' },
          h('button', { type: 'button', id: 'run', onclick: run }, 'Run'),
          h('span', { class: 'muted' }, 'Ctrl+Enter'),
          h('label', {}, asJson, ' JSON'),
          status,
        ),
      ),
      h('div', {}, h('div', { class: 'muted' }, 'History'), past),
    ),
    output,
  );
  text.focus();
}

/** Puts the cursor where the error points, so that the line and column are seen in the text itself. */
function selectAt(textarea, line, column) {
  const lines = textarea.value.split('\n');
  let offset = 0;
  for (let i = 0; i < line - 1 && i < lines.length; i += 1) offset += lines[i].length + 1;
  offset += column - 1;
  textarea.focus();
  textarea.setSelectionRange(offset, offset + 1);
}

// ─── Search ──────────────────────────────────────────────────────────────────────────────────────

const isText = (f) => f.annotations.some((a) => a === '@text' || a.startsWith('@text('));
const isVector = (f) => f.type.startsWith('vector');

async function searchPage() {
  const collections = (await schema()).filter((c) => c.fields.some((f) => isText(f) || isVector(f)));
  if (collections.length === 0)
    return show(h('h1', {}, 'Search'), h('p', { class: 'muted' }, 'No collection with an @text or vector field.'));
  const collection = h(
    'select',
    { id: 'search-collection' },
    collections.map((c) => h('option', { value: c.name }, c.name)),
  );
  const textField = h('select', { id: 'text-field' });
  const vectorField = h('select', { id: 'vector-field' });
  const words = h('input', { id: 'words', size: 40, placeholder: 'words to match' });
  const vector = h('input', { id: 'vector', size: 30, placeholder: '[0.1, 0.2, …] or a row id' });
  const limit = h('input', { id: 'limit', type: 'number', min: 1, max: 100, value: 10 });
  const columns = h('div', { class: 'columns' });
  const fieldsOf = () => collections.find((c) => c.name === collection.value).fields;
  const fillFields = () => {
    const fields = fieldsOf();
    textField.replaceChildren(
      ...fields.filter(isText).map((f) => h('option', { value: f.name }, f.name)),
      ...(fields.filter(isText).length > 1 ? [h('option', { value: '*' }, '* (every @text field)')] : []),
    );
    vectorField.replaceChildren(...fields.filter(isVector).map((f) => h('option', { value: f.name }, f.name)));
  };
  collection.addEventListener('change', fillFields);
  fillFields();
  const shown = () =>
    fieldsOf()
      .filter((f) => !isVector(f))
      .map((f) => f.name)
      .filter((n) => n !== 'id')
      .slice(0, 2);

  const run = async (event) => {
    event?.preventDefault();
    const c = collection.value;
    const n = Math.max(1, Math.min(100, Number(limit.value) || 10));
    const select = shown().length ? `select ${shown().join(', ')} ` : '';
    let query_vector;
    try {
      query_vector = await vectorOf(c, vectorField.value, vector.value.trim());
    } catch (err) {
      return columns.replaceChildren(errorBox(err));
    }
    const words_ = words.value.trim();
    const kinds = [
      [
        'match',
        words_ && textField.value ? [`get ${c} ${select}match ${textField.value} $1 limit $2`, [words_, n]] : undefined,
        'words',
      ],
      [
        'near',
        query_vector && vectorField.value
          ? [`get ${c} ${select}near ${vectorField.value} $1 limit $2`, [query_vector, n]]
          : undefined,
        'a vector',
      ],
      [
        'fuse',
        words_ && query_vector && textField.value && vectorField.value
          ? [
              `get ${c} ${select}match ${textField.value} $1 near ${vectorField.value} $2 fuse limit $3`,
              [words_, query_vector, n],
            ]
          : undefined,
        'words and a vector',
      ],
    ];
    columns.replaceChildren(
      ...kinds.map(([name, call, needs]) => {
        const column = h('div', { class: 'column', id: `${name}-results` }, h('h2', {}, name));
        if (call === undefined) column.append(h('p', { class: 'muted' }, `needs ${needs}`));
        else {
          column.append(h('p', { class: 'muted mono' }, call[0]));
          query(...call).then(
            (answer) =>
              column.append(
                ...(answer.rows.length === 0 ? [h('p', { class: 'muted' }, 'No rows.')] : answer.rows.map(hit)),
              ),
            (err) => column.append(errorBox(err)),
          );
        }
        return column;
      }),
    );
  };
  const hit = (row, i) =>
    h(
      'div',
      { class: 'hit', 'data-id': row.id },
      h('span', { class: 'score' }, typeof row._score === 'number' ? row._score.toPrecision(4) : ''),
      h('b', {}, `${i + 1}. #${row.id}`),
      ' ',
      shown().map((name) => h('div', {}, cellText(row[name]).slice(0, 200))),
      'snippet' in row ? h('div', {}, snippet(row.snippet)) : undefined,
    );

  show(
    h('h1', {}, 'Search'),
    h(
      'form',
      { onsubmit: run },
      h(
        'div',
        { class: 'row' },
        h('label', {}, 'Collection ', collection),
        h('label', {}, 'Text field ', textField),
        h('label', {}, 'Vector field ', vectorField),
        h('label', {}, 'Limit ', limit),
      ),
      h('div', { class: 'row' }, words, vector, h('button', { type: 'submit', id: 'search' }, 'Search')),
    ),
    h(
      'p',
      { class: 'muted' },
      'match ranks by BM25, near by vector similarity, fuse by reciprocal rank fusion of the two.',
    ),
    columns,
  );
}

/** A vector typed as JSON, or the vector of the row whose id was typed ("more like this row"). */
async function vectorOf(collection, field, typed) {
  if (typed === '' || field === '') return undefined;
  if (/^\d+$/.test(typed)) {
    const answer = await query(`get ${collection} select ${field} where id = $1`, [Number(typed)]);
    const found = answer.rows[0]?.[field];
    if (!Array.isArray(found)) throw new ApiError(0, { code: 'no_vector', message: `row ${typed} has no ${field}` });
    return found;
  }
  try {
    const parsed = JSON.parse(typed);
    if (Array.isArray(parsed)) return parsed;
  } catch {
    /* said below */
  }
  throw new ApiError(0, {
    code: 'bad_vector',
    message: 'type a vector as a JSON array of numbers, or a row id to search near its vector',
  });
}

// ─── Memory ──────────────────────────────────────────────────────────────────────────────────────

const MEMORY = 'fenec.memory-collection';

async function memoryPage() {
  const name = h('input', { id: 'memory-collection', value: localStorage.getItem(MEMORY) ?? 'memories', size: 16 });
  const tag = h('input', { id: 'memory-tag', placeholder: 'tag', size: 12 });
  const out = h('div', { id: 'memories' });
  const load = async (event) => {
    event?.preventDefault();
    localStorage.setItem(MEMORY, name.value);
    const collections = await schema();
    const collection = collections.find((c) => c.name === name.value);
    if (collection === undefined)
      return out.replaceChildren(
        h(
          'p',
          { class: 'muted' },
          `No collection ${name.value} this token may read. Agents make it with their first remember.`,
        ),
      );
    const has = (field) => collection.fields.some((f) => f.name === field);
    const order = has('at') ? ' order at desc' : ' order id desc';
    try {
      const answer =
        tag.value.trim() !== '' && has('tags')
          ? await query(`get ${collection.name} where tags has $1${order} limit 500`, [tag.value.trim()])
          : await query(`get ${collection.name}${order} limit 500`);
      const owners = new Map();
      for (const row of answer.rows) {
        const owner = row.owner ?? '(no owner)';
        owners.set(owner, [...(owners.get(owner) ?? []), row]);
      }
      out.replaceChildren(
        h(
          'p',
          { class: 'muted' },
          `${answer.count} memories${answer.count === 500 ? ' (the newest 500)' : ''}, ${owners.size} owners`,
        ),
        ...[...owners].map(([owner, rows]) =>
          h(
            'section',
            { class: 'owner', 'data-owner': owner },
            h('h2', {}, `${owner} · ${rows.length}`),
            h('table', {}, h('tbody', {}, rows.map(memoryRow))),
          ),
        ),
      );
    } catch (err) {
      out.replaceChildren(errorBox(err));
    }
  };
  show(
    h('h1', {}, 'Memory'),
    h(
      'form',
      { class: 'row', onsubmit: load },
      h('label', {}, 'Collection ', name),
      h('label', {}, 'Tag ', tag),
      h('button', { type: 'submit' }, 'Show'),
    ),
    out,
  );
  await load();
}

function memoryRow(row) {
  return h(
    'tr',
    {},
    h('td', { class: 'mono' }, `#${row.id}`),
    h('td', {}, cellText(row.text)),
    h(
      'td',
      {},
      (row.tags ?? []).map((t) => h('span', { class: 'chip' }, t)),
    ),
    h('td', { class: 'muted' }, row.at ? new Date(row.at).toLocaleString() : ''),
    h('td', { class: 'muted' }, row.expires ? `expires ${relative(row.expires)}` : 'kept'),
  );
}

function relative(when) {
  const ms = new Date(when).getTime() - Date.now();
  const abs = Math.abs(ms);
  const [value, unit] =
    abs < 3_600_000 ? [abs / 60_000, 'min'] : abs < 172_800_000 ? [abs / 3_600_000, 'h'] : [abs / 86_400_000, 'd'];
  return ms >= 0 ? `in ${Math.round(value)} ${unit}` : `${Math.round(value)} ${unit} ago`;
}

// ─── Metrics ─────────────────────────────────────────────────────────────────────────────────────

const POLL_MS = 2000;
const SPAN_MS = 5 * 60_000;
/** Snapshots of /_metrics kept across page changes, so the charts keep their last minutes. */
const snapshots = [];
let poller;

/**
 * The total of the samples of one metric whose labels pass `where`.
 * @param {Sample[]} samples
 * @param {string} name
 * @param {(labels: Record<string, string>) => boolean} [where]
 * @returns {number}
 */
function sum(samples, name, where = () => true) {
  return samples.filter((s) => s.name === name && where(s.labels)).reduce((total, s) => total + s.value, 0);
}

function groups(samples, name, label) {
  return [...new Set(samples.filter((s) => s.name === name).map((s) => s.labels[label]))].filter(
    (v) => v !== undefined,
  );
}

/** Per-second rate of a counter between consecutive snapshots, one series per label value. */
function rates(name, label) {
  const keys = groups(snapshots.at(-1)?.samples ?? [], name, label);
  return keys.map((key) => ({
    name: key,
    points: pairs().map(([a, b]) => [
      b.t,
      Math.max(0, sum(b.samples, name, (l) => l[label] === key) - sum(a.samples, name, (l) => l[label] === key)) /
        ((b.t - a.t) / 1000),
    ]),
  }));
}

function pairs() {
  return snapshots.slice(1).map((b, i) => [snapshots[i], b]);
}

/** p50/p95/p99 in ms of what a histogram counted between snapshots, interpolated within buckets. */
function percentiles(name) {
  const at = (samples) => {
    const buckets = new Map();
    for (const s of samples)
      if (s.name === `${name}_bucket`) buckets.set(s.labels.le, (buckets.get(s.labels.le) ?? 0) + s.value);
    return buckets;
  };
  return [0.5, 0.95, 0.99].map((q) => ({
    name: `p${Math.round(q * 100)}`,
    points: pairs().flatMap(([a, b]) => {
      const before = at(a.samples);
      const delta = [...at(b.samples)]
        .map(([le, count]) => [le === '+Inf' ? Infinity : Number(le), count - (before.get(le) ?? 0)])
        .sort((x, y) => x[0] - y[0]);
      const total = delta.at(-1)?.[1] ?? 0;
      if (total <= 0) return [];
      const rank = q * total;
      let lower = 0;
      let below = 0;
      for (const [le, count] of delta) {
        if (count >= rank) {
          const upper = le === Infinity ? lower : le;
          const within = count - below;
          return [[b.t, 1000 * (within > 0 ? lower + (upper - lower) * ((rank - below) / within) : upper)]];
        }
        lower = le;
        below = count;
      }
      return [];
    }),
  }));
}

function gauge(name, label) {
  const keys = label ? groups(snapshots.at(-1)?.samples ?? [], name, label) : [name];
  return keys.map((key) => ({
    name: key,
    points: snapshots.map((s) => [s.t, sum(s.samples, name, label ? (l) => l[label] === key : undefined)]),
  }));
}

const CHARTS = [
  {
    id: 'requests',
    title: 'Requests',
    unit: 'req/s',
    series: () => [...rates('fenec_http_requests_total', 'route'), ...rates('fenec_router_requests_total', 'node')],
  },
  {
    id: 'latency',
    title: 'Latency',
    unit: 'ms',
    series: () => {
      const node = percentiles('fenec_http_request_duration_seconds');
      return node.some((s) => s.points.length) ? node : percentiles('fenec_router_proxy_duration_seconds');
    },
  },
  { id: 'tools', title: 'MCP tool calls', unit: 'calls/s', series: () => rates('fenec_mcp_tool_calls_total', 'tool') },
  {
    id: 'refusals',
    title: 'Quota refusals',
    unit: 'refusals/s',
    tenants: true,
    series: () => rates('fenec_tenant_quota_refusals_total', 'quota'),
  },
  {
    id: 'tenants',
    title: 'Open tenants',
    unit: 'tenants',
    tenants: true,
    series: () => [...gauge('fenec_tenants_open'), ...gauge('fenec_tenants')],
  },
  {
    id: 'loop',
    title: 'Event loop delay p99',
    unit: 'ms',
    series: () =>
      gauge('nodejs_eventloop_lag_p99_seconds').map((s) => ({
        name: 'p99',
        points: s.points.map(([t, v]) => [t, v * 1000]),
      })),
  },
];

async function poll() {
  const text = await getText('/_metrics');
  snapshots.push({ t: Date.now(), samples: parseMetrics(text) });
  while (snapshots.length > 2 && snapshots[0].t < Date.now() - SPAN_MS - POLL_MS) snapshots.shift();
}

function metricsPage() {
  if (session.scoped) {
    return show(
      h('h1', {}, 'Metrics'),
      h('p', { class: 'muted' }, "/_metrics takes the server's token only; this token is a JWT."),
    );
  }
  const status = h('p', { class: 'muted', id: 'metrics-status' }, 'Collecting: a chart needs two samples, 2 s apart.');
  // Quotas and open tenants are a tenant node's: a one-file server has neither to chart.
  const charts = CHARTS.filter((chart) => !chart.tenants || kind !== 'file').map((chart) => ({
    ...chart,
    canvas: h('canvas', { id: `chart-${chart.id}`, 'aria-label': chart.title }),
    legend: h('div', { class: 'legend' }),
  }));
  show(
    h('h1', {}, 'Metrics'),
    status,
    h(
      'div',
      { class: 'charts' },
      charts.map((c) => h('div', { class: 'chart' }, h('h2', {}, c.title), c.canvas, c.legend)),
    ),
  );
  const draw = () => {
    // The axis spans what was collected, from 20 s up to the 5 minutes kept.
    const spanMs = Math.min(SPAN_MS, Math.max(20_000, Date.now() - snapshots[0].t));
    for (const chart of charts) {
      const series = chart.series().filter((s) => s.points.length > 0);
      drawChart(chart.canvas, series, { spanMs, unit: chart.unit });
      chart.canvas.dataset.series = String(series.length);
      chart.legend.replaceChildren(
        ...(series.length === 0
          ? [h('em', {}, 'nothing counted yet')]
          : series.map((s, i) => {
              const item = h('span', {}, s.name);
              item.style.setProperty('--swatch', colorOf(i));
              return item;
            })),
      );
    }
  };
  const tick = async () => {
    try {
      await poll();
      if (snapshots.length >= 2)
        status.textContent = `Every ${POLL_MS / 1000} s, the last ${Math.round((snapshots.at(-1).t - snapshots[0].t) / 1000)} s.`;
      draw();
    } catch (err) {
      stopPolling();
      status.replaceChildren(errorBox(err));
    }
  };
  tick();
  poller = setInterval(tick, POLL_MS);
}

function stopPolling() {
  clearInterval(poller);
  poller = undefined;
}

// ─── Tenants (router and tenant nodes) ──────────────────────────────────────────────────────────

async function tenantsPage() {
  if (session.scoped)
    return show(h('h1', {}, 'Tenants'), h('p', { class: 'muted' }, "/_tenants takes the server's token only."));
  const { tenants } = await getJson('/_tenants');
  show(
    h('h1', {}, 'Tenants'),
    tenants.length === 0
      ? h('p', { class: 'muted' }, 'No tenants yet: create one with fenec tenant create NAME.')
      : h(
          'table',
          { id: 'tenants' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['tenant', 'node', 'quotas', ''].map((t) => h('th', {}, t)),
            ),
          ),
          h(
            'tbody',
            {},
            tenants.map((t) =>
              h(
                'tr',
                { 'data-tenant': t.name },
                h('td', {}, t.name),
                h('td', {}, t.node ?? 'this node'),
                h(
                  'td',
                  {},
                  Object.entries(t.quotas ?? {}).map(([k, v]) => h('span', { class: 'chip' }, `${k} ${cellText(v)}`)),
                ),
                h(
                  'td',
                  {},
                  h(
                    'button',
                    {
                      class: 'quiet',
                      type: 'button',
                      onclick: () => {
                        session.signIn(session.token, t.name);
                        go('#/collections');
                      },
                    },
                    'open',
                  ),
                ),
              ),
            ),
          ),
        ),
  );
}

// ─── Routing ─────────────────────────────────────────────────────────────────────────────────────

const PAGES = [
  { path: 'collections', title: 'Collections', draw: collectionsPage, data: true },
  { path: 'rows', title: 'Rows', draw: (arg) => rowsPage(arg), data: true },
  { path: 'query', title: 'Query', draw: queryPage, data: true },
  { path: 'search', title: 'Search', draw: searchPage, data: true },
  { path: 'memory', title: 'Memory', draw: memoryPage, data: true },
  { path: 'metrics', title: 'Metrics', draw: metricsPage },
  ...(kind === 'file' ? [] : [{ path: 'tenants', title: 'Tenants', draw: tenantsPage }]),
];

function drawHeader(current) {
  nav.replaceChildren(
    ...(session.signedIn ? PAGES : []).map((p) =>
      h('a', { href: `#/${p.path}`, class: p.path === current ? 'here' : undefined }, p.title),
    ),
  );
  const who = byId('who');
  who.textContent = session.signedIn
    ? `${kind}${session.tenant ? ` · tenant ${session.tenant}` : ''} · ${session.scoped ? 'JWT' : 'server token'}`
    : '';
  const signOut = byId('sign-out');
  signOut.hidden = !session.signedIn;
  signOut.onclick = () => {
    session.signOut();
    go('#/sign-in');
  };
}

async function route() {
  stopPolling();
  delete main.dataset.page;
  const [path = 'collections', arg] = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (!session.signedIn) {
    drawHeader();
    return signInPage(location.hash);
  }
  const page = PAGES.find((p) => p.path === path) ?? PAGES[0];
  drawHeader(page.path);
  if (page.data && kind !== 'file' && session.tenant === '') {
    return show(
      h('h1', {}, page.title),
      h('p', { class: 'muted' }, 'Choose a tenant first: '),
      h('a', { href: '#/tenants' }, 'tenants'),
    );
  }
  try {
    await page.draw(arg);
  } catch (err) {
    show(h('h1', {}, page.title), errorBox(err));
  }
  main.dataset.page = page.path;
}

/** To a page, drawn again when it is the one already named (no hashchange then). */
function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

window.addEventListener('hashchange', route);
route();
