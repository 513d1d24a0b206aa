/**
 * Plans as data: the planner's plans compared whole (deep-equal, no closure to run), and `explain`,
 * which answers every kind of plan without running it.
 */
import { expect } from 'chai';
import type { RowStatement } from '../../shared/fenecql/kinds.js';
import { parseCondition, parseStatement } from '../../shared/fenecql/parser.js';
import type { Policy } from '../../shared/auth/policy.js';
import { FenecDatabase } from '../../node/database.js';
import { plan } from '../../node/query/plan/row-statement.js';
import { Catalog } from '../../node/schema/catalog.js';
import { openWritable, type Connection } from '../../node/storage/sqlite.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

const ID = { kind: 'scalar', scalar: 'int' } as const;

describe('plans as data, and explain', function () {
  this.timeout(30_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;
  let conn: Connection;
  let catalog: Catalog;

  before(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('e.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    db.execute(
      'create collection docs (title text @text, year int @sorted, owner text, seen timestamp @ttl(1h), v vector<2>)',
    );
    conn = openWritable(temp.file('e.fenec'));
    catalog = new Catalog(conn);
  });
  after(() => {
    conn.close();
    db.close();
    temp.remove();
  });

  const planOf = (text: string, policy?: string) =>
    plan(parseStatement(text) as RowStatement, catalog, policy === undefined ? undefined : parseCondition(policy));

  it('plans a read as plain data: its SQL, and its arguments as descriptors of a parameter, a literal, a claim and the clock', () => {
    const read = planOf('get docs select title where id = $1 and year > 2020 and owner = $jwt.sub');
    expect(JSON.parse(JSON.stringify(read))).to.deep.equal(read);
    expect(read).to.deep.include({
      kind: 'read',
      columns: [
        { key: 'id', decode: null },
        { key: 'title', decode: null },
      ],
    });
    expect(read.kind === 'read' && read.step.args).to.deep.equal([
      { kind: 'param', index: 1, as: { type: ID, label: 'field id', compared: true } },
      { kind: 'literal', value: 2020 },
      {
        kind: 'jwt',
        claim: 'sub',
        as: { type: { kind: 'scalar', scalar: 'text' }, label: 'field owner', compared: true },
      },
      { kind: 'now', minus: 3_600_000 },
    ]);
  });

  it('plans limits, a match and a put as descriptors too', () => {
    const count = planOf('get docs match title $1 limit $2 count');
    expect(count.kind === 'count' && count.step.args.map((arg) => arg.kind)).to.deep.equal(['now', 'words', 'count']);
    expect(count.kind === 'count' && count.guard).to.deep.equal({
      kind: 'words',
      part: 'expression',
      field: 'title',
      fields: ['title'],
      tokenizer: 'english',
      words: {
        kind: 'param',
        index: 1,
        as: { type: { kind: 'scalar', scalar: 'text' }, label: 'the words after match', compared: false },
      },
    });
    const put = planOf('put docs {id: $1, title: "t"}');
    expect(put.kind === 'put' && put.id).to.deep.equal({
      kind: 'putId',
      text: '$1',
      value: { kind: 'param', index: 1, as: { type: ID, label: 'id', compared: false } },
    });
  });

  const explained = (text: string, options = {}) =>
    (
      db.execute(`explain ${text}`, [], options) as {
        plan: { kind: string; steps: { step: string; args: unknown[]; sqlite: string[] }[] };
      }
    ).plan;

  it('explains every kind of plan, and statements about collections, without running them', () => {
    const kinds = {
      'get docs where id = $1': 'read',
      'get docs where year > 1 count': 'count',
      'get docs match title "fox"': 'read',
      'get docs near v [1, 0] limit 3': 'vector',
      'get docs match title "fox" near v [1, 0] fuse limit 3': 'vector',
      'insert into docs {title: "a"}': 'insert',
      'insert into docs $1': 'bulk',
      'put docs {id: 1, title: "b"}': 'put',
      'set docs {year: 3} where id = 1': 'change',
      'del docs where year = 3': 'change',
      'create collection others (a int)': 'schema',
      'schema docs': 'describe',
      compact: 'maintenance',
    };
    for (const [text, kind] of Object.entries(kinds)) expect(explained(text).kind, text).to.equal(kind);
    expect(db.execute('get docs count')).to.deep.equal({ count: 0 });
    expect(db.execute('schema').collections).to.have.length(1);
    expect(explained('del docs where year = 3').steps).to.deep.equal([
      {
        step: 'change',
        sql: 'DELETE FROM "c_docs" WHERE ("c_docs"."year" = ?) AND (+"c_docs"."seen" IS NULL OR +"c_docs"."seen" > ?)',
        args: [3, 'now() - 3600000ms'],
        sqlite: ['SEARCH c_docs USING INDEX i.docs.year (year=?)'],
      },
    ]);
  });

  it("explains a token's statement under its policy, and refuses what the token may not run", () => {
    const policy: Policy = {
      rules: new Map([
        [
          'docs',
          { collection: 'docs', read: true, write: false, where: parseCondition('owner = $jwt.sub'), source: 'test:1' },
        ],
      ]),
    };
    const options = { policy, jwt: { sub: 'ann' } };
    expect(explained('get docs where id = 1', options).steps[0]!.args).to.deep.equal([
      1,
      '$jwt.sub',
      'now() - 3600000ms',
    ]);
    expect(refusal(() => explained('del docs where id = 1', options)).code).to.equal('forbidden');
    expect(refusal(() => explained('compact', options)).code).to.equal('forbidden');
  });
});
