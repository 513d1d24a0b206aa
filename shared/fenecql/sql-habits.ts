/**
 * Hints for SQL written where FenecQL was meant. Models (and people) write SQL out of habit:
 * `select * from notes`, `title == "x"`, `LIMIT 10, 20`, `ORDER BY year DESC`. The parser's
 * message says what it expected where it stopped; the hint names the FenecQL that was meant.
 *
 * Asked only once a statement or condition failed to parse, so that a habit never changes what a
 * valid statement means. Each test looks at the refused text around the error's position, with
 * bounded, linear regular expressions (no nested quantifiers): the text can be a request's whole body.
 */
import { FenecError } from '../errors.js';

/** How much of a statement the select … from rewrite reads. */
const MAX_SCAN = 1000;
/** Longest piece of the statement a suggestion repeats. */
const MAX_QUOTE = 120;

/** The error with a hint naming the FenecQL meant, when the text shows a SQL habit; else the error itself. */
export function withSqlHint(text: string, error: FenecError): FenecError {
  if (error.hint !== undefined || error.position === undefined) return error;
  const hint = sqlHint(text, error);
  if (hint === undefined) return error;
  return new FenecError(error.code, error.message, { hint, position: error.position, cause: error.cause });
}

function sqlHint(text: string, error: FenecError): string | undefined {
  const at = error.position!.offset;
  const before = text.slice(Math.max(0, at - 200), at);
  const here = text.slice(at, at + 2);
  const after = text.slice(at, at + 40);
  const first = /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toLowerCase();

  // Statements SQL names otherwise: only when the refusal is at that first word.
  if (at === text.length - text.trimStart().length && first !== undefined) {
    const statement = statementHint(text, first);
    if (statement !== undefined) return statement;
  }
  if (error.code === 'invalid_character') {
    if (here[0] === "'") return "strings take double quotes in FenecQL, as JSON's do: title = \"x\", not 'x'";
    if (here === '&&') return 'FenecQL joins tests with and: a = 1 and b = 2';
    if (here === '||') return 'FenecQL joins alternatives with or: a = 1 or b = 2';
    return undefined;
  }
  if (/=\s*$/.test(before) && here[0] === '=') return 'FenecQL compares with one "=": title = "x", not title == "x"';
  if (/<\s*$/.test(before) && here[0] === '>')
    return 'FenecQL writes "not equal" as !=: year != 2024, not year <> 2024';
  if (/\border\s+by\s+\S*\s*$/i.test(before))
    return 'FenecQL writes order without "by": order year desc, title (asc is the default)';
  if (/^group\s+by\b/i.test(after))
    return "FenecQL has no group by; count one group's rows with get notes where year = 2024 count";
  if (/\binsert\s+into\s+\S+\s*$/i.test(before) && here[0] === '(')
    return 'insert takes an object per row: insert into notes {title: "x", year: 2025}';
  const limit = /\blimit\s+(\d+|\$\d+)\s*$/i.exec(before);
  if (limit !== null && here[0] === ',') {
    const take = /^,\s*(\d+|\$\d+)/.exec(after)?.[1] ?? 'N';
    return `FenecQL writes limit N offset M: limit ${take} offset ${limit[1]} (SQL's LIMIT ${limit[1]}, ${take} skips ${limit[1]} rows and takes ${take})`;
  }
  if (/\bin\s*\([^()]*$/i.test(before))
    return 'in takes an array: year in [2024, 2025], or a parameter holding one (in $1)';
  if (/\bcount\s*$/i.test(before) && here[0] === '(')
    return 'FenecQL counts with a clause at the end: get notes where year = 2024 count';
  return undefined;
}

/** `select … from`, `update`, `delete from`, `insert … values`: the FenecQL statement that does it. */
function statementHint(text: string, first: string): string | undefined {
  switch (first) {
    case 'select': {
      // Found in steps, not by one pattern: `select\s+(.*?)\s+from` backtracks cubically on spaces.
      const head = text.slice(0, MAX_SCAN);
      const from = /\sfrom\s+([A-Za-z_][A-Za-z0-9_]*)/i.exec(head);
      if (from === null)
        return 'FenecQL reads with get: get notes select title, year where year > 2024 order year desc limit 10';
      const fields = head.slice(head.toLowerCase().indexOf('select') + 'select'.length, from.index).trim();
      const rest = head
        .slice(from.index + from[0].length)
        .split(';', 1)[0]!
        .replace(/\border\s+by\b/gi, 'order')
        .trim();
      const select = fields === '*' || fields === '' ? '' : ` select ${fields}`;
      return `FenecQL reads with get, the collection first: ${quote(`get ${from[1]}${select}${rest === '' ? '' : ` ${rest}`}`)}`;
    }
    case 'update':
      return 'FenecQL changes rows with set: set notes {title: "x"} where id = 7';
    case 'delete':
      return 'FenecQL deletes rows with del: del notes where id = 7';
    case 'upsert':
    case 'replace':
      return 'FenecQL writes a whole row by id with put: put notes {id: 7, title: "x"}';
    case 'show':
    case 'describe':
      return "schema lists the collections, and schema notes one collection's fields";
  }
  return undefined;
}

function quote(statement: string): string {
  return statement.length > MAX_QUOTE ? `${statement.slice(0, MAX_QUOTE)}…` : statement;
}
