/**
 * Every policy file shown in docs/ (each ```policy block) is read as the server reads --policy: a
 * block the parser refuses is a page that lies. What the blocks grant is run against real servers by
 * the tests that read them (test/integration/mcp/agents.test.ts).
 */
import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { parsePolicy } from '../../shared/auth/policy.js';
import { DOCS, policyBlocks } from './policy-blocks.js';

describe('the policy files in docs/', () => {
  const pages = readdirSync(DOCS).filter((name) => name.endsWith('.md'));
  const found = pages.flatMap((page) => policyBlocks(page).map((block) => ({ page, ...block })));

  it('has policy blocks on security.md and agents-and-mcp.md', () => {
    expect(new Set(found.map((b) => b.page))).to.include.keys('security.md', 'agents-and-mcp.md');
  });

  for (const block of found) {
    it(`${block.page}:${block.line} reads as a policy`, () => {
      const policy = parsePolicy(block.text, `${block.page}:${block.line}`);
      expect(policy.rules.size + (policy.tools === undefined ? 0 : 1)).to.be.above(0);
    });
  }
});
