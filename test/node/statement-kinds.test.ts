import { expect } from 'chai';
import Sqlite from 'better-sqlite3';
import type { Policy } from '../../shared/auth/policy.js';
import type { StatementKind } from '../../shared/fenecql/ast.js';
import { auditedChange, STATEMENT_KINDS } from '../../shared/fenecql/kinds.js';
import { parseCondition, parseStatement } from '../../shared/fenecql/parser.js';
import type { Statement } from '../../shared/fenecql/ast.js';
import { ToolRunner } from '../../shared/mcp/tool-runner.js';
import { FenecDatabase, type ExecuteOptions } from '../../node/database.js';
import { QuotaExecutor } from '../../node/workers/quota-executor.js';
import { refusal } from '../helpers/assertions.js';
import { tempDir } from '../helpers/temp.js';

/** One statement of each kind: a Record, so that a new kind does not compile here until it has one. */
const SAMPLES: Readonly<Record<StatementKind, string>> = {
  Get: 'get notes where id = 1',
  Insert: 'insert into notes {title: "c", year: 3}',
  Put: 'put notes {id: 9, title: "p"}',
  Set: 'set notes {year: 5} where id = 1',
  Del: 'del notes where id = 2',
  Schema: 'schema notes',
  CreateCollection: 'create collection others (name text)',
  DropCollection: 'drop collection spare',
  AlterAdd: 'alter collection notes add tag text',
  AlterDrop: 'alter collection notes drop year',
  AlterEmbed: 'alter collection spare embed vec',
  Compact: 'compact notes',
  Explain: 'explain del notes where year = 1',
};

const KINDS = Object.keys(SAMPLES) as StatementKind[];

/** A token that reads and writes every collection there is. */
const EVERYTHING: Policy = {
  rules: new Map(
    ['notes', 'spare', 'others'].map((collection) => [
      collection,
      { collection, read: true, write: true, where: parseCondition('true'), source: `test:${collection}` },
    ]),
  ),
};

describe('the statement kinds table', function () {
  this.timeout(60_000);
  let temp: ReturnType<typeof tempDir>;
  let db: FenecDatabase;

  beforeEach(() => {
    temp = tempDir();
    db = FenecDatabase.open({ file: temp.file('k.fenec'), readOnly: false, program: 'test', sweepIntervalMs: 0 });
    db.execute('create collection notes (title text, year int, gone timestamp @ttl(1ms))');
    // Its vector is made with @embed, its model named: no embedder is needed to make it, only to fill it.
    db.execute('create collection spare (x int, note text, vec vector<2> @embed(note, model = "m"))');
    db.execute('insert into notes [{title: "a", year: 1}, {title: "b", year: 2}, {title: "old", gone: "2020-01-01"}]');
  });

  afterEach(() => {
    db.close();
    temp.remove();
  });

  /** The MCP tools over the database (write offered), and the kinds of the statements they ran. */
  function tools(): {
    call: (tool: string, args: Record<string, unknown>) => ReturnType<ToolRunner<ExecuteOptions>['call']>;
    ran: StatementKind[];
  } {
    const ran: StatementKind[] = [];
    const runner = new ToolRunner<ExecuteOptions>(
      {
        executeStatement: (statement: Statement, params, options) => (
          ran.push(statement.kind),
          db.executeStatement(statement, params, options)
        ),
      },
      { write: true, memory: undefined, readOnly: false },
    );
    return { call: (tool, args) => runner.call(runner.tool(tool)!, args, { options: {}, scoped: false }), ran };
  }

  /**
   * Everything a statement may change: the schema, and every row of every collection, expired ones too (read by SQLite
   * itself).
   */
  function state(): string {
    const schema = db.execute('schema');
    const file = new Sqlite(temp.file('k.fenec'), { readonly: true });
    try {
      const tables = file
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'c\\_%' ESCAPE '\\' ORDER BY name")
        .pluck()
        .all() as string[];
      const rows = tables.map((table) => file.prepare(`SELECT * FROM "${table}" ORDER BY rowid`).all());
      return JSON.stringify({ schema, tables, rows });
    } finally {
      file.close();
    }
  }

  it('has one row for each kind of the statement union, and each sample is of its kind', () => {
    expect(Object.keys(STATEMENT_KINDS).sort()).to.deep.equal([...KINDS].sort());
    for (const kind of KINDS) expect(parseStatement(SAMPLES[kind]).kind, SAMPLES[kind]).to.equal(kind);
  });

  for (const kind of KINDS) {
    const info = STATEMENT_KINDS[kind];
    const text = SAMPLES[kind];

    it(`${kind}: writes ${info.writes}, as running it shows`, () => {
      if (info.writes) expect(refusal(() => db.execute(text, [], { readOnly: true })).code).to.equal('read_only');
      // The audit records exactly the kinds that change the schema or rewrite the file.
      expect(auditedChange(parseStatement(text)) !== undefined, `${text} is audited`).to.equal(
        info.family === 'schema' || info.family === 'maintenance',
      );
      const before = state();
      if (kind === 'AlterEmbed') {
        // With no embedder it is refused and records nothing. What it writes once a server has one (the rows'
        // vectors, never the schema) and its audit line: test/integration/embedder/backfill.test.ts.
        expect(refusal(() => db.execute(text)).code).to.equal('embedder_missing');
        expect(state(), text).to.equal(before);
        return;
      }
      db.execute(text);
      const after = state();
      if (info.writes) expect(after, text).to.not.equal(before);
      else expect(after, text).to.equal(before);
      // Only the schema family changes the schema.
      expect(
        JSON.stringify(JSON.parse(after).schema) !== JSON.stringify(JSON.parse(before).schema),
        `${text} changes the schema`,
      ).to.equal(info.family === 'schema');
    });

    it(`${kind}: ${info.serverOnly ? 'the server token only' : 'a token may run it'}`, () => {
      const jwt = { jwt: { sub: 'u' }, policy: EVERYTHING };
      if (info.serverOnly) expect(refusal(() => db.execute(text, [], jwt)).code).to.equal('forbidden');
      else expect(() => db.execute(text, [], jwt)).to.not.throw();
    });

    it(`${kind}: adds ${info.adds === null ? 'nothing' : Object.keys(info.adds)[0]} to a tenant's quotas`, () => {
      // The tenant holds 2 collections and 2 live rows (the third is expired): at both quotas.
      const full = new QuotaExecutor(db, { maxCollections: 2, maxRows: 2 });
      const adds = info.adds === null ? null : Object.keys(info.adds)[0];
      if (adds === 'rows' || adds === 'collection')
        expect(refusal(() => full.execute(text)).code).to.equal('quota_exceeded');
      // Refused for want of an embedder, never for a quota.
      else if (kind === 'AlterEmbed') expect(refusal(() => full.execute(text)).code).to.equal('embedder_missing');
      else expect(() => full.execute(text)).to.not.throw();
    });

    it(`${kind}: over MCP ${info.mcp ?? 'never'}`, () => {
      const { call, ran } = tools();
      const outcome = call('query', { statement: text });
      if (info.mcp === 'query') {
        expect(outcome.ok, text).to.equal(true);
        expect(ran).to.deep.equal([kind]);
      } else {
        expect(outcome.ok || outcome.error.code, text).to.equal('forbidden');
        expect(ran).to.deep.equal([]);
      }
    });
  }

  it('the MCP write tool builds exactly the kinds the table runs through it', () => {
    const { call, ran } = tools();
    for (const args of [
      { insert: { title: 'w' } },
      { put: { id: 4, title: 'w' } },
      { set: { year: 1 }, filter: 'id = 1' },
      { del: true, filter: 'id = 1' },
    ]) {
      expect(call('write', { collection: 'notes', ...args }).ok, JSON.stringify(args)).to.equal(true);
    }
    expect([...ran].sort()).to.deep.equal(KINDS.filter((kind) => STATEMENT_KINDS[kind].mcp === 'write').sort());
  });

  it('audits a schema change as its kind and collection, in any case and after comments', () => {
    const audited = (text: string) => auditedChange(parseStatement(text));
    expect(audited('CREATE COLLECTION IF NOT EXISTS notes (title text)')).to.deep.equal({
      statement: 'create',
      collection: 'notes',
    });
    expect(audited('  -- why\n\tdrop collection if exists notes')).to.deep.equal({
      statement: 'drop',
      collection: 'notes',
    });
    expect(audited('alter collection notes add year int')).to.deep.equal({
      statement: 'alter add',
      collection: 'notes',
    });
    expect(audited('alter collection notes drop year')).to.deep.equal({ statement: 'alter drop', collection: 'notes' });
    expect(audited('alter collection notes embed vec')).to.deep.equal({
      statement: 'alter embed',
      collection: 'notes',
    });
    expect(audited('compact notes')).to.deep.equal({ statement: 'compact', collection: 'notes' });
    expect(audited('compact')).to.deep.equal({ statement: 'compact', collection: null });
    for (const text of [
      'get notes',
      'insert into notes {title: "create"}',
      'schema',
      'get creates',
      '-- create\nget notes',
      'set notes {x: 1} where id = 1',
    ]) {
      expect(audited(text), text).to.equal(undefined);
    }
  });
});
