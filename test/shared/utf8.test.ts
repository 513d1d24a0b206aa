import { expect } from 'chai';
import { describeByte, invalidUtf8At } from '../../shared/utf8.js';

const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);

describe('invalidUtf8At', () => {
  it('finds nothing in UTF-8: ASCII, accents, every plane', () => {
    expect(invalidUtf8At(Buffer.from('plain {"a": 1}'))).to.equal(-1);
    expect(invalidUtf8At(Buffer.from('é ü ß — 中文 🦊 \u{10ffff}'))).to.equal(-1);
    expect(invalidUtf8At(bytes())).to.equal(-1);
  });

  it('points at the first byte that begins no character, whatever the fault', () => {
    const cases: [string, Uint8Array, number][] = [
      ['a Latin-1 byte', bytes(0x61, 0xe9, 0x61), 1],
      ['0xff', bytes(0x7b, 0x22, 0xff), 2],
      ['a lone continuation byte', bytes(0x61, 0x80), 1],
      ['an overlong NUL (C0 80)', bytes(0xc0, 0x80), 0],
      ['an overlong three-byte form (E0 80 80)', bytes(0x61, 0xe0, 0x80, 0x80), 1],
      ['a surrogate (ED A0 80)', bytes(0x61, 0x62, 0xed, 0xa0, 0x80), 2],
      ['past U+10FFFF (F4 90 80 80)', bytes(0xf4, 0x90, 0x80, 0x80), 0],
      ['a character cut at the end', bytes(0x61, 0xe2, 0x82), 1],
    ];
    for (const [name, input, at] of cases) expect(invalidUtf8At(input), name).to.equal(at);
  });

  it('names the byte as a refusal shows it', () => {
    expect(describeByte(bytes(0x61, 0x0f), 1)).to.equal('byte 1 (0x0f)');
  });
});
