// JSON walked as UTF-8 bytes, for answers whose records are copied without being decoded: every byte
// JSON gives a meaning to is ASCII, and no byte of a multi-byte character is ASCII, so a value's
// bounds are found on the bytes as they came, and its bytes go out untouched.

export const QUOTE = 34;
export const BACKSLASH = 92;
export const COMMA = 44;
export const COLON = 58;
export const OPEN_LIST = 91;
export const CLOSE_LIST = 93;
export const OPEN_OBJECT = 123;
export const CLOSE_OBJECT = 125;
export const LF = 10;
export const CR = 13;
export const TAB = 9;
export const SPACE = 32;

/** Bytes that are not the JSON they were taken for (another shape of answer): read them another way. */
export class NotTheJson extends Error {}

export const isSpaceByte = (c: number): boolean => c === SPACE || c === LF || c === CR || c === TAB;

export function skipSpaceBytes(b: Uint8Array, at: number): number {
  while (at < b.length && isSpaceByte(b[at]!)) at++;
  return at;
}

/** `at` is an opening quote; returns the index after its closing quote. */
export function skipStringBytes(b: Uint8Array, at: number): number {
  // A plain loop: most strings are short, and a call to indexOf costs more than the bytes it skips.
  const length = b.length;
  for (let i = at + 1; i < length; i++) {
    const c = b[i];
    if (c === BACKSLASH) i++;
    else if (c === QUOTE) return i + 1;
  }
  throw new NotTheJson("unterminated string");
}

/** Returns the index after the value starting at `at` (a string, list, object, number or literal). */
export function skipValueBytes(b: Uint8Array, at: number): number {
  const c = b[at];
  if (c === QUOTE) return skipStringBytes(b, at);
  if (c === OPEN_LIST || c === OPEN_OBJECT) {
    let depth = 0;
    for (let i = at; i < b.length; ) {
      const d = b[i]!;
      if (d === QUOTE) {
        i = skipStringBytes(b, i);
        continue;
      }
      if (d === OPEN_LIST || d === OPEN_OBJECT) depth++;
      else if ((d === CLOSE_LIST || d === CLOSE_OBJECT) && --depth === 0) return i + 1;
      i++;
    }
    throw new NotTheJson("unterminated list or object");
  }
  let i = at;
  while (i < b.length) {
    const d = b[i]!;
    if (d === COMMA || d === CLOSE_LIST || d === CLOSE_OBJECT || isSpaceByte(d)) break;
    i++;
  }
  if (i === at) throw new NotTheJson(`unexpected byte at ${at}`);
  return i;
}

const utf8 = new TextEncoder();

/** Whether the bytes at `at` are the JSON string `"key"` written plainly (keys here need no escapes). */
function isKey(b: Uint8Array, at: number, key: Uint8Array): boolean {
  if (at + key.length > b.length) return false;
  for (let k = 0; k < key.length; k++) if (b[at + k] !== key[k]) return false;
  return true;
}

/**
 * Where the value of `outer.inner` begins in the JSON object held in `b` (CKAN's `result.records`),
 * found by walking the object's members, so a filter echoed back with that name cannot mislead it.
 * -1: the object has no such member.
 */
export function memberAt(b: Uint8Array, outer: string, inner: string): number {
  const keys = [utf8.encode(JSON.stringify(outer)), utf8.encode(JSON.stringify(inner))];
  let at = skipSpaceBytes(b, 0);
  for (let level = 0; level < keys.length; level++) {
    if (b[at] !== OPEN_OBJECT) return -1;
    let i = skipSpaceBytes(b, at + 1);
    let found = -1;
    while (found < 0 && b[i] === QUOTE) {
      const keyEnd = skipStringBytes(b, i);
      const match = keyEnd - i === keys[level]!.length && isKey(b, i, keys[level]!);
      i = skipSpaceBytes(b, keyEnd);
      if (b[i] !== COLON) throw new NotTheJson("expected a colon");
      const valueAt = skipSpaceBytes(b, i + 1);
      if (match) {
        found = valueAt;
        break;
      }
      i = skipSpaceBytes(b, skipValueBytes(b, valueAt));
      if (b[i] === COMMA) i = skipSpaceBytes(b, i + 1);
      else if (b[i] !== CLOSE_OBJECT) throw new NotTheJson("expected a comma");
    }
    if (found < 0) return -1;
    at = found;
  }
  return at;
}
