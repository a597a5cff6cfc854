import { wordsOut } from "./csv-records.ts";

/**
 * Bytes known in advance (a JSON key, sheet markup) as little-endian 32-bit words, the last padded,
 * and their length: written four bytes at a time (byte by byte, JSON keys took a sixth of a page's
 * time, sheet markup a fifth of a sheet's XML).
 */
export interface Words {
  words: Int32Array;
  length: number;
}

export function wordsOf(text: string): Words {
  const bytes = new TextEncoder().encode(text);
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  return {
    words: Int32Array.from({ length: padded.length / 4 }, (_, k) => view.getInt32(4 * k, true)),
    length: bytes.length,
  };
}

/**
 * `words` into `out` at `o`; returns their end. The last word's padding, up to three bytes past
 * the end, lands where what follows goes: the caller keeps that room in `out` and writes over it.
 */
export function putWords(out: Uint8Array, o: number, words: Words): number {
  const to = wordsOut(out);
  const all = words.words;
  for (let k = 0; k < all.length; k++) to.setInt32(o + 4 * k, all[k]!, true);
  return o + words.length;
}
