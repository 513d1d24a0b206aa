/**
 * Whether bytes sent as JSON are UTF-8. Decoding them as UTF-8 turns every malformed byte into
 * U+FFFD without a word, so a file saved as Latin-1 would be stored with its accents replaced; a
 * request that is not UTF-8 is refused instead, naming the first byte that is not.
 */
import { isUtf8 } from 'node:buffer';

/** The offset of the first byte of `bytes` that begins no well-formed UTF-8 character, or -1. */
export function invalidUtf8At(bytes: Uint8Array): number {
  if (isUtf8(bytes)) return -1;
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i]!;
    const follow =
      lead < 0x80
        ? 0
        : lead >= 0xc2 && lead <= 0xdf
          ? 1
          : lead >= 0xe0 && lead <= 0xef
            ? 2
            : lead >= 0xf0 && lead <= 0xf4
              ? 3
              : -1;
    if (follow < 0) return i;
    for (let k = 1; k <= follow; k++) {
      const next = bytes[i + k];
      // The second byte's range is narrower after some leads: no overlong forms, no surrogates, nothing past U+10FFFF.
      const low = k === 1 && lead === 0xe0 ? 0xa0 : k === 1 && lead === 0xf0 ? 0x90 : 0x80;
      const high = k === 1 && lead === 0xed ? 0x9f : k === 1 && lead === 0xf4 ? 0x8f : 0xbf;
      if (next === undefined || next < low || next > high) return i;
    }
    i += follow + 1;
  }
  return -1;
}

/** What a refusal says of the byte at `at`: `byte 12 (0xff)`. */
export function describeByte(bytes: Uint8Array, at: number): string {
  return `byte ${at} (0x${bytes[at]!.toString(16).padStart(2, '0')})`;
}
