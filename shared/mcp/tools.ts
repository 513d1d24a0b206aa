/**
 * The list of tools a fenecdb server can offer, in the order tools/list shows them. A new tool is a
 * file in tools/ and its entry here: the runner, the endpoint, the instructions, the audit, the
 * metrics, a policy's `tools` line and the servers' startup text all read this list.
 */
import type { Tool } from './tool.js';
import { forget } from './tools/forget.js';
import { query } from './tools/query.js';
import { recall } from './tools/recall.js';
import { remember } from './tools/remember.js';
import { schema } from './tools/schema.js';
import { search } from './tools/search.js';
import { write } from './tools/write.js';

export const TOOLS = Object.freeze([query, search, schema, write, remember, recall, forget] as const);

export type ToolName = (typeof TOOLS)[number]['name'];

/** Every tool's name, as a policy's `tools` line and a token's `tools` claim name them. */
export const TOOL_NAMES: readonly ToolName[] = Object.freeze(TOOLS.map((tool) => tool.name));

/**
 * The names of the tools that match, as a sentence lists them — "remember, recall and forget" —
 * for the CLI's help and startup text.
 */
export function toolNames(
  which: (tool: Tool) => boolean,
  conjunction: 'and' | 'or' = 'and',
  tools: readonly Tool[] = TOOLS,
): string {
  const names = tools.filter(which).map((tool) => tool.name);
  return names.length <= 1
    ? names.join('')
    : `${names.slice(0, -1).join(', ')} ${conjunction} ${names[names.length - 1]}`;
}

/** The tools a switch turns on. */
export const switchedBy =
  (switchName: Tool['switch']) =>
  (tool: Tool): boolean =>
    tool.switch === switchName;
