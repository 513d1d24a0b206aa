import * as path from 'node:path';
import { expect } from 'chai';
import { query, request, Sandbox, type Reply, type ServerProcess } from './processes.js';

const repeat = (n: number, text: string, separator = ''): string => Array<string>(n).fill(text).join(separator);

/** POST /query with the params written as JSON text: values too deep for JSON.stringify to write. */
function queryRaw(base: string, statement: string, paramsJson: string): Promise<Reply> {
  const body = `{"statement": ${JSON.stringify(statement)}, "params": ${paramsJson}}`;
  return request(base, { method: 'POST', path: '/query', headers: { 'content-type': 'application/json' }, body });
}

async function timed<T>(run: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const result = await run();
  return [result, performance.now() - started];
}

/** Issue 9's headline statements: each took the server seconds to forever (2^n in the terms) before. */
const HEADLINES: Readonly<Record<string, string>> = {
  '1 000 terms of 1 + 1 + …': `get docs where year = ${repeat(1000, '1', ' + ')} count`,
  '300 nested coalesce': `get docs where year = ${repeat(300, 'coalesce(')}1${repeat(300, ', 1)')} count`,
  '2 000 nested parentheses': `get docs where year = ${repeat(2000, '(')}1${repeat(2000, ')')} count`,
};

describe('hostile statements against fenec-server', function () {
  this.timeout(60_000);
  const sandbox = new Sandbox();
  let server: ServerProcess;

  before(async () => {
    server = await sandbox.startServer(['--file', path.join(sandbox.dir(), 'hostile.fenec')]);
    for (const statement of [
      'create collection docs (year int, title text, f float, j json, v vector<4>)',
      'insert into docs {year: 250, title: "a", f: 1.5, j: {}, v: [1, 2, 3, 4]}',
    ]) {
      expect((await query(server.url, statement)).status).to.equal(200);
    }
  });

  after(() => sandbox.cleanUp());

  describe('cost', () => {
    for (const [name, statement] of Object.entries(HEADLINES)) {
      it(`refuses ${name} with too_complex, the limit and the position, as fast as a plain statement`, async () => {
        const plain = 'get docs where year = 1 count';
        let fastest = Infinity;
        let plainFastest = Infinity;
        // Alternated, and the best of five of each: a busy machine slows both alike.
        for (let i = 0; i < 5; i++) {
          const [reply, ms] = await timed(() => query(server.url, statement));
          expect(reply.status, reply.text).to.equal(400);
          expect(reply.json.error.code).to.equal('too_complex');
          expect(reply.json.error.message).to.contain('deeper than 256 levels');
          expect(reply.json.error).to.include.keys('line', 'column', 'hint');
          fastest = Math.min(fastest, ms);
          plainFastest = Math.min(plainFastest, (await timed(() => query(server.url, plain)))[1]);
        }
        // Issue 9's figure is 50 ms; on a loaded machine, within a few times a trivial statement's time.
        expect(fastest).to.be.below(Math.max(50, 4 * plainFastest));
      });
    }

    it('answers a 250-term chain, inside the limit, as fast as a plain statement (2^250 compilations before)', async () => {
      const [reply, ms] = await timed(() =>
        query(server.url, `get docs where year = ${repeat(250, '1', ' + ')} count`),
      );
      expect(reply.json).to.deep.equal({ count: 1 });
      expect(ms).to.be.below(2000);
    });

    it('keeps /_health answering while hostile statements arrive', async () => {
      const hostile = Object.values(HEADLINES);
      const flood = Array.from({ length: 30 }, (_, i) => query(server.url, hostile[i % hostile.length]!));
      const [health, ms] = await timed(() => request(server.url, { path: '/_health' }));
      expect(health.status).to.equal(200);
      // Before, one 23-term statement held /_health for 10 s, a 1 000-term one for minutes.
      expect(ms).to.be.below(1000);
      for (const reply of await Promise.all(flood)) expect(reply.json.error.code).to.equal('too_complex');
    });
  });

  describe('every large input answers a 4xx that says what to change, never internal', () => {
    const SHAPES: ReadonlyArray<[string, string, string?]> = [
      ['979 nested parentheses', `get docs where year = ${repeat(979, '(')}1${repeat(979, ')')} count`],
      ['a not chain of 497', `get docs where ${repeat(497, 'not ')}year = 1 count`],
      ['an or chain of 999 terms', `get docs where ${repeat(999, 'year = 1', ' or ')} count`],
      ['an and chain of 999 terms', `get docs where ${repeat(999, 'year = 1', ' and ')} count`],
      ['1 000 unary minus', `get docs where year = ${repeat(1000, '- ')}year count`],
      ['1 958 nested arrays in a json field', `insert into docs {j: ${repeat(1958, '[')}1${repeat(1958, ']')}}`],
      ['1 582 nested objects in a json field', `insert into docs {j: ${repeat(1582, '{a: ')}1${repeat(1582, '}')}}`],
      ['a JSON parameter 4 111 arrays deep', 'insert into docs {j: $1}', `[${repeat(4111, '[')}1${repeat(4111, ']')}]`],
      [
        'a JSON parameter 5 000 objects deep',
        'insert into docs {j: $1}',
        `[${repeat(5000, '{"a":')}1${repeat(5000, '}')}]`,
      ],
      ['a like pattern past 50 000 characters', `get docs where title like "${'%a'.repeat(25_001)}" count`],
    ];
    for (const [name, statement, paramsJson] of SHAPES) {
      it(`${name}: too_complex (400)`, async () => {
        const reply =
          paramsJson === undefined
            ? await query(server.url, statement)
            : await queryRaw(server.url, statement, paramsJson);
        expect(reply.status, reply.text).to.equal(400);
        expect(reply.json.error.code).to.equal('too_complex');
        expect(reply.json.error.hint).to.be.a('string');
      });
    }

    const NUMBERS: ReadonlyArray<[string, string, string?]> = [
      ['a vector component past float32 in near', 'get docs near v [3.5e38, 1, 1, 1] limit 1'],
      ['a vector component past float32 in insert', 'insert into docs {v: [1e39, 1, 1, 1]}'],
      ['a vector component past float32 in a parameter', 'insert into docs {v: $1}', '[[1e39, 1, 1, 1]]'],
      ['a product past a double', 'insert into docs {f: 1e308 * 10}'],
      ['a parameter JSON reads as Infinity', 'insert into docs {f: $1}', '[1e400]'],
    ];
    for (const [name, statement, paramsJson] of NUMBERS) {
      it(`${name}: invalid_number (400)`, async () => {
        const reply =
          paramsJson === undefined
            ? await query(server.url, statement)
            : await queryRaw(server.url, statement, paramsJson);
        expect(reply.status, reply.text).to.equal(400);
        expect(reply.json.error.code).to.equal('invalid_number');
      });
    }

    const SURROGATES: ReadonlyArray<[string, string, string, string?]> = [
      ['a lone surrogate in a literal', String.raw`insert into docs {title: "fox \ud83e"}`, 'invalid_escape'],
      ['a lone surrogate in a parameter', 'insert into docs {title: $1}', 'invalid_value', String.raw`["fox \ud83e"]`],
      [
        'a lone surrogate in a bulk write',
        'insert into docs $1',
        'invalid_value',
        String.raw`[[{"title": "ok"}, {"title": "\udc00"}]]`,
      ],
      [
        'a lone surrogate in a key of a json field',
        'insert into docs {j: $1}',
        'invalid_value',
        String.raw`[{"\ud800": 1}]`,
      ],
    ];
    for (const [name, statement, code, paramsJson] of SURROGATES) {
      it(`${name}: ${code} (400), where SQLite would have stored bytes that are not UTF-8`, async () => {
        const reply =
          paramsJson === undefined
            ? await query(server.url, statement)
            : await queryRaw(server.url, statement, paramsJson);
        expect(reply.status, reply.text).to.equal(400);
        expect(reply.json.error.code).to.equal(code);
        expect(reply.json.error.message).to.contain('lone surrogate');
      });
    }

    it('repeats at most a bounded part of a 500 000-character name it refuses', async () => {
      const key = 'k'.repeat(500_000);
      for (const reply of [
        await queryRaw(server.url, 'insert into docs $1', JSON.stringify([[{ [key]: 1 }]])),
        await request(server.url, {
          method: 'POST',
          path: '/query',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ statement: 'get docs', [key]: 1 }),
        }),
      ]) {
        expect(reply.status, reply.text.slice(0, 200)).to.equal(400);
        expect(reply.json.error.code).to.be.oneOf(['unknown_field', 'bad_request']);
        expect(reply.text.length).to.be.below(2_500);
        expect(reply.json.error.message).to.match(/… \(\d+ characters more\)/);
      }
    });

    it('has written nothing, and the server still serves', async () => {
      expect((await query(server.url, 'get docs count')).json).to.deep.equal({ count: 1 });
      expect(server.stderr()).not.to.contain('"code":"internal"');
    });
  });
});
