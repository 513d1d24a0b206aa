/**
 * Which statements the audit records as schema changes, told from a statement's text without
 * parsing every request: only a text whose first word (after blanks and `--` comments, as the
 * lexer skips them) is create, drop, alter or compact is parsed again, once it has run.
 */
import type { SchemaChange } from '../../shared/audit.js';
import { parseStatement } from '../../shared/fenecql/parser.js';

const SCHEMA_WORD = /^(?:[ \t\r\n]|--[^\n]*(?:\n|$))*(?:create|drop|alter|compact)(?![A-Za-z0-9_])/i;

export interface SchemaEvent {
  readonly statement: SchemaChange;
  /** The collection it changed; null for a compact of the whole file. */
  readonly collection: string | null;
}

/** Cheap: could the text be a schema change? False for every row statement (and `schema`). */
export function mayChangeSchema(text: string): boolean {
  return SCHEMA_WORD.test(text);
}

/** The schema change a statement that ran made, or undefined when it is no schema change. */
export function schemaChangeOf(text: string): SchemaEvent | undefined {
  if (!mayChangeSchema(text)) return undefined;
  const statement = parseStatement(text);
  switch (statement.kind) {
    case 'CreateCollection':
      return { statement: 'create', collection: statement.name };
    case 'DropCollection':
      return { statement: 'drop', collection: statement.name };
    case 'AlterAdd':
      return { statement: 'alter add', collection: statement.collection };
    case 'AlterDrop':
      return { statement: 'alter drop', collection: statement.collection };
    case 'Compact':
      return { statement: 'compact', collection: statement.collection ?? null };
    default:
      return undefined;
  }
}
