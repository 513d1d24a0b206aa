/**
 * Row policies: which collections a JSON Web Token reaches, with which grants, and the condition
 * every row it reads or writes must meet.
 *
 * A policy file holds lines `COLLECTION GRANTS [where COND]`, e.g.
 * `memories  read,write  where owner = $jwt.sub`; `#` starts a comment.
 */
import type { Cond, Expr } from '../fenecql/ast.js';
import { isName } from '../fenecql/lexer.js';
import { parseCondition } from '../fenecql/parser.js';
import { FenecError } from '../errors.js';

export interface PolicyRule {
  readonly collection: string;
  readonly read: boolean;
  readonly write: boolean;
  /** ANDed into every statement the token runs on the collection; `$jwt.NAME` binds the token's claims. */
  readonly where: Cond | undefined;
  /** Where the rule was written, for messages: `policy.txt:3`. */
  readonly source: string;
}

export interface Policy {
  /** By collection name. A collection without a rule is invisible to a token held to the policy. */
  readonly rules: ReadonlyMap<string, PolicyRule>;
}

/** The policy of a JWT on a server started without `--policy`: it names no collection, so reaches none. */
export const EMPTY_POLICY: Policy = Object.freeze({ rules: new Map<string, PolicyRule>() });

/** `COLLECTION GRANTS` and what follows: blanks between them, GRANTS a list of words and commas. */
const LINE = /^(\S+)[ \t]+([A-Za-z]+(?:[ \t]*,[ \t]*[A-Za-z]+)*)(?:[ \t]+(.*?))?[ \t]*$/;
const GRANTS = 'read, write or read,write';

/**
 * Reads a policy file's text: one rule per line, `COLLECTION GRANTS [where COND]`, blank lines and
 * `#` comments (outside string literals) skipped. GRANTS is `read`, `write`, or both separated by a
 * comma; COND is a FenecQL condition parsed on its own, in which `$jwt.NAME` names a claim of the
 * token (bound as a value, never as text) and `$1`… are refused (a request's params must not
 * choose its own policy).
 *
 * @param source how messages name the file, e.g. `policy.txt`; a rule's `source` is `policy.txt:3`.
 * @throws FenecError `invalid_option` naming the file and line: `policy.txt:3: …`.
 */
export function parsePolicy(text: string, source: string): Policy {
  const rules = new Map<string, PolicyRule>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const where = `${source}:${i + 1}`;
    const line = withoutComment(lines[i]!);
    if (line.trim() === '') continue;
    const rule = parseRule(line, where);
    const earlier = rules.get(rule.collection);
    if (earlier !== undefined) {
      throw new FenecError('invalid_option', `${where}: collection ${rule.collection} has a rule already, at ${earlier.source}`, {
        hint: 'give each collection one line; join conditions with and/or',
      });
    }
    rules.set(rule.collection, rule);
  }
  return Object.freeze({ rules });
}

function parseRule(line: string, where: string): PolicyRule {
  const match = LINE.exec(line.trim());
  if (match === null) {
    throw lineError(where, `expected COLLECTION GRANTS [where COND], e.g. "memories read,write where owner = $jwt.sub", found ${show(line.trim())}`);
  }
  const [, collection, grantText, rest] = match as unknown as [string, string, string, string | undefined];
  if (!isName(collection) || collection.startsWith('_')) {
    throw lineError(where, `expected a collection name (letters, digits and _, not starting with _, at most 64), found ${show(collection)}`);
  }
  const grants = new Set<string>();
  for (const grant of grantText.split(',').map((word) => word.trim().toLowerCase())) {
    if (grant !== 'read' && grant !== 'write') throw lineError(where, `expected grants ${GRANTS}, found ${show(grant)}`);
    if (grants.has(grant)) throw lineError(where, `grant ${grant} is named twice`);
    grants.add(grant);
  }
  return Object.freeze({
    collection,
    read: grants.has('read'),
    write: grants.has('write'),
    where: rest === undefined ? undefined : parseWhere(rest, line, where),
    source: where,
  });
}

/** `where COND`, its errors placed in the line (column counted from the line's start). */
function parseWhere(rest: string, line: string, where: string): Cond {
  const keyword = /^where\b\s*/i.exec(rest);
  if (keyword === null) throw lineError(where, `expected where COND or the end of the line after the grants, found ${show(rest)}`);
  const condText = rest.slice(keyword[0].length);
  if (condText.trim() === '') throw lineError(where, 'expected a condition after where');
  const start = line.lastIndexOf(rest) + keyword[0].length;
  let cond: Cond;
  try {
    cond = parseCondition(condText);
  } catch (err) {
    if (!(err instanceof FenecError)) throw err;
    const column = err.position === undefined || err.position.line !== 1 ? undefined : start + err.position.column;
    const message = err.message.replace(/ at line \d+, column \d+$/, '');
    throw lineError(column === undefined ? where : `${where}:${column}`, message, err);
  }
  const param = findParam(cond);
  if (param !== undefined) {
    throw lineError(where, `a policy's condition takes claims ($jwt.sub) and literals, not $${param}: a request's params must not choose its policy`);
  }
  return cond;
}

/** The index of the first `$N` in a condition, if any. */
function findParam(cond: Cond): number | undefined {
  switch (cond.kind) {
    case 'And':
    case 'Or':
      return findParam(cond.left) ?? findParam(cond.right);
    case 'Not':
      return findParam(cond.operand);
    case 'Compare':
    case 'Has':
    case 'In':
      return paramIn(cond.left) ?? paramIn(cond.right);
    case 'IsNull':
    case 'Like':
      return paramIn(cond.operand);
    case 'Truth':
      return paramIn(cond.expr);
    default: {
      const never: never = cond;
      return never;
    }
  }
}

function paramIn(expr: Expr): number | undefined {
  switch (expr.kind) {
    case 'Param':
      return expr.index;
    case 'Literal':
    case 'Jwt':
    case 'Field':
      return undefined;
    case 'Array':
      return first(expr.items.map(paramIn));
    case 'Object':
      return first(expr.entries.map((entry) => paramIn(entry.value)));
    case 'Call':
      return first(expr.args.map(paramIn));
    case 'Binary':
      return paramIn(expr.left) ?? paramIn(expr.right);
    case 'Negate':
      return paramIn(expr.operand);
    default: {
      const never: never = expr;
      return never;
    }
  }
}

function first(values: ReadonlyArray<number | undefined>): number | undefined {
  return values.find((value) => value !== undefined);
}

/** The line up to its first `#` outside a string literal. */
function withoutComment(line: string): string {
  let inString = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '#') return line.slice(0, i);
  }
  return line;
}

function lineError(where: string, message: string, cause?: unknown): FenecError {
  return new FenecError('invalid_option', `${where}: ${message}`, cause === undefined ? {} : { cause });
}

function show(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}
