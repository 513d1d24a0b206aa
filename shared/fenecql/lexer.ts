/**
 * The FenecQL lexer: statement text in, tokens out, one at a time.
 *
 * Tokens are read on demand rather than all up front, so that the error reported is the first one in
 * reading order: a bad character late in a statement does not hide a syntax error before it.
 */
import { DURATION_UNIT_LIST, unitMs } from '../duration.js';
import { FenecError } from '../errors.js';
import type { ErrorCode, Position } from '../errors.js';
import { loneSurrogateAt, surrogateEscape } from './limits.js';

export type Punct =
  | '('
  | ')'
  | '['
  | ']'
  | '{'
  | '}'
  | ','
  | ':'
  | ';'
  | '='
  | '!='
  | '<'
  | '<='
  | '>'
  | '>='
  | '+'
  | '-'
  | '*'
  | '/'
  | '@';

interface Span {
  /** The token as written (a string keeps its quotes and escapes). */
  readonly text: string;
  readonly pos: Position;
}

export type Token = Span &
  (
    | { readonly kind: 'name'; readonly value: string }
    | { readonly kind: 'string'; readonly value: string }
    | { readonly kind: 'number'; readonly value: number; readonly integer: boolean }
    /** Milliseconds. */
    | { readonly kind: 'duration'; readonly value: number }
    /** 1-based index into the request's params. */
    | { readonly kind: 'param'; readonly value: number }
    /** The claim's name. */
    | { readonly kind: 'jwt'; readonly value: string }
    | { readonly kind: 'punct'; readonly value: Punct }
    | { readonly kind: 'eof'; readonly value: null }
  );

const MAX_NAME_LENGTH = 64;

/** FenecQL's rule for a name: `[A-Za-z_][A-Za-z0-9_]*`, at most 64 characters. */
export function isName(text: string): boolean {
  return text.length <= MAX_NAME_LENGTH && /^[A-Za-z_][A-Za-z0-9_]*$/.test(text);
}

/**
 * The one factory for every error of the language phase (lexer and parser alike): a catalogue code,
 * a message saying what was expected and what was found, and where, both in the text and as data.
 */
export function syntaxError(code: ErrorCode, message: string, pos: Position): FenecError {
  return new FenecError(code, `${message} at line ${pos.line}, column ${pos.column}`, { position: pos });
}

const SINGLE: Readonly<Record<string, Punct>> = {
  '(': '(',
  ')': ')',
  '[': '[',
  ']': ']',
  '{': '{',
  '}': '}',
  ',': ',',
  ':': ':',
  ';': ';',
  '=': '=',
  '+': '+',
  '*': '*',
  '/': '/',
  '@': '@',
};

const ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
};

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isNameStart = (c: number): boolean => (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;
const isNameChar = (c: number): boolean => isNameStart(c) || isDigit(c);
const isHex = (c: number): boolean => isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);

/** A character as a message shows it: printable ones quoted, every one with its code point. */
function showChar(text: string, offset: number): string {
  const code = text.codePointAt(offset) ?? 0;
  const hex = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return code < 0x20 || code === 0x7f ? hex : `"${String.fromCodePoint(code)}" (${hex})`;
}

export class Lexer {
  readonly #text: string;
  #offset = 0;
  #line = 1;
  #lineStart = 0;

  constructor(text: string) {
    this.#text = text;
  }

  /** The next token; at the end of the text, an `eof` token, on this and every later call. */
  next(): Token {
    this.#skipTrivia();
    const text = this.#text;
    const start = this.#offset;
    const pos = this.#position(start);
    if (start >= text.length) return { kind: 'eof', value: null, text: '', pos };
    const ch = text.charAt(start);
    const code = text.charCodeAt(start);
    const single = SINGLE[ch];
    if (single !== undefined) return this.#punct(single, pos);
    switch (ch) {
      case '-': // `--` was taken as a comment by #skipTrivia
        return this.#punct('-', pos);
      case '<':
      case '>':
        return this.#punct(text.charAt(start + 1) === '=' ? (`${ch}=` as Punct) : (ch as Punct), pos);
      case '!':
        if (text.charAt(start + 1) === '=') return this.#punct('!=', pos);
        throw syntaxError('invalid_character', `unexpected character "!" (did you mean "!="?)`, pos);
      case '"':
        return this.#readString(pos);
      case '$':
        return this.#readParameter(pos);
    }
    if (isDigit(code)) return this.#readNumber(pos);
    if (isNameStart(code)) return this.#readName(pos);
    throw syntaxError('invalid_character', `unexpected character ${showChar(text, start)}`, pos);
  }

  #position(offset: number): Position {
    return { line: this.#line, column: offset - this.#lineStart + 1, offset };
  }

  #punct(value: Punct, pos: Position): Token {
    this.#offset += value.length;
    return { kind: 'punct', value, text: value, pos };
  }

  /** Whitespace (JSON's four characters) and `--` comments; the only places a line can break. */
  #skipTrivia(): void {
    const text = this.#text;
    for (;;) {
      const c = text.charCodeAt(this.#offset);
      if (c === 0x20 || c === 0x09 || c === 0x0d) {
        this.#offset++;
      } else if (c === 0x0a) {
        this.#offset++;
        this.#line++;
        this.#lineStart = this.#offset;
      } else if (c === 0x2d && text.charCodeAt(this.#offset + 1) === 0x2d) {
        const end = text.indexOf('\n', this.#offset);
        this.#offset = end < 0 ? text.length : end;
      } else {
        return;
      }
    }
  }

  /** NAME : [A-Za-z_][A-Za-z0-9_]* of at most 64 characters */
  #readName(pos: Position): Token {
    const end = this.#scanName(pos.offset);
    const value = this.#text.slice(pos.offset, end);
    if (value.length > MAX_NAME_LENGTH) {
      throw syntaxError(
        'invalid_name',
        `expected a name of at most ${MAX_NAME_LENGTH} characters, found one of ${value.length} ("${value.slice(0, 20)}…")`,
        pos,
      );
    }
    this.#offset = end;
    return { kind: 'name', value, text: value, pos };
  }

  #scanName(from: number): number {
    let i = from;
    while (isNameChar(this.#text.charCodeAt(i))) i++;
    return i;
  }

  /** STRING : a JSON string; a raw line break or control character is refused as JSON refuses it */
  #readString(pos: Position): Token {
    const text = this.#text;
    const unterminated = (found: string): FenecError =>
      syntaxError('unterminated_string', `expected a closing " for the string that starts here, found ${found}`, pos);
    let value = '';
    let i = pos.offset + 1;
    let segment = i;
    for (;;) {
      if (i >= text.length) throw unterminated('the end of the input');
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c === 0x0a || c === 0x0d) throw unterminated('the end of the line (a string cannot span lines; write \\n)');
      if (c < 0x20) {
        throw syntaxError(
          'invalid_character',
          `expected an escape in place of the raw control character ${showChar(text, i)} inside a string`,
          this.#position(i),
        );
      }
      if (c !== 0x5c) {
        i++;
        continue;
      }
      if (i + 1 >= text.length) throw unterminated('the end of the input');
      value += text.slice(segment, i);
      const [decoded, length] = this.#readEscape(i);
      value += decoded;
      i += length;
      segment = i;
    }
    value += text.slice(segment, i);
    const lone = loneSurrogateAt(value);
    if (lone >= 0) {
      throw syntaxError(
        'invalid_escape',
        `expected Unicode in the string that starts here, found a lone surrogate (${surrogateEscape(value, lone)}) as its character ${lone}; a character past U+FFFF is a pair, \\ud83d\\ude00`,
        pos,
      );
    }
    this.#offset = i + 1;
    return { kind: 'string', value, text: text.slice(pos.offset, i + 1), pos };
  }

  /** One escape at `at` (the backslash): its character and how many source characters it took. */
  #readEscape(at: number): [string, number] {
    const text = this.#text;
    const letter = text.charAt(at + 1);
    const simple = ESCAPES[letter];
    if (simple !== undefined) return [simple, 2];
    if (letter === 'u') {
      const hex = text.slice(at + 2, at + 6);
      if (hex.length === 4 && [...hex].every((h) => isHex(h.charCodeAt(0)))) {
        return [String.fromCharCode(parseInt(hex, 16)), 6];
      }
      const found = `"\\u${hex.replace(/["\n\r].*$/s, '')}"`;
      throw syntaxError('invalid_escape', `expected four hex digits after \\u, found ${found}`, this.#position(at));
    }
    const found = letter.charCodeAt(0) < 0x20 ? `"\\" followed by ${showChar(text, at + 1)}` : `"\\${letter}"`;
    throw syntaxError(
      'invalid_escape',
      `expected one of the escapes \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX, found ${found}`,
      this.#position(at),
    );
  }

  /**
   * NUMBER : a JSON number without its sign (the parser folds a leading "-").
   * DURATION : an integer immediately followed by a unit (ms s m h d w), in milliseconds.
   */
  #readNumber(pos: Position): Token {
    const text = this.#text;
    const start = pos.offset;
    let i = start;
    while (isDigit(text.charCodeAt(i))) i++;
    if (i - start > 1 && text.charAt(start) === '0') {
      throw syntaxError(
        'invalid_number',
        `expected a number without leading zeros, found "${text.slice(start, i)}"`,
        pos,
      );
    }
    let integer = true;
    if (text.charAt(i) === '.') {
      i++;
      if (!isDigit(text.charCodeAt(i))) {
        throw syntaxError(
          'invalid_number',
          `expected a digit after the decimal point, found "${text.slice(start, i + 1)}"`,
          pos,
        );
      }
      while (isDigit(text.charCodeAt(i))) i++;
      integer = false;
    }
    const e = text.charAt(i);
    if (e === 'e' || e === 'E') {
      const sign = text.charAt(i + 1) === '+' || text.charAt(i + 1) === '-' ? 1 : 0;
      if (isDigit(text.charCodeAt(i + 1 + sign))) {
        i += 1 + sign;
        while (isDigit(text.charCodeAt(i))) i++;
        integer = false;
      } else if (sign === 1) {
        throw syntaxError(
          'invalid_number',
          `expected a digit in the exponent, found "${text.slice(start, i + 2)}"`,
          pos,
        );
      }
    }
    if (isNameStart(text.charCodeAt(i))) return this.#readDuration(pos, i, integer);
    const written = text.slice(start, i);
    const value = Number(written);
    if (integer ? !Number.isSafeInteger(value) : !Number.isFinite(value)) {
      throw syntaxError('invalid_number', `expected a number inside ±2^53, found ${written}`, pos);
    }
    this.#offset = i;
    return { kind: 'number', value, integer, text: written, pos };
  }

  #readDuration(pos: Position, unitStart: number, integer: boolean): Token {
    const text = this.#text;
    const end = this.#scanName(unitStart);
    const written = text.slice(pos.offset, end);
    const unit = text.slice(unitStart, end);
    const ms = unitMs(unit);
    if (!integer || ms === undefined) {
      throw syntaxError(
        'invalid_duration',
        `expected a duration (a whole number and one of the units ${DURATION_UNIT_LIST}, as in 30m), found "${written}"`,
        pos,
      );
    }
    const value = Number(text.slice(pos.offset, unitStart)) * ms;
    if (!Number.isSafeInteger(value)) {
      throw syntaxError('invalid_number', `expected a duration inside ±2^53 milliseconds, found ${written}`, pos);
    }
    this.#offset = end;
    return { kind: 'duration', value, text: written, pos };
  }

  /** PARAM : "$" 1…99 ; JWT : "$jwt." NAME */
  #readParameter(pos: Position): Token {
    const text = this.#text;
    const start = pos.offset;
    const end = this.#scanName(start + 1);
    const word = text.slice(start + 1, end);
    if (word === 'jwt' && text.charAt(end) === '.') {
      const claimEnd = this.#scanName(end + 1);
      const claim = text.slice(end + 1, claimEnd);
      if (!isName(claim)) {
        throw syntaxError(
          'invalid_parameter',
          `expected a claim name after "$jwt." (a name such as $jwt.sub), found "${text.slice(start, Math.max(claimEnd, end + 2))}"`,
          pos,
        );
      }
      this.#offset = claimEnd;
      return { kind: 'jwt', value: claim, text: text.slice(start, claimEnd), pos };
    }
    const index = /^[1-9][0-9]?$/.test(word) ? Number(word) : 0;
    if (index === 0) {
      const found = word === '' ? (end < text.length ? `"$${text.charAt(end)}"` : '"$" alone') : `"$${word}"`;
      throw syntaxError(
        'invalid_parameter',
        `expected a parameter $1 to $99 or a claim $jwt.NAME, found ${found}`,
        pos,
      );
    }
    this.#offset = end;
    return { kind: 'param', value: index, text: `$${word}`, pos };
  }
}
