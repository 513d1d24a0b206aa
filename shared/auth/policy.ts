/**
 * Row policies: which collections a JSON Web Token reaches, with which grants, and the condition
 * every row it reads or writes must meet.
 *
 * A policy file holds lines `COLLECTION GRANTS [where COND]`, e.g.
 * `memories  read,write  where owner = $jwt.sub`, and at most one `tools NAME, …` line: the MCP tools
 * a token may see and call. `#` starts a comment.
 */
import type { Cond } from '../fenecql/ast.js';
import { isName } from '../fenecql/lexer.js';
import { parseCondition } from '../fenecql/parser.js';
import { firstParam } from '../fenecql/walk.js';
import { FenecError } from '../errors.js';
import { TOOL_NAMES } from '../mcp/tools.js';

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
  /** The `tools` line: the MCP tools any token held to the policy may see and call; undefined for all. */
  readonly tools?: ReadonlySet<string>;
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
  let tools: { names: ReadonlySet<string>; source: string } | undefined;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const where = `${source}:${i + 1}`;
    const line = withoutComment(lines[i]!);
    if (line.trim() === '') continue;
    const names = toolsLine(line, where);
    if (names !== undefined) {
      if (tools !== undefined) throw lineError(where, `the tools line is given already, at ${tools.source}`);
      tools = { names, source: where };
      continue;
    }
    const rule = parseRule(line, where);
    const earlier = rules.get(rule.collection);
    if (earlier !== undefined) {
      throw new FenecError(
        'invalid_option',
        `${where}: collection ${rule.collection} has a rule already, at ${earlier.source}`,
        {
          hint: 'give each collection one line; join conditions with and/or',
        },
      );
    }
    rules.set(rule.collection, rule);
  }
  return Object.freeze(tools === undefined ? { rules } : { rules, tools: tools.names });
}

const TOOLS_LINE = /^tools(?:[ \t]+(.*?))?[ \t]*$/;

/**
 * `tools NAME, NAME, …`: the tools line, its names checked; undefined for any other line. A line
 * `tools read,write …` is the rule of a collection named tools: no tool is called read or write.
 */
function toolsLine(line: string, where: string): ReadonlySet<string> | undefined {
  const match = TOOLS_LINE.exec(line.trim());
  if (match === null) return undefined;
  const words = (match[1] ?? '').split(',').map((word) => word.trim());
  if (words.length > 0 && words.every((word) => /^(read|write)$/i.test(word.split(/[ \t]/)[0]!))) return undefined;
  if (words.length === 1 && words[0] === '')
    throw lineError(
      where,
      `expected the tools after tools, e.g. "tools search, recall" (${TOOL_NAMES.join(', ')}); none, for no tool at all`,
    );
  const names = new Set<string>();
  for (const word of words) {
    if (word === 'none' && words.length === 1) break;
    if (!(TOOL_NAMES as readonly string[]).includes(word)) {
      throw lineError(
        where,
        `expected a tool (${TOOL_NAMES.join(', ')}), found ${show(word)}`,
        undefined,
        'separate the tools with commas: tools search, recall',
      );
    }
    if (names.has(word)) throw lineError(where, `tool ${word} is named twice`);
    names.add(word);
  }
  return Object.freeze(names);
}

function parseRule(line: string, where: string): PolicyRule {
  const match = LINE.exec(line.trim());
  if (match === null) {
    throw lineError(
      where,
      `expected COLLECTION GRANTS [where COND], e.g. "memories read,write where owner = $jwt.sub", found ${show(line.trim())}`,
    );
  }
  const [, collection, grantText, rest] = match as unknown as [string, string, string, string | undefined];
  if (!isName(collection) || collection.startsWith('_')) {
    throw lineError(
      where,
      `expected a collection name (letters, digits and _, not starting with _, at most 64), found ${show(collection)}`,
    );
  }
  const grants = new Set<string>();
  for (const grant of grantText.split(',').map((word) => word.trim().toLowerCase())) {
    if (grant !== 'read' && grant !== 'write')
      throw lineError(where, `expected grants ${GRANTS}, found ${show(grant)}`);
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
  if (keyword === null)
    throw lineError(where, `expected where COND or the end of the line after the grants, found ${show(rest)}`);
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
  const param = firstParam(cond);
  if (param !== undefined) {
    throw lineError(
      where,
      `a policy's condition takes claims ($jwt.sub) and literals, not $${param}: a request's params must not choose its policy`,
    );
  }
  return cond;
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

function lineError(where: string, message: string, cause?: unknown, hint?: string): FenecError {
  return new FenecError('invalid_option', `${where}: ${message}`, {
    ...(cause === undefined ? {} : { cause }),
    ...(hint === undefined ? {} : { hint }),
  });
}

function show(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}

/**
 * The MCP tools a token held to this policy may see and call: the policy's `tools` line, narrowed to
 * the token's `tools` claim (an array of tool names) when it has one; undefined for every tool. A
 * `tools` claim that is not an array of names grants no tool: a token is never given more than it
 * says.
 */
export function grantedTools(
  policy: Policy,
  claims: Readonly<Record<string, unknown>>,
): ReadonlySet<string> | undefined {
  const claim = claims.tools;
  if (claim === undefined) return policy.tools;
  if (!Array.isArray(claim) || !claim.every((name) => typeof name === 'string')) return new Set();
  const named = new Set(claim as string[]);
  return policy.tools === undefined ? named : new Set([...policy.tools].filter((name) => named.has(name)));
}
