// A text cell's UTF-8 bytes written straight from CKAN's JSON text of it: no string made per value
// (slicing off the quotes, JSON.parse for escapes and TextEncoder cost a third of the Parquet
// writer's CPU). The bytes are TextEncoder's for the text JSON.parse gives: escapes read (surrogate
// pairs written as \uXXXX\uXXXX joined), a lone surrogate written as U+FFFD.

/** The most bytes the UTF-8 of JSON text `raw` can take: 3 per UTF-16 unit. */
export const utf8Room = (raw: string): number => 3 * raw.length;

const HEX = (c: number): number => (c <= 57 ? c - 48 : (c | 32) - 87);

/** The UTF-16 unit of the escape whose letter is at `at` (`\n`, `\uXXXX`, ...). */
function escaped(raw: string, at: number): number {
  const c = raw.charCodeAt(at);
  switch (c) {
    case 98:
      return 8;
    case 102:
      return 12;
    case 110:
      return 10;
    case 114:
      return 13;
    case 116:
      return 9;
    case 117:
      return (
        (HEX(raw.charCodeAt(at + 1)) << 12) |
        (HEX(raw.charCodeAt(at + 2)) << 8) |
        (HEX(raw.charCodeAt(at + 3)) << 4) |
        HEX(raw.charCodeAt(at + 4))
      );
    default:
      return c; // \" \\ \/
  }
}

/** One code point's UTF-8 (above U+007F) at `p`; returns where it ends. */
function multiByte(cp: number, out: Uint8Array, p: number): number {
  if (cp < 0x800) {
    out[p++] = 0xc0 | (cp >> 6);
  } else if (cp < 0x10000) {
    out[p++] = 0xe0 | (cp >> 12);
    out[p++] = 0x80 | ((cp >> 6) & 0x3f);
  } else {
    out[p++] = 0xf0 | (cp >> 18);
    out[p++] = 0x80 | ((cp >> 12) & 0x3f);
    out[p++] = 0x80 | ((cp >> 6) & 0x3f);
  }
  out[p++] = 0x80 | (cp & 0x3f);
  return p;
}

/**
 * The UTF-8 of `raw[from, to)` at `p` in `out` (room checked by the caller: utf8Room), escapes read
 * when `unescape`; returns where the bytes end.
 */
export function utf8Of(raw: string, from: number, to: number, unescape: boolean, out: Uint8Array, p: number): number {
  let high = 0; // a high surrogate waiting for its low half
  for (let at = from; at < to; at++) {
    let c = raw.charCodeAt(at);
    if (c < 0x80 && high === 0 && (c !== 92 || !unescape)) {
      out[p++] = c;
      continue;
    }
    if (c === 92 && unescape) {
      const letter = raw.charCodeAt(++at);
      c = escaped(raw, at);
      if (letter === 117) at += 4;
    }
    if (high !== 0) {
      if (c >= 0xdc00 && c <= 0xdfff) {
        p = multiByte(0x10000 + ((high - 0xd800) << 10) + (c - 0xdc00), out, p);
        high = 0;
        continue;
      }
      p = multiByte(0xfffd, out, p);
      high = 0;
    }
    if (c < 0x80) out[p++] = c;
    else if (c >= 0xd800 && c <= 0xdbff) high = c;
    else p = multiByte(c >= 0xdc00 && c <= 0xdfff ? 0xfffd : c, out, p);
  }
  return high === 0 ? p : multiByte(0xfffd, out, p);
}

/** A text cell's bytes: a JSON string's text, or the JSON text itself for any other value (a number in a text column). */
export const textUtf8 = (raw: string, out: Uint8Array, p: number): number =>
  raw.charCodeAt(0) === 34 ? utf8Of(raw, 1, raw.length - 1, true, out, p) : utf8Of(raw, 0, raw.length, false, out, p);

/** A JSON cell's bytes: CKAN's JSON text as it is. */
export const jsonUtf8 = (raw: string, out: Uint8Array, p: number): number => utf8Of(raw, 0, raw.length, false, out, p);
