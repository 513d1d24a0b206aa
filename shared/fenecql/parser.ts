/**
 * The FenecQL parser: recursive descent over the language docs/fenecql.md describes, one `parseX`
 * method per production, building the trees of ast.ts.
 *
 * It is one file, longer than most, because it is the grammar: read top to bottom it is the
 * language, statements first, then field definitions, then conditions and expressions.
 */
import type {
  Annotation,
  ArithmeticOp,
  ArrayExpr,
  CallExpr,
  CompareOp,
  Cond,
  CreateCollectionStmt,
  DelStmt,
  DropCollectionStmt,
  ElementType,
  Expr,
  FieldDef,
  FieldType,
  FunctionName,
  GetStmt,
  InsertStmt,
  MatchClause,
  Metric,
  NearClause,
  ObjectEntry,
  ObjectExpr,
  OrderItem,
  ParamExpr,
  PutStmt,
  ScalarType,
  SetStmt,
  Statement,
  TextTokenizer,
} from './ast.js';
import { FenecError, type ErrorCode, type Position } from '../errors.js';
import { Lexer, syntaxError } from './lexer.js';
import { checkStatementLength, checkTreeDepth, MAX_DEPTH, tooDeep } from './limits.js';
import type { Punct, Token } from './lexer.js';
import { printFieldType } from './print.js';
import { withSqlHint } from './sql-habits.js';

/**
 * Parses one statement, with an optional trailing `;`.
 *
 * @throws FenecError with a parse-area code (syntax_error, invalid_name, …), its position, and a
 *   message naming what was expected and what was found; `multiple_statements` when text follows the `;`;
 *   `too_complex` past the limits of limits.ts, before any further work.
 */
export function parseStatement(text: string): Statement {
  checkStatementLength(text);
  try {
    const parser = new Parser(text);
    const statement = parser.parseStatement();
    parser.parseEnd('statement');
    checkTreeDepth(statement);
    return statement;
  } catch (err) {
    throw hinted(text, err);
  }
}

/**
 * Parses a condition alone (an MCP filter, a policy line): exactly one condition and nothing after
 * it, so that it can be embedded in a statement as a tree without changing that statement's meaning.
 *
 * @throws FenecError as parseStatement does; a `;` followed by more text is `multiple_statements`.
 */
export function parseCondition(text: string): Cond {
  checkStatementLength(text);
  try {
    const parser = new Parser(text);
    const cond = parser.parseFilter();
    parser.parseEnd('condition');
    checkTreeDepth(cond);
    return cond;
  } catch (err) {
    throw hinted(text, err);
  }
}

/** A refusal of SQL written as FenecQL names the FenecQL meant (sql-habits.ts). */
function hinted(text: string, err: unknown): unknown {
  return err instanceof FenecError ? withSqlHint(text, err) : err;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A parenthesis can hold a condition or a value; which one is only known from what follows it. */
type Term = Expr | Cond;

const STATEMENTS = 'create, drop, alter, insert, put, set, del, get, schema, compact, explain';
const GET_CLAUSES = ['select', 'match', 'near', 'fuse', 'where', 'order', 'limit', 'offset', 'count'] as const;
type GetClause = (typeof GET_CLAUSES)[number];
const SCALAR_TYPES: readonly ScalarType[] = ['text', 'int', 'float', 'bool', 'timestamp', 'json'];
const ELEMENT_TYPES: readonly ElementType[] = ['text', 'int', 'float', 'bool', 'timestamp'];
const TYPE_LIST = 'text, int, float, bool, timestamp, json, vector<N>, [T]';
const ANNOTATION_LIST = '@hash, @sorted, @text, @text(TOKENIZER), @ttl(DURATION), @hnsw(METRIC), @embed(FIELD, …)';
const METRICS: readonly Metric[] = ['cosine', 'l2', 'ip'];
const TEXT_TOKENIZERS: readonly TextTokenizer[] = ['english', 'porter', 'exact'];
const HNSW_OPTIONS = {
  m: { min: 2, max: 128 },
  ef: { min: 1, max: 4096 },
  ef_construction: { min: 8, max: 4096 },
} as const;
const HNSW_OPTION_NAMES = Object.keys(HNSW_OPTIONS) as (keyof typeof HNSW_OPTIONS)[];
/** Where each option of @hnsw goes in its annotation. */
const HNSW_KEYS = { m: 'm', ef: 'ef', ef_construction: 'efConstruction' } as const;
const FIELD_MODIFIERS = ['required', 'unique', 'default'];
const FUNCTION_ARITY: Readonly<Record<FunctionName, number>> = { now: 0, len: 1, lower: 1, upper: 1, coalesce: 2 };
const FUNCTIONS: readonly FunctionName[] = ['now', 'len', 'lower', 'upper', 'coalesce'];
const FUNCTION_LIST = 'now(), len(x), lower(x), upper(x), coalesce(x, y)';
const COMPARE_OPS: ReadonlySet<Punct> = new Set(['=', '!=', '<', '<=', '>', '>=']);
/** Words that cannot name a field where a value is expected: they are the grammar's there. */
const OPERATOR_WORDS: ReadonlySet<string> = new Set(['and', 'or', 'not', 'has', 'in', 'is', 'like']);
const PREDICATE_WORDS: ReadonlySet<string> = new Set(['has', 'in', 'is', 'like']);
/** Predicates that `not` may precede, as SQL's `not in` and `not like`. */
const NEGATABLE: ReadonlySet<string> = new Set(['has', 'in', 'like']);
const COND_KINDS: Readonly<Record<Cond['kind'], true>> = {
  And: true,
  Or: true,
  Not: true,
  Compare: true,
  Has: true,
  In: true,
  IsNull: true,
  Like: true,
  Truth: true,
};

function isCond(term: Term): term is Cond {
  return Object.hasOwn(COND_KINDS, term.kind);
}

/** A token as a message names it. */
function show(token: Token): string {
  const text = token.text.length > 40 ? `${token.text.slice(0, 40)}…` : token.text;
  switch (token.kind) {
    case 'eof':
      return 'the end of the input';
    case 'string':
      return `the string ${text}`;
    case 'number':
      return `the number ${text}`;
    case 'duration':
      return `the duration ${text}`;
    case 'param':
      return `the parameter ${text}`;
    case 'jwt':
      return `the claim ${text}`;
    case 'name':
    case 'punct':
      return `"${text}"`;
  }
}

interface ExpectedOptions {
  readonly code?: ErrorCode;
  /** What was found, when it is not simply the current token. */
  readonly found?: string;
  /** Why, or what to write instead, after the found part. */
  readonly note?: string;
}

class Parser {
  readonly #lexer: Lexer;
  #token: Token;
  #peeked: Token | undefined;
  #previous: Token | undefined;
  /**
   * The levels open where the parser reads: parentheses, `not`, `-`, calls, arrays, objects, and the
   * operators of the chain being read. Bounded by MAX_DEPTH, so that the descent cannot overflow the stack.
   */
  #depth = 0;

  constructor(text: string) {
    this.#lexer = new Lexer(text);
    this.#token = this.#lexer.next();
  }

  // Implements the statements.

  /** Statement : Create | Drop | Alter | Insert | Put | Set | Del | Get | Schema | Compact */
  parseStatement(): Statement {
    switch (this.#keyword()) {
      case 'create':
        return this.parseCreate();
      case 'drop':
        return this.parseDrop();
      case 'alter':
        return this.parseAlter();
      case 'insert':
        return this.parseInsert();
      case 'put':
        return this.parsePut();
      case 'set':
        return this.parseSet();
      case 'del':
        return this.parseDel();
      case 'get':
        return this.parseGet();
      case 'schema':
      case 'compact':
        return this.parseCatalogue();
      case 'explain':
        return this.parseExplain();
      default:
        throw this.#expected(`a statement (${STATEMENTS})`);
    }
  }

  /** Explain : "explain" Statement, which is not itself an explain */
  parseExplain(): Statement {
    this.#advance();
    if (this.#keyword() === 'explain') throw this.#expected('the statement to explain (one explain is enough)');
    return { kind: 'Explain', statement: this.parseStatement() as Exclude<Statement, { kind: 'Explain' }> };
  }

  /** End : ";"? EOF for a statement; EOF alone for a condition */
  parseEnd(what: 'statement' | 'condition'): void {
    if (this.#token.kind === 'eof') return;
    if (this.#isPunct(';')) {
      const after = this.#peek();
      if (after.kind !== 'eof') {
        const found = `another after ";", starting with ${show(after)}`;
        throw syntaxError('multiple_statements', `expected one ${what} alone, found ${found}`, after.pos);
      }
      if (what === 'statement') return;
    }
    throw this.#expected(`the end of the ${what}`);
  }

  /** Create : "create" "collection" ("if" "not" "exists")? NAME "(" FieldDef ("," FieldDef)* ")" */
  parseCreate(): CreateCollectionStmt {
    this.#advance();
    this.#expectKeyword('collection');
    const ifNotExists = this.#isKeyword('if') && this.#peekKeyword() === 'not';
    if (ifNotExists) {
      this.#advance();
      this.#advance();
      this.#expectKeyword('exists');
    }
    const name = this.parseCollectionName();
    this.#expectPunct('(');
    const fields: FieldDef[] = [];
    do {
      const pos = this.#token.pos;
      const field = this.parseFieldDef();
      if (fields.some((f) => f.name === field.name)) {
        throw syntaxError('duplicate_field', `expected each field once, found "${field.name}" a second time`, pos);
      }
      fields.push(field);
    } while (this.#eatPunct(','));
    this.#expectPunct(')', '"," or ")"');
    return { kind: 'CreateCollection', name, ifNotExists, fields };
  }

  /** Drop : "drop" "collection" ("if" "exists")? NAME */
  parseDrop(): DropCollectionStmt {
    this.#advance();
    this.#expectKeyword('collection');
    const ifExists = this.#isKeyword('if') && this.#peekKeyword() === 'exists';
    if (ifExists) {
      this.#advance();
      this.#advance();
    }
    return { kind: 'DropCollection', name: this.parseCollectionName(), ifExists };
  }

  /** Alter : "alter" "collection" NAME ("add" FieldDef | "drop" FIELDNAME | "embed" FIELDNAME) */
  parseAlter(): Statement {
    this.#advance();
    this.#expectKeyword('collection');
    const collection = this.parseCollectionName();
    if (this.#eatKeyword('add')) return { kind: 'AlterAdd', collection, field: this.parseFieldDef() };
    if (this.#eatKeyword('drop')) {
      const token = this.#token;
      const field = this.parseFieldName('reference');
      if (field === 'id') {
        throw syntaxError(
          'invalid_name',
          'expected a field to drop, found "id" (every collection keeps its implicit id)',
          token.pos,
        );
      }
      return { kind: 'AlterDrop', collection, field };
    }
    if (this.#eatKeyword('embed')) return { kind: 'AlterEmbed', collection, field: this.parseFieldName('reference') };
    throw this.#expected('"add", "drop" or "embed"');
  }

  /** Insert : "insert" "into" NAME (Row | "[" Row ("," Row)* "]" | PARAM) */
  parseInsert(): InsertStmt {
    this.#advance();
    this.#expectKeyword('into');
    const collection = this.parseCollectionName();
    if (this.#isPunct('{')) return { kind: 'Insert', collection, rows: [this.parseRow()], many: false };
    const param = this.#rowsParam();
    if (param !== undefined) return { kind: 'Insert', collection, rows: param, many: true };
    if (!this.#eatPunct('['))
      throw this.#expected('an object {…}, an array of objects [{…}, …] or a parameter ($1) holding them');
    const rows: ObjectExpr[] = [];
    do rows.push(this.parseRow());
    while (this.#eatPunct(','));
    this.#expectPunct(']', '"," or "]"');
    return { kind: 'Insert', collection, rows, many: true };
  }

  /** Put : "put" NAME (Row | PARAM) */
  parsePut(): PutStmt {
    this.#advance();
    const collection = this.parseCollectionName();
    return { kind: 'Put', collection, row: this.#rowsParam() ?? this.parseRow() };
  }

  /** A bulk write's rows: one parameter holding an array of objects (or one object), bound at run time. */
  #rowsParam(): ParamExpr | undefined {
    const token = this.#token;
    if (token.kind !== 'param') return undefined;
    this.#advance();
    return { kind: 'Param', index: token.value, pos: token.pos };
  }

  /** Set : "set" NAME Row "where" Cond */
  parseSet(): SetStmt {
    this.#advance();
    const collection = this.parseCollectionName();
    const changes = this.parseRow();
    return { kind: 'Set', collection, changes, where: this.parseRequiredWhere('set changes every row matching it') };
  }

  /** Del : "del" NAME "where" Cond */
  parseDel(): DelStmt {
    this.#advance();
    const collection = this.parseCollectionName();
    return { kind: 'Del', collection, where: this.parseRequiredWhere('del deletes every row matching it') };
  }

  /** RequiredWhere : "where" Cond (set and del take no implicit "every row") */
  parseRequiredWhere(why: string): Cond {
    if (!this.#eatKeyword('where')) {
      throw this.#expected('"where"', { note: `where is required: ${why}, and "where true" means every row` });
    }
    return this.parseFilter();
  }

  /** Get : "get" NAME Select? Match? Near? "fuse"? Where? Order? Limit? Offset? "count"? */
  parseGet(): GetStmt {
    this.#advance();
    const collection = this.parseCollectionName();
    const stmt: Mutable<GetStmt> = { kind: 'Get', collection, select: null, fuse: false, order: [], count: false };
    const given = new Set<GetClause>();
    let last = -1;
    let fusePos: Position | undefined;
    for (;;) {
      const token = this.#token;
      const index = GET_CLAUSES.findIndex((c) => c === this.#keyword());
      const clause = GET_CLAUSES[index];
      if (clause === undefined) break;
      if (given.has(clause)) {
        throw syntaxError('syntax_error', `expected each clause of get once, found "${clause}" given twice`, token.pos);
      }
      const previous = GET_CLAUSES[last];
      if (previous !== undefined && index < last) {
        throw syntaxError(
          'syntax_error',
          `"${clause}" must come before "${previous}": expected get's clauses in the order ${GET_CLAUSES.join(', ')}`,
          token.pos,
        );
      }
      given.add(clause);
      last = index;
      this.#advance();
      switch (clause) {
        case 'select':
          stmt.select = this.parseSelect();
          break;
        case 'match':
          stmt.match = this.parseMatch(token.pos);
          break;
        case 'near':
          stmt.near = this.parseNear(token.pos);
          break;
        case 'fuse':
          stmt.fuse = true;
          fusePos = token.pos;
          break;
        case 'where':
          stmt.where = this.parseFilter();
          break;
        case 'order':
          stmt.order = this.parseOrder();
          break;
        case 'limit':
          stmt.limit = this.parseCount();
          break;
        case 'offset':
          stmt.offset = this.parseCount();
          break;
        case 'count':
          stmt.count = true;
          break;
      }
    }
    if (this.#token.kind !== 'eof' && !this.#isPunct(';')) {
      throw this.#expected(`a clause (${GET_CLAUSES.join(', ')}) or the end of the statement`);
    }
    if (fusePos !== undefined && (stmt.match === undefined || stmt.near === undefined)) {
      const found = stmt.match !== undefined ? 'only "match"' : stmt.near !== undefined ? 'only "near"' : 'neither';
      throw syntaxError(
        'syntax_error',
        `expected both "match" and "near" before "fuse" (it fuses the text ranking with the vector ranking), found ${found}`,
        fusePos,
      );
    }
    return stmt;
  }

  /** Select : "*" | FIELDNAME ("," FIELDNAME)* */
  parseSelect(): readonly string[] | '*' {
    if (this.#eatPunct('*')) return '*';
    const names: string[] = [];
    do {
      const token = this.#token;
      const name = this.parseFieldName('reference');
      if (names.includes(name)) {
        throw syntaxError(
          'duplicate_field',
          `expected each field once in select, found "${name}" a second time`,
          token.pos,
        );
      }
      names.push(name);
    } while (this.#eatPunct(','));
    return names;
  }

  /** Match : ("*" | FIELDNAME) Value */
  parseMatch(pos: Position): MatchClause {
    const field = this.#eatPunct('*') ? '*' : this.parseFieldName('reference');
    return { field, query: this.parseValue(), pos };
  }

  /** Near : FIELDNAME Value */
  parseNear(pos: Position): NearClause {
    const field = this.parseFieldName('reference');
    return { field, vector: this.parseValue(), pos };
  }

  /** Order : OrderItem ("," OrderItem)* ; OrderItem : FIELDNAME ("asc" | "desc")? */
  parseOrder(): OrderItem[] {
    const items: OrderItem[] = [];
    do {
      const pos = this.#token.pos;
      const field = this.parseFieldName('reference');
      const direction = this.#eatKeyword('desc') ? 'desc' : 'asc';
      if (direction === 'asc') this.#eatKeyword('asc');
      items.push({ field, direction, pos });
    } while (this.#eatPunct(','));
    return items;
  }

  /** Count : INT | PARAM — what limit and offset take */
  parseCount(): Expr {
    const token = this.#token;
    if (token.kind === 'param') {
      this.#advance();
      return { kind: 'Param', index: token.value, pos: token.pos };
    }
    if (token.kind === 'number' && token.integer) {
      this.#advance();
      return { kind: 'Literal', type: 'int', value: token.value, pos: token.pos };
    }
    if (token.kind === 'number')
      throw this.#expected('a whole number ≥ 0', { code: 'invalid_value', found: token.text });
    if (this.#isPunct('-') && this.#peek().kind === 'number') {
      throw this.#expected('a whole number ≥ 0', { code: 'invalid_value', found: `-${this.#peek().text}` });
    }
    throw this.#expected('a whole number or a parameter ($1)');
  }

  /** Catalogue : ("schema" | "compact") NAME? */
  parseCatalogue(): Statement {
    const kind = this.#keyword() === 'schema' ? 'Schema' : 'Compact';
    this.#advance();
    return this.#token.kind === 'name' ? { kind, collection: this.parseCollectionName() } : { kind };
  }

  /** Row : Object whose keys name fields (so none is reserved) */
  parseRow(): ObjectExpr {
    if (!this.#isPunct('{')) throw this.#expected('an object {…}');
    return this.parseObject(true);
  }

  // Implements names and field definitions.

  /** CollectionName : NAME, not starting with "_" */
  parseCollectionName(): string {
    const token = this.#token;
    if (token.kind !== 'name') throw this.#expected('a collection name');
    this.#advance();
    return checkNotReserved(token.value, 'collection', token.pos);
  }

  /** FieldName : NAME, not starting with "_"; a declared one may not be "id", which every collection has */
  parseFieldName(use: 'declaration' | 'reference'): string {
    const token = this.#token;
    if (token.kind !== 'name') throw this.#expected('a field name');
    if (use === 'declaration' && token.value === 'id') {
      const message = 'expected a field name other than "id", found "id" (every collection has an implicit id int)';
      throw syntaxError('invalid_name', message, token.pos);
    }
    this.#advance();
    return checkNotReserved(token.value, 'field', token.pos);
  }

  /**
   * FieldDef : FIELDNAME FieldType ("required" | "unique" | "default" Value)* Annotation*, each modifier at most once
   */
  parseFieldDef(): FieldDef {
    const pos = this.#token.pos;
    const name = this.parseFieldName('declaration');
    const type = this.parseFieldType();
    const field: Mutable<FieldDef> = { name, type, required: false, unique: false, annotations: [], pos };
    const given = new Set<string>();
    for (let word = this.#keyword(); word !== undefined && FIELD_MODIFIERS.includes(word); word = this.#keyword()) {
      if (given.has(word)) {
        throw syntaxError(
          'syntax_error',
          `expected "${word}" at most once on field "${name}", found it twice`,
          this.#token.pos,
        );
      }
      given.add(word);
      this.#advance();
      if (word === 'required') field.required = true;
      else if (word === 'unique') field.unique = true;
      else field.default = this.parseValue();
    }
    const annotations: Annotation[] = [];
    while (this.#isPunct('@')) {
      const at = this.#token.pos;
      const annotation = this.parseAnnotation();
      if (annotations.some((a) => a.kind === annotation.kind)) {
        throw syntaxError(
          'invalid_annotation',
          `expected each annotation once, found a second @${annotation.kind} on field "${name}"`,
          at,
        );
      }
      checkAnnotationFits(annotation, type, name, at);
      annotations.push(annotation);
    }
    field.annotations = annotations;
    const word = this.#keyword();
    if (annotations.length > 0 && word !== undefined && FIELD_MODIFIERS.includes(word)) {
      throw this.#expected('an annotation, "," or ")"', {
        note: 'required, unique and default come before the annotations',
      });
    }
    return field;
  }

  /**
   * FieldType : "text" | "int" | "float" | "bool" | "timestamp" | "json" | "vector" "<" INT ">" | "[" ElementType "]"
   */
  parseFieldType(): FieldType {
    const token = this.#token;
    const word = this.#keyword();
    if (this.#eatPunct('[')) {
      const inner = this.#token;
      const element = ELEMENT_TYPES.find((t) => t === this.#keyword());
      if (element === undefined) {
        const wanted = `an array's element type (${ELEMENT_TYPES.join(', ')})`;
        throw syntaxError('invalid_type', `expected ${wanted}, found ${show(inner)}`, inner.pos);
      }
      this.#advance();
      this.#expectPunct(']');
      return { kind: 'array', element };
    }
    if (word === 'vector') {
      this.#advance();
      this.#expectPunct('<');
      const dims = this.#token;
      if (dims.kind !== 'number' || !dims.integer || dims.value < 1 || dims.value > 4096) {
        throw syntaxError(
          'invalid_type',
          `expected a dimension from 1 to 4096 in vector<N>, found ${show(dims)}`,
          dims.pos,
        );
      }
      this.#advance();
      this.#expectPunct('>');
      return { kind: 'vector', dims: dims.value };
    }
    const scalar = SCALAR_TYPES.find((t) => t === word);
    if (scalar === undefined) {
      // A name in a type's place is a type this language lacks; anything else is a malformed definition.
      throw this.#expected(`a type (${TYPE_LIST})`, { code: token.kind === 'name' ? 'invalid_type' : 'syntax_error' });
    }
    this.#advance();
    return { kind: 'scalar', scalar };
  }

  /**
   * Annotation : "@" ("hash" | "sorted" | "text" ["(" TOKENIZER ")"] | "ttl" "(" DURATION ")"
   *            | "hnsw" "(" METRIC ("," HnswOption)* ")" | "embed" Embed)
   */
  parseAnnotation(): Annotation {
    const at = this.#advance();
    const word = this.#keyword();
    switch (word) {
      case 'text':
        this.#advance();
        return this.parseText();
      case 'hash':
      case 'sorted':
        this.#advance();
        if (this.#isPunct('(')) {
          throw this.#expected('another annotation, "," or ")"', {
            code: 'invalid_annotation',
            note: `@${word} takes no arguments`,
          });
        }
        return { kind: word };
      case 'ttl':
        this.#advance();
        return this.parseTtl();
      case 'hnsw':
        this.#advance();
        return this.parseHnsw();
      case 'embed':
        this.#advance();
        return this.parseEmbed();
      default: {
        const found = word === undefined ? show(this.#token) : `"@${this.#token.text}"`;
        throw syntaxError('invalid_annotation', `expected an annotation (${ANNOTATION_LIST}), found ${found}`, at.pos);
      }
    }
  }

  /** Text : ["(" ("english" | "porter" | "exact") ")"] — after "@text" */
  parseText(): Annotation {
    if (!this.#eatPunct('(')) return { kind: 'text' };
    const tokenizer = TEXT_TOKENIZERS.find((t) => t === this.#keyword());
    if (tokenizer === undefined) {
      throw this.#expected(`a tokenizer (${TEXT_TOKENIZERS.join(', ')})`, {
        code: 'invalid_annotation',
        note: '@text stems English words; @text(exact) matches words as written',
      });
    }
    this.#advance();
    this.#expectPunct(')', undefined, 'invalid_annotation');
    return { kind: 'text', tokenizer };
  }

  /** Ttl : "(" DURATION ")" — after "@ttl" */
  parseTtl(): Annotation {
    const code = 'invalid_annotation';
    const note = '@ttl takes a duration above zero, as in @ttl(30d)';
    if (!this.#eatPunct('(')) throw this.#expected('"("', { code, note });
    const duration = this.#token;
    if (duration.kind !== 'duration' || duration.value <= 0)
      throw this.#expected('a duration above zero', { code, note });
    this.#advance();
    this.#expectPunct(')', undefined, code);
    return { kind: 'ttl', ms: duration.value };
  }

  /** Hnsw : "(" METRIC ("," ("m" | "ef" | "ef_construction") "=" INT)* ")" — after "@hnsw", each option at most once */
  parseHnsw(): Annotation {
    const code = 'invalid_annotation';
    if (!this.#eatPunct('('))
      throw this.#expected('"("', { code, note: '@hnsw takes a metric, as in @hnsw(cosine, m = 16)' });
    const metric = METRICS.find((m) => m === this.#keyword());
    if (metric === undefined) throw this.#expected(`a metric (${METRICS.join(', ')})`, { code });
    this.#advance();
    const options: { m?: number; ef?: number; efConstruction?: number } = {};
    while (this.#eatPunct(',')) {
      const option = HNSW_OPTION_NAMES.find((name) => name === this.#keyword());
      if (option === undefined)
        throw this.#expected('an option of @hnsw (m = INT, ef = INT or ef_construction = INT)', { code });
      if (options[HNSW_KEYS[option]] !== undefined)
        throw this.#expected(`each option once`, { code, found: `a second "${option}"` });
      this.#advance();
      this.#expectPunct('=', undefined, code);
      const { min, max } = HNSW_OPTIONS[option];
      const value = this.#token;
      if (value.kind !== 'number' || !value.integer || value.value < min || value.value > max) {
        throw this.#expected(`a whole number from ${min} to ${max} for ${option}`, { code });
      }
      this.#advance();
      options[HNSW_KEYS[option]] = value.value;
    }
    this.#expectPunct(')', '"," or ")"', code);
    return { kind: 'hnsw', metric, ...options };
  }

  /** Embed : "(" FIELDNAME ("," FIELDNAME)* ("," "model" "=" STRING)? ")" — after "@embed", each field once */
  parseEmbed(): Annotation {
    const code = 'invalid_annotation';
    const note = '@embed names the text fields it embeds, as in @embed(title, body)';
    if (!this.#eatPunct('(')) throw this.#expected('"("', { code, note });
    const fields: string[] = [];
    let model: string | undefined;
    do {
      // `model = "…"` is the option; a field may be called model too (then no "=" follows).
      if (
        fields.length > 0 &&
        this.#keyword() === 'model' &&
        this.#peek().kind === 'punct' &&
        this.#peek().value === '='
      ) {
        this.#advance();
        this.#advance();
        const name = this.#token;
        if (name.kind !== 'string' || name.value.trim() === '')
          throw this.#expected('the model, a string, as in model = "nomic-embed-text"', { code });
        this.#advance();
        model = name.value;
        break;
      }
      const token = this.#token;
      if (token.kind !== 'name') throw this.#expected('a text field to embed', { code, note });
      const field = this.parseFieldName('reference');
      if (fields.includes(field))
        throw syntaxError(code, `expected each field once in @embed, found "${field}" twice`, token.pos);
      fields.push(field);
    } while (this.#eatPunct(','));
    this.#expectPunct(')', '"," or ")"', code);
    return model === undefined ? { kind: 'embed', fields } : { kind: 'embed', fields, model };
  }

  // Implements conditions and expressions, loosest binding first.

  /** Filter : Cond — where a condition is required: after where, and as a condition alone */
  parseFilter(): Cond {
    if (this.#token.kind === 'eof') throw this.#expected('a condition');
    return this.parseCondition();
  }

  /** Cond : And ("or" And)* */
  parseCondition(): Cond {
    const pos = this.#token.pos;
    const outer = this.#depth;
    let left = this.parseAnd();
    for (let at = this.#token.pos; this.#eatKeyword('or'); at = this.#token.pos) {
      this.#deeper(at);
      left = { kind: 'Or', left, right: this.parseAnd(), pos };
    }
    this.#depth = outer;
    return left;
  }

  /** And : Not ("and" Not)* */
  parseAnd(): Cond {
    const pos = this.#token.pos;
    const outer = this.#depth;
    let left = this.parseNot();
    for (let at = this.#token.pos; this.#eatKeyword('and'); at = this.#token.pos) {
      this.#deeper(at);
      left = { kind: 'And', left, right: this.parseNot(), pos };
    }
    this.#depth = outer;
    return left;
  }

  /** Not : "not" Not | Predicate */
  parseNot(): Cond {
    const pos = this.#token.pos;
    if (!this.#eatKeyword('not')) return this.parsePredicate();
    this.#deeper(pos);
    const operand = this.parseNot();
    this.#depth--;
    return { kind: 'Not', operand, pos };
  }

  /**
   * Predicate : Additive ( CompareOp Additive | "not"? ("has" | "in") Additive | "is" "not"? "null" | "not"? "like"
   * STRING )?
   *
   * Without an operator, an expression stands as a condition (Truth), and a parenthesised condition stands as itself.
   */
  parsePredicate(): Cond {
    const pos = this.#token.pos;
    const left = this.parseAdditive();
    const negated = this.#isKeyword('not') && NEGATABLE.has(this.#peekKeyword() ?? '');
    if (negated) this.#advance();
    const operator = this.#token;
    let cond: Cond;
    if (operator.kind === 'punct' && COMPARE_OPS.has(operator.value)) {
      this.#advance();
      cond = {
        kind: 'Compare',
        op: operator.value as CompareOp,
        left: this.#asValue(left, pos),
        right: this.parseOperand(),
        pos,
      };
    } else {
      switch (this.#keyword()) {
        case 'has':
          this.#advance();
          cond = { kind: 'Has', left: this.#asValue(left, pos), right: this.parseOperand(), pos };
          break;
        case 'in':
          this.#advance();
          cond = { kind: 'In', left: this.#asValue(left, pos), right: this.parseOperand(), pos };
          break;
        case 'like':
          cond = { kind: 'Like', operand: this.#asValue(left, pos), pattern: this.parseLikePattern(), pos };
          break;
        case 'is':
          cond = { kind: 'IsNull', operand: this.#asValue(left, pos), negated: this.parseIsNull(), pos };
          break;
        default:
          return isCond(left) ? left : { kind: 'Truth', expr: left, pos };
      }
    }
    const next = this.#token;
    if ((next.kind === 'punct' && COMPARE_OPS.has(next.value)) || PREDICATE_WORDS.has(this.#keyword() ?? '')) {
      throw this.#expected('"and" or "or" between two tests', { note: 'tests do not chain' });
    }
    return negated ? { kind: 'Not', operand: cond, pos } : cond;
  }

  /** Operand : Additive, which must be a value */
  parseOperand(): Expr {
    const pos = this.#token.pos;
    return this.#asValue(this.parseAdditive(), pos);
  }

  /** LikePattern : "like" STRING */
  parseLikePattern(): string {
    this.#advance();
    const pattern = this.#token;
    if (pattern.kind !== 'string')
      throw this.#expected('a string pattern', { note: 'like takes a string literal, as in like "%fox%"' });
    this.#advance();
    return pattern.value;
  }

  /** IsNull : "is" "not"? "null" — answers whether it was negated */
  parseIsNull(): boolean {
    this.#advance();
    const negated = this.#eatKeyword('not');
    if (!this.#eatKeyword('null')) throw this.#expected(negated ? '"null"' : '"null" or "not null"');
    return negated;
  }

  /** Additive : Multiplicative (("+" | "-") Multiplicative)* */
  parseAdditive(): Term {
    const pos = this.#token.pos;
    const outer = this.#depth;
    let left = this.parseMultiplicative();
    for (let op = this.#eatArithmetic('+', '-'); op !== undefined; op = this.#eatArithmetic('+', '-')) {
      this.#deeper(this.#previous!.pos);
      const value = this.#asValue(left, pos);
      const rightPos = this.#token.pos;
      left = { kind: 'Binary', op, left: value, right: this.#asValue(this.parseMultiplicative(), rightPos), pos };
    }
    this.#depth = outer;
    return left;
  }

  /** Multiplicative : Unary (("*" | "/") Unary)* */
  parseMultiplicative(): Term {
    const pos = this.#token.pos;
    const outer = this.#depth;
    let left = this.parseUnary();
    for (let op = this.#eatArithmetic('*', '/'); op !== undefined; op = this.#eatArithmetic('*', '/')) {
      this.#deeper(this.#previous!.pos);
      const value = this.#asValue(left, pos);
      const rightPos = this.#token.pos;
      left = { kind: 'Binary', op, left: value, right: this.#asValue(this.parseUnary(), rightPos), pos };
    }
    this.#depth = outer;
    return left;
  }

  /** Unary : "-" Unary | Primary — a "-" straight before a number is that number's sign */
  parseUnary(): Term {
    if (!this.#isPunct('-')) return this.parsePrimary();
    const pos = this.#advance().pos;
    const operand = this.#token;
    if (operand.kind === 'number' || operand.kind === 'duration') {
      this.#advance();
      const integer = operand.kind === 'duration' || operand.integer;
      // An int has no negative zero; a float keeps it, as JSON does.
      const value = integer && operand.value === 0 ? 0 : -operand.value;
      return { kind: 'Literal', type: integer ? 'int' : 'float', value, pos };
    }
    this.#deeper(pos);
    const negated = this.#asValue(this.parseUnary(), operand.pos);
    this.#depth--;
    return { kind: 'Negate', operand: negated, pos };
  }

  /** Primary : Literal | PARAM | JWT | NameValue | Array | Object | "(" Cond ")" */
  parsePrimary(): Term {
    const token = this.#token;
    const pos = token.pos;
    switch (token.kind) {
      case 'number':
        this.#advance();
        return { kind: 'Literal', type: token.integer ? 'int' : 'float', value: token.value, pos };
      case 'duration':
        this.#advance();
        return { kind: 'Literal', type: 'int', value: token.value, pos };
      case 'string':
        this.#advance();
        return { kind: 'Literal', type: 'text', value: token.value, pos };
      case 'param':
        this.#advance();
        return { kind: 'Param', index: token.value, pos };
      case 'jwt':
        this.#advance();
        return { kind: 'Jwt', claim: token.value, pos };
      case 'name':
        return this.parseNameValue();
      case 'punct':
        if (token.value === '[') return this.parseArray();
        if (token.value === '{') return this.parseObject(false);
        if (token.value === '(') {
          this.#advance();
          this.#deeper(pos);
          const inner = this.parseCondition();
          this.#depth--;
          if (!this.#eatPunct(')'))
            throw this.#expected('")"', { note: `to close the "(" at line ${pos.line}, column ${pos.column}` });
          return inner;
        }
    }
    throw this.#expected('a value');
  }

  /** NameValue : "true" | "false" | "null" | Call | FIELDNAME */
  parseNameValue(): Expr {
    const token = this.#token;
    const word = this.#keyword() ?? '';
    if (word === 'true' || word === 'false' || word === 'null') {
      this.#advance();
      return word === 'null'
        ? { kind: 'Literal', type: 'null', value: null, pos: token.pos }
        : { kind: 'Literal', type: 'bool', value: word === 'true', pos: token.pos };
    }
    if (this.#peek().kind === 'punct' && this.#peek().value === '(') return this.parseCall();
    if (word === 'now') {
      this.#advance();
      throw this.#expected('"("', { note: 'now() is a function' });
    }
    if (OPERATOR_WORDS.has(word)) throw this.#expected('a value');
    return { kind: 'Field', name: this.parseFieldName('reference'), pos: token.pos };
  }

  /** Call : FUNCTION "(" (Value ("," Value)*)? ")" ; FUNCTION : now | len | lower | upper | coalesce */
  parseCall(): CallExpr {
    const token = this.#token;
    const fn = FUNCTIONS.find((f) => f === this.#keyword());
    if (fn === undefined) {
      throw syntaxError('syntax_error', `expected a function (${FUNCTION_LIST}), found "${token.text}"`, token.pos);
    }
    this.#advance();
    this.#advance();
    this.#deeper(token.pos);
    const args: Expr[] = [];
    if (!this.#isPunct(')')) {
      do args.push(this.parseValue());
      while (this.#eatPunct(','));
    }
    this.#expectPunct(')', '"," or ")"');
    this.#depth--;
    const arity = FUNCTION_ARITY[fn];
    if (args.length !== arity) {
      const wanted = arity === 0 ? 'no arguments' : arity === 1 ? '1 argument' : `${arity} arguments`;
      throw syntaxError('syntax_error', `expected ${wanted} for ${fn}(), found ${args.length}`, token.pos);
    }
    return { kind: 'Call', fn, args, pos: token.pos };
  }

  /** Array : "[" (Value ("," Value)*)? "]" */
  parseArray(): ArrayExpr {
    const pos = this.#advance().pos;
    this.#deeper(pos);
    const items: Expr[] = [];
    if (!this.#isPunct(']')) {
      do items.push(this.parseValue());
      while (this.#eatPunct(','));
    }
    this.#expectPunct(']', '"," or "]"');
    this.#depth--;
    return { kind: 'Array', items, pos };
  }

  /** Object : "{" (Key ":" Value ("," Key ":" Value)*)? "}" ; Key : NAME | STRING */
  parseObject(keysAreFields: boolean): ObjectExpr {
    const pos = this.#advance().pos;
    this.#deeper(pos);
    const entries: ObjectEntry[] = [];
    const keys = new Set<string>();
    if (!this.#isPunct('}')) {
      do {
        const key = this.#token;
        if (key.kind !== 'name' && key.kind !== 'string') throw this.#expected('a key (a name or a string)');
        if (keysAreFields) checkNotReserved(key.value, 'field', key.pos);
        if (keys.has(key.value)) {
          throw syntaxError(
            'duplicate_field',
            `expected each key once in an object, found "${key.value}" a second time`,
            key.pos,
          );
        }
        keys.add(key.value);
        this.#advance();
        this.#expectPunct(':');
        entries.push({ key: key.value, value: this.parseValue(), pos: key.pos });
      } while (this.#eatPunct(','));
    }
    this.#expectPunct('}', '"," or "}"');
    this.#depth--;
    return { kind: 'Object', entries, pos };
  }

  /** Value : Cond that turns out to be an expression (a Truth is unwrapped to its expression) */
  parseValue(): Expr {
    const pos = this.#token.pos;
    return this.#asValue(this.parseCondition(), pos);
  }

  // Token helpers.

  /** Opens one more level at `pos`; past MAX_DEPTH the statement is refused before it is read further. */
  #deeper(pos: Position): void {
    if (++this.#depth > MAX_DEPTH) throw tooDeep(pos);
  }

  #asValue(term: Term, pos: Position): Expr {
    if (!isCond(term)) return term;
    if (term.kind === 'Truth') return term.expr;
    throw syntaxError(
      'syntax_error',
      'expected a value, found a condition (a condition cannot stand where a value is expected)',
      pos,
    );
  }

  #advance(): Token {
    const token = this.#token;
    this.#previous = token;
    this.#token = this.#peeked ?? this.#lexer.next();
    this.#peeked = undefined;
    return token;
  }

  #peek(): Token {
    this.#peeked ??= this.#lexer.next();
    return this.#peeked;
  }

  /** The current token as a keyword (lower-cased), if it is a name. */
  #keyword(): string | undefined {
    return this.#token.kind === 'name' ? this.#token.value.toLowerCase() : undefined;
  }

  #peekKeyword(): string | undefined {
    const next = this.#peek();
    return next.kind === 'name' ? next.value.toLowerCase() : undefined;
  }

  #isKeyword(word: string): boolean {
    return this.#keyword() === word;
  }

  #eatKeyword(word: string): boolean {
    if (!this.#isKeyword(word)) return false;
    this.#advance();
    return true;
  }

  #expectKeyword(word: string): void {
    if (!this.#eatKeyword(word)) throw this.#expected(`"${word}"`);
  }

  #isPunct(value: Punct): boolean {
    return this.#token.kind === 'punct' && this.#token.value === value;
  }

  #eatPunct(value: Punct): boolean {
    if (!this.#isPunct(value)) return false;
    this.#advance();
    return true;
  }

  #expectPunct(value: Punct, what = `"${value}"`, code: ErrorCode = 'syntax_error'): void {
    if (!this.#eatPunct(value)) throw this.#expected(what, { code });
  }

  #eatArithmetic<Op extends ArithmeticOp>(...ops: Op[]): Op | undefined {
    const token = this.#token;
    const op = ops.find((o) => token.kind === 'punct' && token.value === o);
    if (op !== undefined) this.#advance();
    return op;
  }

  /** The error for the current token: "expected WHAT after PREVIOUS, found TOKEN (NOTE)". */
  #expected(what: string, options: ExpectedOptions = {}): FenecError {
    const after = this.#previous === undefined ? '' : ` after ${show(this.#previous)}`;
    const note = options.note === undefined ? '' : ` (${options.note})`;
    const found = options.found ?? show(this.#token);
    return syntaxError(
      options.code ?? 'syntax_error',
      `expected ${what}${after}, found ${found}${note}`,
      this.#token.pos,
    );
  }
}

function checkNotReserved(name: string, role: 'collection' | 'field', pos: Position): string {
  if (name.startsWith('_')) {
    throw syntaxError(
      'invalid_name',
      `expected a ${role} name that does not start with "_", found "${name}" (such names are reserved for the system)`,
      pos,
    );
  }
  return name;
}

/** The annotations' fit to their field's type, which the parser can check without a catalogue. */
function checkAnnotationFits(annotation: Annotation, type: FieldType, field: string, pos: Position): void {
  const scalar = type.kind === 'scalar' ? type.scalar : undefined;
  let fits: boolean;
  let wanted: string;
  switch (annotation.kind) {
    case 'text':
      fits = scalar === 'text' || (type.kind === 'array' && type.element === 'text');
      wanted = 'a text or [text] field';
      break;
    case 'ttl':
      fits = scalar === 'timestamp';
      wanted = 'a timestamp field';
      break;
    case 'hnsw':
    case 'embed':
      fits = type.kind === 'vector';
      wanted = 'a vector<N> field';
      break;
    case 'hash':
    case 'sorted':
      fits = type.kind !== 'vector' && scalar !== 'json';
      wanted = 'a field that is neither a vector nor json';
      break;
  }
  if (!fits) {
    throw syntaxError(
      'invalid_annotation',
      `expected @${annotation.kind} on ${wanted}, found it on field "${field}" of type ${printFieldType(type)}`,
      pos,
    );
  }
}
