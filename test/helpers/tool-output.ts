/**
 * A tool's answer held to the output schema tools/list shows for it: validated as the SDK's client
 * validates structuredContent (its own ajv validator), and every key it answers named there, so
 * that a key the schema does not list (a note, a cursor) fails the test that meets it.
 */
import { expect } from 'chai';
import type { JsonSchemaType } from '@modelcontextprotocol/sdk/validation';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { ToolDefinition } from '../../shared/mcp/tool.js';
import { TOOLS } from '../../shared/mcp/tools.js';

const VALIDATOR = new AjvJsonSchemaValidator();
const checkers = new Map<ToolDefinition['outputSchema'], (value: unknown) => string | undefined>();

/** The output schema of a tool of the list (the same on every server: only descriptions name the memory collection). */
function outputSchemaOf(name: string): ToolDefinition['outputSchema'] {
  const tool = TOOLS.find((t) => t.name === name);
  if (tool === undefined) throw new Error(`no tool ${name} in the list`);
  return tool.define({ write: true, memory: 'memories', readOnly: false }).outputSchema;
}

/**
 * Checks an answer (structuredContent of a result that is not isError) against its tool's output schema: the tool's
 * name for one of the list, or a definition for another.
 */
export function expectFitsOutputSchema(tool: string | ToolDefinition, structuredContent: unknown): void {
  const schema = typeof tool === 'string' ? outputSchemaOf(tool) : tool.outputSchema;
  const name = typeof tool === 'string' ? tool : tool.name;
  let check = checkers.get(schema);
  if (check === undefined) {
    // The output schemas are JSON Schema objects; the validator's type spells out every keyword's.
    const validate = VALIDATOR.getValidator(schema as JsonSchemaType);
    check = (value) => validate(value).errorMessage;
    checkers.set(schema, check);
  }
  expect(check(structuredContent), `${name}'s answer against its outputSchema`).to.equal(undefined);
  const listed = Object.keys(schema.properties ?? {});
  expect(
    Object.keys(structuredContent as object).filter((key) => !listed.includes(key)),
    `${name} answers keys its outputSchema does not list`,
  ).to.deep.equal([]);
}
