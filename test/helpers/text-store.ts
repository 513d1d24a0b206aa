/**
 * A collection with a text index, over a real `.fenec` file, for the tests of node/search.
 */
import { expect } from 'chai';
import type { CreateCollectionStmt, FieldDef, TextTokenizer } from '../../shared/fenecql/ast.js';
import { parseStatement } from '../../shared/fenecql/parser.js';
import { Catalog } from '../../node/schema/catalog.js';
import { openWritable, type Connection } from '../../node/storage/sqlite.js';
import {
  matchTerms,
  textColumn,
  textIndexName,
  textIndexSql,
  textTopSelect,
  type TextIndexSql,
} from '../../node/search/text-index.js';
import { FTS5_TOKENIZE } from '../../node/search/tokenizers.js';

export interface Row {
  readonly id: number;
  readonly text: string | null;
  readonly _score: number;
  readonly _snippet: string | null;
}

export interface Where {
  readonly sql: string;
  readonly args: readonly unknown[];
}

/** A collection made by the catalogue, as the product makes it, with the text index over its @text fields. */
export class Store {
  readonly db: Connection;
  readonly name: string;
  fields: FieldDef[];
  /** The collection's tokenizer, as the catalogue chose it. */
  readonly tokenizer: TextTokenizer;
  ddl: TextIndexSql;

  constructor(file: string, definition: string) {
    this.db = openWritable(file);
    const stmt = parseStatement(`create collection ${definition}`) as CreateCollectionStmt;
    this.name = stmt.name;
    this.fields = stmt.fields.filter((f) => f.annotations.some((a) => a.kind === 'text'));
    // The catalogue makes the text index with the collection, as the product does.
    const catalog = new Catalog(this.db);
    this.db.transaction(() => catalog.create(stmt.name, stmt.fields))();
    this.tokenizer = catalog.require(stmt.name).textTokenizer;
    this.ddl = textIndexSql(this.name, this.fields, this.tokenizer);
  }

  createIndex(): void {
    this.ddl = textIndexSql(this.name, this.fields, this.tokenizer);
    this.db.transaction(() => this.ddl.create.forEach((sql) => this.db.exec(sql)))();
  }

  dropIndex(): void {
    this.db.transaction(() => this.ddl.drop.forEach((sql) => this.db.exec(sql)))();
  }

  /** The product's ranked read (textTopSelect), as a `match` without a token's policy runs it. */
  search(text: string, field = '*', where?: Where, limit = 100): Row[] {
    const terms = matchTerms(text, field, this.fields, this.tokenizer);
    if (terms === null) return [];
    const sql = textTopSelect(
      this.name,
      this.fields,
      field,
      ['c."id"', `c."text"`],
      ` LIMIT ${limit}`,
      this.tokenizer,
      {
        where: where?.sql,
      },
    );
    return this.db.prepare(sql).all(terms.snippetWords, ...(where?.args ?? []), terms.expression) as Row[];
  }

  ids(text: string, field = '*', where?: Where, limit = 100): number[] {
    return this.search(text, field, where, limit).map((r) => r.id);
  }

  /**
   * Asserts that the index holds exactly what the rows say: FTS5's own check against the content, and
   * every token, row size and corpus total equal to those of an index built afresh from the rows.
   */
  expectExact(): void {
    const fts = textIndexName(this.name);
    this.db.exec(this.ddl.check);
    const columns = this.fields.map((f) => `"${textColumn(f.name)}"`).join(', ');
    this.db.exec(`
      DROP TABLE IF EXISTS twin; DROP TABLE IF EXISTS twin_v; DROP TABLE IF EXISTS index_v;
      CREATE VIRTUAL TABLE twin USING fts5(${columns}, content='t.${this.name}.src', content_rowid='id', tokenize='${FTS5_TOKENIZE[this.tokenizer]}');
      INSERT INTO twin (twin) VALUES ('rebuild');
      CREATE VIRTUAL TABLE twin_v USING fts5vocab(twin, 'instance');
      CREATE VIRTUAL TABLE index_v USING fts5vocab(${fts}, 'instance');
    `);
    const all = (sql: string) => this.db.prepare(sql).all();
    const shadow = (suffix: string) => `"t.${this.name}.fts_${suffix}"`;
    expect(all('SELECT term, doc, col, offset FROM index_v ORDER BY 1, 2, 3, 4')).to.deep.equal(
      all('SELECT term, doc, col, offset FROM twin_v ORDER BY 1, 2, 3, 4'),
    );
    expect(all(`SELECT id, sz FROM ${shadow('docsize')} ORDER BY id`)).to.deep.equal(
      all('SELECT id, sz FROM twin_docsize ORDER BY id'),
    );
    // Record 1 of the data table holds the row count and token totals that BM25 reads.
    expect(all(`SELECT block FROM ${shadow('data')} WHERE id = 1`)).to.deep.equal(
      all('SELECT block FROM twin_data WHERE id = 1'),
    );
    this.db.exec('DROP TABLE twin; DROP TABLE twin_v; DROP TABLE index_v');
  }

  insert(text: string, tags: string[] | null = null, year: number | null = null): number {
    const sql = `INSERT INTO "c_${this.name}" ("text", "tags", "year") VALUES (?, ?, ?)`;
    return Number(this.db.prepare(sql).run(text, tags === null ? null : JSON.stringify(tags), year).lastInsertRowid);
  }

  /** put, as the planner writes it: every field assigned, the ones left out to null. */
  put(id: number, text: string, tags: string[] | null = null, year: number | null = null): void {
    const sql =
      `INSERT INTO "c_${this.name}" ("id", "text", "tags", "year") VALUES (?, ?, ?, ?) ON CONFLICT ("id") DO UPDATE SET ` +
      '"text" = excluded."text", "tags" = excluded."tags", "year" = excluded."year", "rank" = NULL';
    this.db.prepare(sql).run(id, text, tags === null ? null : JSON.stringify(tags), year);
  }

  close(): void {
    this.db.close();
  }
}

/** The collection most tests use: two @text fields, and a field named rank (FTS5's hidden column). */
export const NOTES = 'notes (text text required @text, tags [text] @text, year int, rank text)';
