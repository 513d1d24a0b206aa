/**
 * The ```policy blocks of docs/ pages, for policy-blocks.test.ts and the tests that run what they grant. A module of
 * its own: a test file that another test file imports runs its tests in both when each file has a fresh mocha
 * (make test's parallel pass).
 */
import { readFileSync } from 'node:fs';

export const DOCS = new URL('../../../docs/', import.meta.url);

/** The ```policy blocks of a page, with the line each starts on. */
export function policyBlocks(page: string): { line: number; text: string }[] {
  const text = readFileSync(new URL(page, DOCS), 'utf8');
  const blocks: { line: number; text: string }[] = [];
  const pattern = /^```policy\n([\s\S]*?)^```$/gm;
  for (let match = pattern.exec(text); match !== null; match = pattern.exec(text)) {
    blocks.push({ line: text.slice(0, match.index).split('\n').length, text: match[1]! });
  }
  return blocks;
}
