/**
 * Row policies: which collections a JSON Web Token reaches, with which grants, and the condition
 * every row it reads or writes must meet.
 *
 * A policy file holds lines `COLLECTION GRANTS [where COND]`, e.g.
 * `memories  read,write  where owner = $jwt.sub`; `#` starts a comment.
 */
import type { Cond } from '../fenecql/ast.js';

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
