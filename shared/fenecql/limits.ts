/**
 * The limits a statement and the values bound to it are held to, so that what a request costs grows
 * with its size and nothing more: every walk over a syntax tree or a JSON value (the parser's own
 * descent, the planner, the printer, the evaluator, JSON.stringify, SQLite's expression tree) stays
 * within MAX_DEPTH levels, and a statement's text within MAX_STATEMENT_LENGTH characters.
 *
 * The checks here are loops, never recursion, so that they hold on any input they are given.
 */
import { FenecError, type Position } from '../errors.js';
import { walk, type Node } from './walk.js';

/**
 * The deepest a statement or a JSON value may nest. SQLite refuses expressions deeper than 1000 and
 * a FenecQL level becomes at most two of its levels (`not` is `NOT coalesce(…)`), with a few more
 * for a token's policy and expiry around the condition: 256 leaves room for all of them.
 */
export const MAX_DEPTH = 256;

/**
 * The most terms (fields, values, calls, operators, comparisons) one condition, or one written row's
 * values, may hold: SQLite's planning of an expression grows faster than its size (8 000 terms take
 * seconds), and a shallow tree of many terms passes the depth limit.
 */
export const MAX_TERMS = 2000;

/** The longest statement, in characters: the server's default request body. Bulk values go in params. */
export const MAX_STATEMENT_LENGTH = 1_048_576;

const DEPTH_HINT =
  'a long chain of or reads better as field in [v1, v2, …]; split a deep expression, or send nested values as params';

/** The error for a statement nesting past MAX_DEPTH at `pos`. */
export function tooDeep(pos: Position | undefined): FenecError {
  const where = pos === undefined ? '' : ` at line ${pos.line}, column ${pos.column}`;
  return new FenecError(
    'too_complex',
    `the statement nests deeper than ${MAX_DEPTH} levels${where} (each parenthesis, not, minus, call, array, object and each operator of a chain such as a + b + c is a level)`,
    { position: pos, hint: DEPTH_HINT },
  );
}

/** Refuses a statement's text past MAX_STATEMENT_LENGTH, pointing at the first character beyond it. */
export function checkStatementLength(text: string): void {
  if (text.length <= MAX_STATEMENT_LENGTH) return;
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < MAX_STATEMENT_LENGTH; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  const pos: Position = { line, column: MAX_STATEMENT_LENGTH - lineStart + 1, offset: MAX_STATEMENT_LENGTH };
  throw new FenecError(
    'too_complex',
    `the statement is ${text.length} characters long; at most ${MAX_STATEMENT_LENGTH} are taken (the excess starts at line ${pos.line}, column ${pos.column})`,
    { position: pos, hint: 'send the values as params ($1, $2, …) or split the statement' },
  );
}

/**
 * Refuses a syntax tree deeper than MAX_DEPTH, counting its nodes from the root (walk.ts), and pointing
 * at the first node found past the limit. The parser counts levels as it reads; this counts the tree it
 * built, where `a + b + c` put `a` two levels down, and where trees joined later (a policy ANDed in) must
 * be measured whole.
 */
export function checkTreeDepth(root: Node): void {
  const past = walk(root, (node, depth) => (depth > MAX_DEPTH ? node : undefined));
  if (past !== undefined) throw tooDeep('pos' in past ? past.pos : undefined);
}

interface Visit {
  readonly value: unknown;
  readonly depth: number;
  readonly parent: Visit | undefined;
  readonly key: string | number | undefined;
}

/** Where a part of a value sits: `$1[0].tags[2]`. */
function pathOf(visit: Visit, label: string): string {
  let path = '';
  for (let at: Visit | undefined = visit; at?.parent !== undefined; at = at.parent) {
    path =
      typeof at.key === 'number'
        ? `[${at.key}]${path}`
        : /^[A-Za-z_][A-Za-z0-9_]*$/.test(at.key!)
          ? `.${at.key}${path}`
          : `[${JSON.stringify(at.key)}]${path}`;
  }
  return label + path;
}

/**
 * Where `text` holds a lone UTF-16 surrogate (half of a pair, as JSON's "\ud800" writes one), or -1.
 * Such a string is not Unicode: SQLite would store bytes that are not UTF-8, which read back as three
 * U+FFFD, so a stored value would silently differ from the one written.
 */
export function loneSurrogateAt(text: string): number {
  if (text.isWellFormed()) return -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (c > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return i;
    i++;
  }
  return -1;
}

/** `\ud800`, as a message shows the surrogate at `at`. */
export function surrogateEscape(text: string, at: number): string {
  return `\\u${text.charCodeAt(at).toString(16)}`;
}

/**
 * Checks a JSON value given from outside (a parameter, a tool's argument) before anything walks it:
 * arrays and objects nested at most MAX_DEPTH deep (`too_complex`), every number finite
 * (`invalid_number`: JSON's 1e400 reads as Infinity, which no field stores), and every string and
 * key Unicode (`invalid_value`: no lone surrogate, see loneSurrogateAt).
 *
 * Only arrays and objects are kept on the walk's stack; a number or string is checked where it is
 * found. A batch of rows of 384-dim vectors holds tens of thousands of numbers per request, and
 * a record for each made this check cost as much as parsing the JSON.
 */
export function checkJsonValue(value: unknown, label: string): void {
  const root: Visit = { value, depth: 0, parent: undefined, key: undefined };
  if (typeof value === 'number') return checkNumber(value, root, label);
  if (typeof value === 'string') return checkString(value, root, label);
  if (typeof value !== 'object' || value === null) return;
  const stack: Visit[] = [nested(value, undefined, undefined, label)];
  const containers: Visit[] = [];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const item = visit.value as object;
    if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) {
        const child: unknown = item[i];
        if (typeof child === 'number') {
          if (!Number.isFinite(child))
            checkNumber(child, { value: child, depth: visit.depth, parent: visit, key: i }, label);
        } else if (typeof child === 'string') {
          if (!child.isWellFormed())
            checkString(child, { value: child, depth: visit.depth, parent: visit, key: i }, label);
        } else if (typeof child === 'object' && child !== null) {
          containers.push(nested(child, visit, i, label));
        }
      }
    } else {
      for (const key of Object.keys(item)) {
        if (!key.isWellFormed()) checkString(key, visit, label, 'has a key that holds');
        const child: unknown = (item as Record<string, unknown>)[key];
        if (typeof child === 'number') {
          if (!Number.isFinite(child))
            checkNumber(child, { value: child, depth: visit.depth, parent: visit, key }, label);
        } else if (typeof child === 'string') {
          if (!child.isWellFormed())
            checkString(child, { value: child, depth: visit.depth, parent: visit, key }, label);
        } else if (typeof child === 'object' && child !== null) {
          containers.push(nested(child, visit, key, label));
        }
      }
    }
    // Visited in their order: pushed last to first.
    while (containers.length > 0) stack.push(containers.pop()!);
  }
}

/** An array or object found at `key` of `parent`, refused past MAX_DEPTH levels. */
function nested(value: object, parent: Visit | undefined, key: string | number | undefined, label: string): Visit {
  const visit: Visit = { value, depth: (parent?.depth ?? 0) + 1, parent, key };
  if (visit.depth > MAX_DEPTH) {
    throw new FenecError(
      'too_complex',
      `${pathOf(visit, label)} nests deeper than ${MAX_DEPTH} levels of arrays and objects`,
      {
        hint: `flatten the value: at most ${MAX_DEPTH} levels of arrays and objects are taken`,
      },
    );
  }
  return visit;
}

/** A string at `visit` (or, `has a key that holds`, a key of the object there), refused when it is not Unicode. */
function checkString(value: string, visit: Visit, label: string, what = 'holds'): void {
  const at = loneSurrogateAt(value);
  if (at < 0) return;
  throw new FenecError(
    'invalid_value',
    `${pathOf(visit, label)} ${what} a lone surrogate (${surrogateEscape(value, at)}) at character ${at}: text must be valid Unicode`,
    {
      hint: 'a character past U+FFFF is written as a pair (\\ud83d\\ude00 is 😀); send the pair, or the character itself',
    },
  );
}

function checkNumber(value: number, visit: Visit, label: string): void {
  if (Number.isFinite(value)) return;
  throw new FenecError(
    'invalid_number',
    `${pathOf(visit, label)} is a number beyond the range of a double (±1.8e308)`,
    {
      hint: 'send a number between -1.7976931348623157e308 and 1.7976931348623157e308',
    },
  );
}
