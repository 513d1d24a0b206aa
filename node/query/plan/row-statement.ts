/**
 * Row statements (get, insert, put, set, del) into plans, each by its planner (read.ts, write.ts):
 * SQL text with the sources of its arguments, checked against the collection's fields. A plan is
 * made once per statement text and schema version, and run many times with different params.
 */
import type { Cond } from '../../../shared/fenecql/ast.js';
import { unreachable, type RowStatement } from '../../../shared/fenecql/kinds.js';
import type { Catalog } from '../../schema/catalog.js';
import { planGet } from './read.js';
import type { Plan } from './plan-types.js';
import { planDel, planInsert, planPut, planSet, policyCheck } from './write.js';

/**
 * A row statement's plan. `policy` is the condition of the token's policy rule for the collection: it
 * is ANDed into what the statement reads, sets and deletes, fills the fields it pins in the rows a
 * write leaves them out of, and the rows written must meet it.
 */
export function plan(stmt: RowStatement, catalog: Catalog, policy?: Cond): Plan {
  const collection = catalog.require(stmt.collection);
  const check = policy === undefined ? undefined : policyCheck(collection, policy);
  switch (stmt.kind) {
    case 'Get':
      return planGet(stmt, collection, policy);
    case 'Insert':
      return planInsert(stmt, collection, policy, check);
    case 'Put':
      return planPut(stmt, collection, policy, check);
    case 'Set':
      return planSet(stmt, collection, policy, check);
    case 'Del':
      return planDel(stmt, collection, policy);
    default:
      return unreachable(stmt);
  }
}
