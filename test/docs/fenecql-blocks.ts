/**
 * The FenecQL examples of a docs page: every ```fenecql block, split into statements, each with what
 * its trailing comment says it answers.
 *
 * A statement starts on a line that starts with a letter; lines that start otherwise (indented, or a
 * closing `)` or `]`) continue it. Its comment is `-- [params: JSON] (→ JSON | ✗ CODE | ✓ JSON)`:
 * → the whole answer POST /query sends, ✗ the code it is refused with, ✓ the answer but for its figures
 * (see figureless). The one value no page can show as sent is a page's `next_cursor`, signed with a key
 * the server makes at start: a page shows it as "…", and the test checks that the server sent one there.
 */

/** Keys whose values are figures that vary from run to run: scores and file sizes. */
const FIGURES = new Set(['_score', 'bytes_before', 'bytes_after']);
const CURSOR = new Set(['next_cursor']);

/** An answer with every figure replaced by "…", so that two answers compare on everything else. */
export function figureless(answer: unknown): unknown {
  return replaced(answer, FIGURES);
}

/** An answer as a page shows it: a `next_cursor` as "…", everything else as sent. */
export function asShown(answer: unknown): unknown {
  return replaced(answer, CURSOR);
}

function replaced(answer: unknown, keys: ReadonlySet<string>): unknown {
  if (Array.isArray(answer)) return answer.map((value) => replaced(value, keys));
  if (answer !== null && typeof answer === 'object') {
    return Object.fromEntries(
      Object.entries(answer).map(([key, value]) => [key, keys.has(key) ? '…' : replaced(value, keys)]),
    );
  }
  return answer;
}

export interface Example {
  readonly page: string;
  readonly line: number;
  readonly statement: string;
  readonly params: unknown[];
  readonly expect:
    | { readonly kind: 'answer'; readonly answer: unknown }
    | { readonly kind: 'shape'; readonly answer: unknown }
    | { readonly kind: 'error'; readonly code: string }
    | { readonly kind: 'ok' };
}

const EXPECTATION = /--\s*(?:params:\s*(\[.*?\])\s*)?(→|✗|✓)\s*(.+)$/;

function parseExample(page: string, line: number, text: string): Example {
  const match = EXPECTATION.exec(text);
  if (match === null) return { page, line, statement: text, params: [], expect: { kind: 'ok' } };
  const [, params, mark, rest] = match as unknown as [string, string | undefined, string, string];
  const statement = text.slice(0, match.index).trimEnd();
  const parsedParams = params === undefined ? [] : (JSON.parse(params) as unknown[]);
  if (mark === '✗') return { page, line, statement, params: parsedParams, expect: { kind: 'error', code: rest.trim() } };
  const answer = JSON.parse(rest) as Record<string, unknown>;
  if (mark === '✓') return { page, line, statement, params: parsedParams, expect: { kind: 'shape', answer } };
  return { page, line, statement, params: parsedParams, expect: { kind: 'answer', answer } };
}

export function fenecqlExamples(page: string, markdown: string): Example[] {
  const examples: Example[] = [];
  const lines = markdown.split('\n');
  let inBlock = false;
  let current: { line: number; text: string[] } | undefined;
  const flush = () => {
    if (current !== undefined) examples.push(parseExample(page, current.line, current.text.join('\n')));
    current = undefined;
  };
  lines.forEach((text, index) => {
    if (/^```fenecql\s*$/.test(text)) {
      inBlock = true;
      return;
    }
    if (!inBlock) return;
    if (/^```/.test(text)) {
      flush();
      inBlock = false;
      return;
    }
    if (text.trim() === '' || /^\s*--/.test(text)) return;
    if (/^[A-Za-z]/.test(text)) {
      flush();
      current = { line: index + 1, text: [text] };
    } else if (current !== undefined) {
      current.text.push(text);
    }
  });
  return examples;
}
