// JSON walked as UTF-8 bytes, the one scanner of CKAN's answers: every byte JSON gives a meaning to is
// ASCII, and no byte of a multi-byte character is ASCII, so a value's bounds are found on the bytes as
// they came. Readers that copy records never decode them; the row path (ckan/raw-json.ts) slices each
// value from the answer's text, decoded once, at the UTF-16 offsets the skippers keep count of.

// The skippers compare every byte with these module constants: an exported binding lives in a module
// cell that each comparison reads, which measured the row path about a quarter slower (a 32,000-row page,
// in Node). Other modules import the exported names.
const quote = 34;
const backslash = 92;
const comma = 44;
const colon = 58;
const openList = 91;
const closeList = 93;
const openObject = 123;
const closeObject = 125;
const lf = 10;
const cr = 13;
const tab = 9;
const space = 32;

export const QUOTE = quote;
export const BACKSLASH = backslash;
export const COMMA = comma;
export const COLON = colon;
export const OPEN_LIST = openList;
export const CLOSE_LIST = closeList;
export const OPEN_OBJECT = openObject;
export const CLOSE_OBJECT = closeObject;
export const LF = lf;
export const CR = cr;
export const TAB = tab;
export const SPACE = space;

/** Bytes that are not the JSON they were taken for (another shape of answer): read them another way. */
export class NotTheJson extends Error {}

export const isSpaceByte = (c: number | undefined): boolean => c === space || c === lf || c === cr || c === tab;

/**
 * Bytes the skippers passed since `countUnitsFrom` that have no UTF-16 code unit of their own: the byte
 * at `i` of valid UTF-8 is the decoded text's code unit `i - extraBytes`. Counting costs a comparison
 * per byte, and lets the row path walk the bytes, which measured a little faster than walking the text.
 */
export let extraBytes = 0;

/** Starts the count; `bytes` are those before the scan starts that have no code unit (a BOM). */
export function countUnitsFrom(bytes: number): void {
  extraBytes = bytes;
}

export function skipSpaceBytes(b: Uint8Array, at: number): number {
  while (at < b.length && isSpaceByte(b[at]!)) at++;
  return at;
}

/** A byte of a multi-byte character: a continuation byte has no code unit, a 4-byte lead makes a surrogate pair. */
function countNonAscii(c: number): void {
  if (c < 0xc0) extraBytes++;
  else if (c >= 0xf0) extraBytes--;
}

/** `at` is an opening quote; returns the index after its closing quote. */
export function skipStringBytes(b: Uint8Array, at: number): number {
  // A plain loop: most strings are short, and a call to indexOf costs more than the bytes it skips.
  const length = b.length;
  for (let i = at + 1; i < length; i++) {
    const c = b[i]!;
    if (c === quote) return i + 1;
    if (c === backslash) {
      // An escape's second byte is ASCII in JSON; counted anyway, so no text can shift the count.
      const escaped = b[++i]!;
      if (escaped >= 0x80) countNonAscii(escaped);
    } else if (c >= 0x80) countNonAscii(c);
  }
  throw new NotTheJson("unterminated string");
}

/** Returns the index after the value starting at `at` (a string, list, object, number or literal). */
export function skipValueBytes(b: Uint8Array, at: number): number {
  const c = b[at];
  if (c === quote) return skipStringBytes(b, at);
  if (c === openList || c === openObject) {
    let depth = 0;
    for (let i = at; i < b.length; ) {
      const d = b[i]!;
      if (d === quote) {
        i = skipStringBytes(b, i);
        continue;
      }
      if (d === openList || d === openObject) depth++;
      else if ((d === closeList || d === closeObject) && --depth === 0) return i + 1;
      else if (d >= 0x80) countNonAscii(d);
      i++;
    }
    throw new NotTheJson("unterminated list or object");
  }
  let i = at;
  while (i < b.length) {
    const d = b[i]!;
    if (d === comma || d === closeList || d === closeObject || isSpaceByte(d)) break;
    if (d >= 0x80) countNonAscii(d);
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
    if (b[at] !== openObject) return -1;
    let i = skipSpaceBytes(b, at + 1);
    let found = -1;
    while (found < 0 && b[i] === quote) {
      const keyEnd = skipStringBytes(b, i);
      const match = keyEnd - i === keys[level]!.length && isKey(b, i, keys[level]!);
      i = skipSpaceBytes(b, keyEnd);
      if (b[i] !== colon) throw new NotTheJson("expected a colon");
      const valueAt = skipSpaceBytes(b, i + 1);
      if (match) {
        found = valueAt;
        break;
      }
      i = skipSpaceBytes(b, skipValueBytes(b, valueAt));
      if (b[i] === comma) i = skipSpaceBytes(b, i + 1);
      else if (b[i] !== closeObject) throw new NotTheJson("expected a comma");
    }
    if (found < 0) return -1;
    at = found;
  }
  return at;
}
