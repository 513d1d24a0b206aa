import { expect } from 'chai';
import type { Cond, Expr } from '../../../shared/fenecql/ast.js';
import { parseCondition, parseStatement } from '../../../shared/fenecql/parser.js';
import {
  CHILDREN,
  childrenOf,
  firstParam,
  highestParam,
  SKIP,
  walk,
  type Node,
  type NodeKind,
} from '../../../shared/fenecql/walk.js';

/** A statement or condition holding each kind at least once: a Record, so a new kind needs one here. */
const SAMPLES: Readonly<Record<NodeKind, string>> = {
  Literal: 'get c where a = 1',
  Param: 'get c where a = $1',
  Jwt: 'get c where a = $jwt.sub',
  Field: 'get c where a = 1',
  Array: 'get c where a in [1, 2]',
  Object: 'insert into c {a: {b: 1}}',
  Call: 'get c where len(a) = 1',
  Binary: 'get c where a + 1 = 2',
  Negate: 'get c where -a = 1',
  And: 'get c where a = 1 and b = 2',
  Or: 'get c where a = 1 or b = 2',
  Not: 'get c where not a = 1',
  Compare: 'get c where a = 1',
  Has: 'get c where a has 1',
  In: 'get c where a in [1]',
  IsNull: 'get c where a is null',
  Like: 'get c where a like "x%"',
  Truth: 'get c where a',
  CreateCollection: 'create collection c (a int default 1 + 1)',
  DropCollection: 'drop collection c',
  AlterAdd: 'alter collection c add a int default 2',
  AlterDrop: 'alter collection c drop a',
  AlterEmbed: 'alter collection c embed v',
  Insert: 'insert into c [{a: 1}]',
  Put: 'put c {id: 1, a: $1}',
  Set: 'set c {a: 1} where id = $1',
  Del: 'del c where id = 1',
  Get: 'get c match b $1 where a = $2 limit $3 offset $4',
  Schema: 'schema',
  Compact: 'compact',
  Explain: 'explain get c where a = $1',
};

/** Every object with a `kind` anywhere in a tree, found by reading every property (not through the table). */
function everyKind(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((item) => everyKind(item, found));
  else if (typeof value === 'object' && value !== null) {
    const node = value as Record<string, unknown>;
    // A field's type and annotations are data of its definition, not nodes with children.
    if (typeof node.kind === 'string' && node.kind in CHILDREN) found.push(node.kind);
    for (const [key, child] of Object.entries(node))
      if (key !== 'type' && key !== 'annotations') everyKind(child, found);
  }
  return found;
}

function walked(root: Node): string[] {
  const kinds: string[] = [];
  walk(root, (node) => {
    kinds.push(node.kind);
  });
  return kinds;
}

describe('the tree walk (shared/fenecql/walk.ts)', () => {
  it('has a row for every kind, and reaches every node of a tree, as reading all its properties finds them', () => {
    expect(Object.keys(CHILDREN).sort()).to.deep.equal(Object.keys(SAMPLES).sort());
    for (const [kind, text] of Object.entries(SAMPLES)) {
      const tree = parseStatement(text);
      const reached = walked(tree);
      expect(reached, text).to.include(kind);
      expect([...reached].sort(), text).to.deep.equal(everyKind(tree).sort());
    }
  });

  it('visits a node before its children, in the order written, with its depth', () => {
    const seen: string[] = [];
    walk(parseCondition('a = $1 or not b > $2'), (node, depth) => {
      seen.push(`${node.kind}@${depth}`);
    });
    expect(seen).to.deep.equal(['Or@1', 'Compare@2', 'Field@3', 'Param@3', 'Not@2', 'Compare@3', 'Field@4', 'Param@4']);
  });

  it('leaves out what is below a node its visitor skips, and stops at the first answer', () => {
    const tree = parseCondition('(a = $1 or b = $2) and c = $3');
    const params: number[] = [];
    walk(tree, (node) => {
      if (node.kind === 'Or') return SKIP;
      if (node.kind === 'Param') params.push(node.index);
      return undefined;
    });
    expect(params).to.deep.equal([3]);
    expect(walk(tree, (node) => (node.kind === 'Param' ? node.index : undefined))).to.equal(1);
  });

  it('finds the first and the highest parameter anywhere in a statement', () => {
    const get = parseStatement('get c match b $4 where a in [$2, {x: $7}] and len($1) > 0 limit $3');
    expect(firstParam(get)).to.equal(4);
    expect(highestParam(get)).to.equal(7);
    expect(highestParam(parseCondition('a = 1'))).to.equal(0);
    expect(firstParam(parseCondition('a = $jwt.sub'))).to.equal(undefined);
    expect(highestParam(parseStatement('insert into c $2'))).to.equal(2);
  });

  it('answers a tree a thousand times the usual size, deep or wide, without recursion', () => {
    // A usual condition has about a hundred nodes at most; these have a hundred thousand.
    let deep: Cond = {
      kind: 'Compare',
      op: '=',
      left: { kind: 'Field', name: 'a' },
      right: { kind: 'Param', index: 9 },
    };
    for (let i = 0; i < 100_000; i++) deep = { kind: 'Not', operand: deep };
    expect(highestParam(deep)).to.equal(9);
    let deepest = 0;
    walk(deep, (_node, depth) => {
      deepest = Math.max(deepest, depth);
    });
    expect(deepest).to.equal(100_002);
    const items: Expr[] = Array.from({ length: 100_000 }, (_, i) => ({ kind: 'Param', index: (i % 99) + 1 }));
    const wide: Cond = { kind: 'In', left: { kind: 'Field', name: 'a' }, right: { kind: 'Array', items } };
    expect(highestParam(wide)).to.equal(99);
    expect(childrenOf(wide.right)).to.have.length(100_000);
  });
});
