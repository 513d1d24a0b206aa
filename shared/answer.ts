/**
 * What a statement answers: a JSON object (`rows` and `count`, `ids`, `created`, …), as fenecql.md
 * writes each statement's answer. One type for every door: the database, /query, the MCP tools.
 */
export type Answer = { readonly [key: string]: unknown };
