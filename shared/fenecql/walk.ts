/**
 * The one walk over a FenecQL tree: a table of each node kind's children, and `walk`, which visits
 * them with a stack of its own (never recursion), so that it holds on a tree of any depth or size.
 *
 * The table is keyed by every `kind` of the AST's expressions, conditions and statements: a new kind
 * does not compile until its row says where its children are (as graphql-js's QueryDocumentKeys); a
 * statement kind's row is its `children` in the statement kinds' table (kinds.ts).
 * Whatever searches a tree (its parameters, its depth, whether it is a value) asks `walk`, rather
 * than writing a recursion over the kinds again.
 */
import type { Node, StatementKind } from './ast.js';
import { STATEMENT_KINDS } from './kinds.js';

export type { Node };
export type NodeKind = Node['kind'];

type ChildTable = {
  readonly [K in NodeKind]: (node: Extract<Node, { kind: K }>) => readonly (Node | undefined)[];
};

/**
 * The statements' rows, read from the statement kinds' table (kinds.ts), where a kind's children are
 * one of its columns: that table already refuses to compile without a row for each statement kind.
 */
const STATEMENT_CHILDREN = Object.fromEntries(
  Object.entries(STATEMENT_KINDS).map(([kind, info]) => [kind, info.children]),
) as unknown as Pick<ChildTable, StatementKind>;

const NONE: readonly Node[] = [];
const none = (): readonly Node[] => NONE;
const pair = (node: { readonly left: Node; readonly right: Node }): readonly Node[] => [node.left, node.right];
const operand = (node: { readonly operand: Node }): readonly Node[] => [node.operand];

/** Each kind's children, in the order the statement writes them (undefined: a clause left out). */
export const CHILDREN: ChildTable = {
  // Expressions
  Literal: none,
  Param: none,
  Jwt: none,
  Field: none,
  Array: (node) => node.items,
  Object: (node) => node.entries.map((entry) => entry.value),
  Call: (node) => node.args,
  Binary: pair,
  Negate: operand,
  // Conditions
  And: pair,
  Or: pair,
  Not: operand,
  Compare: pair,
  Has: pair,
  In: pair,
  IsNull: operand,
  Like: operand,
  Truth: (node) => [node.expr],
  // Statements: each kind's row of the statement kinds' table says where its children are.
  ...STATEMENT_CHILDREN,
};

/** The children of a node, as the table lists them. */
export function childrenOf(node: Node): readonly (Node | undefined)[] {
  // The row for node.kind takes exactly that kind of node (ChildTable says so); TypeScript cannot follow the index.
  return (CHILDREN[node.kind] as (node: Node) => readonly (Node | undefined)[])(node);
}

/** A visitor's answer that walks on but not below the node it was given. */
export const SKIP: unique symbol = Symbol('skip');

/**
 * Visits `root` and every node below it, each before its children and those in the table's order,
 * with its depth (the root's is 1). The visitor answers undefined to walk on, SKIP to leave out what is
 * below the node, or a value, which ends the walk and is its answer; undefined when none answered.
 */
export function walk<T>(root: Node, visit: (node: Node, depth: number) => T | typeof SKIP | undefined): T | undefined {
  const nodes: Node[] = [root];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    const answer = visit(node, depth);
    if (answer === SKIP) continue;
    if (answer !== undefined) return answer;
    const children = childrenOf(node);
    // Pushed last to first, so that they are visited first to last.
    for (let i = children.length - 1; i >= 0; i--) {
      const child = children[i];
      if (child === undefined) continue;
      nodes.push(child);
      depths.push(depth + 1);
    }
  }
  return undefined;
}

/** The index of the first `$N` below `root` (in the order written), or undefined when it has none. */
export function firstParam(root: Node): number | undefined {
  return walk(root, (node) => (node.kind === 'Param' ? node.index : undefined));
}

/** The highest `$N` below `root`, or 0 when it has none. */
export function highestParam(root: Node): number {
  let highest = 0;
  walk(root, (node) => {
    if (node.kind === 'Param' && node.index > highest) highest = node.index;
  });
  return highest;
}
