import { expect } from 'chai';
import { FenecError } from '../../shared/errors.js';
import { parseNodes, parsePlacement, Placement, rendezvousNode } from '../../router/placement.js';

const NODES = parseNodes('a=http://127.0.0.1:8081,b=http://127.0.0.1:8082');

describe('router placement', () => {
  it('reads --nodes as name=url pairs', () => {
    expect(NODES.map((node) => [node.name, node.url.origin])).to.deep.equal([
      ['a', 'http://127.0.0.1:8081'],
      ['b', 'http://127.0.0.1:8082'],
    ]);
  });

  for (const [text, why] of [
    ['', 'an empty list'],
    ['a', 'an entry without ='],
    ['a=ftp://x', 'a URL that is not http'],
    ['a=http://x:1/path', 'a URL with a path'],
    ['a=http://x:1,a=http://y:1', 'a name given twice'],
    ['a=not a url', 'a malformed URL'],
  ] as const) {
    it(`refuses ${why} in --nodes`, () => {
      expect(() => parseNodes(text))
        .to.throw(FenecError)
        .with.property('code', 'invalid_option');
    });
  }

  it('places a tenant on the same node every time and on every router alike', () => {
    const again = parseNodes('b=http://10.0.0.2:1,a=http://10.0.0.1:1');
    for (let i = 0; i < 200; i++)
      expect(rendezvousNode(`t${i}`, NODES).name).to.equal(rendezvousNode(`t${i}`, again).name);
  });

  it('spreads tenants over the nodes', () => {
    const counts = { a: 0, b: 0 } as Record<string, number>;
    for (let i = 0; i < 1000; i++) counts[rendezvousNode(`tenant-${i}`, NODES).name]! += 1;
    expect(counts.a).to.be.within(400, 600);
  });

  it('moves only the tenants a new node wins when one is added', () => {
    const three = parseNodes('a=http://127.0.0.1:1,b=http://127.0.0.1:2,c=http://127.0.0.1:3');
    let moved = 0;
    for (let i = 0; i < 1000; i++) {
      const before = rendezvousNode(`tenant-${i}`, NODES).name;
      const after = rendezvousNode(`tenant-${i}`, three).name;
      if (before !== after) {
        expect(after).to.equal('c');
        moved += 1;
      }
    }
    expect(moved).to.be.within(250, 420);
  });

  it('lets a pin override hashing, the later line winning', () => {
    const tenant = [...Array(50).keys()].map((i) => `x${i}`).find((name) => rendezvousNode(name, NODES).name === 'a')!;
    const pins = parsePlacement(`# moved\n${tenant} a\n${tenant}   b  # moved again\n`, 'placement', NODES);
    const placement = new Placement(NODES, pins);
    expect(placement.nodeOf(tenant).name).to.equal('b');
    expect(new Placement(NODES).nodeOf(tenant).name).to.equal('a');
  });

  it('refuses a pin to an unknown node or of a bad tenant name, naming the line', () => {
    expect(() => parsePlacement('acme c', 'p.txt', NODES)).to.throw(FenecError, /p\.txt:1: node "c"/);
    expect(() => parsePlacement('\n../etc a', 'p.txt', NODES)).to.throw(FenecError, /p\.txt:2/);
    expect(() => parsePlacement('acme a b', 'p.txt', NODES))
      .to.throw(FenecError)
      .with.property('code', 'invalid_option');
  });
});
