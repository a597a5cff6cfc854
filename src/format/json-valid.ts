// Whether bytes are one JSON value, as JSON.parse of their text would say, without the text: a JSON
// export writes a json or array cell bare only if it is (a cell must not be able to close its record),
// and decoding and parsing each such cell cost about a microsecond a cell (measured: a third of a
// JSON export's CPU on a table with two such columns).

import {
  BACKSLASH,
  CLOSE_LIST,
  CLOSE_OBJECT,
  COLON,
  COMMA,
  isSpaceByte,
  OPEN_LIST,
  OPEN_OBJECT,
  QUOTE,
} from "../rows/json-bytes.ts";

const MINUS = 0x2d;

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** Whether out[start, end) is one JSON number as JSON writes it: no `+`, no leading zero, no bare `.`. */
export function isJsonNumber(out: Uint8Array, start: number, end: number): boolean {
  return numberEnd(out, start, end) === end;
}

/** Where the JSON number at `i` ends, or -1 if none starts there. */
function numberEnd(b: Uint8Array, i: number, end: number): number {
  if (i < end && b[i] === MINUS) i++;
  if (i < end && b[i] === 0x30) i++;
  else if (i < end && isDigit(b[i])) while (i < end && isDigit(b[i])) i++;
  else return -1;
  if (i < end && b[i] === 0x2e) {
    const fraction = ++i;
    while (i < end && isDigit(b[i])) i++;
    if (i === fraction) return -1;
  }
  if (i < end && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < end && (b[i] === 0x2b || b[i] === MINUS)) i++;
    const exponent = i;
    while (i < end && isDigit(b[i])) i++;
    if (i === exponent) return -1;
  }
  return i;
}

const isHex = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66));

/**
 * Where the JSON string whose opening quote is at `i` ends (past its closing quote), or -1. Any byte
 * from 0x20 is text (bytes that are not UTF-8 decode to U+FFFD, which a string may hold); below it,
 * only as an escape.
 */
function stringEnd(b: Uint8Array, i: number, end: number): number {
  for (i++; i < end; i++) {
    const c = b[i]!;
    if (c === QUOTE) return i + 1;
    if (c < 0x20) return -1;
    if (c !== BACKSLASH) continue;
    const e = b[++i];
    if (e === 0x75) {
      if (i + 4 >= end || !isHex(b[i + 1]) || !isHex(b[i + 2]) || !isHex(b[i + 3]) || !isHex(b[i + 4])) return -1;
      i += 4;
    } else if (
      e !== QUOTE &&
      e !== BACKSLASH &&
      e !== 0x2f &&
      e !== 0x62 &&
      e !== 0x66 &&
      e !== 0x6e &&
      e !== 0x72 &&
      e !== 0x74
    )
      return -1;
  }
  return -1;
}

const TRUE = [0x74, 0x72, 0x75, 0x65];
const FALSE = [0x66, 0x61, 0x6c, 0x73, 0x65];
const NULL = [0x6e, 0x75, 0x6c, 0x6c];

function literalEnd(b: Uint8Array, i: number, end: number, word: number[]): number {
  if (i + word.length > end) return -1;
  for (let k = 0; k < word.length; k++) if (b[i + k] !== word[k]) return -1;
  return i + word.length;
}

/** Where the scalar (string, number, literal) at `i` ends, or -1. */
function scalarEnd(b: Uint8Array, i: number, end: number): number {
  const c = b[i];
  if (c === QUOTE) return stringEnd(b, i, end);
  if (c === 0x74) return literalEnd(b, i, end, TRUE);
  if (c === 0x66) return literalEnd(b, i, end, FALSE);
  if (c === 0x6e) return literalEnd(b, i, end, NULL);
  return numberEnd(b, i, end);
}

// Not json-bytes.ts's skipSpaceBytes given an end: that measured 6-15% slower on a rich-table JSON
// export (bench:paired), its call sites shared with the answer's parser.
function pastSpace(b: Uint8Array, i: number, end: number): number {
  while (i < end && isSpaceByte(b[i])) i++;
  return i;
}

/** Containers open at once this checks itself; deeper input (no CKAN value is) is left to JSON.parse. */
const MAX_DEPTH = 256;
const open = new Uint8Array(MAX_DEPTH);
const utf8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** Whether b[start, end) is exactly one JSON value, spaces around it allowed: JSON.parse's answer for its text. */
export function isOneJsonValue(b: Uint8Array, start: number, end: number): boolean {
  let depth = 0;
  let i = pastSpace(b, start, end);
  for (;;) {
    // A value: a container opens (and may close at once), or a scalar.
    const c = b[i];
    if (i < end && (c === OPEN_LIST || c === OPEN_OBJECT)) {
      if (depth === MAX_DEPTH) return parses(b, start, end);
      open[depth++] = c;
      i = pastSpace(b, i + 1, end);
      if (b[i] === (c === OPEN_LIST ? CLOSE_LIST : CLOSE_OBJECT) && i < end) {
        depth--;
        i++;
      } else {
        if (c === OPEN_OBJECT && (i = memberValueAt(b, i, end)) < 0) return false;
        continue;
      }
    } else {
      if (i >= end || (i = scalarEnd(b, i, end)) < 0) return false;
    }
    // After a value: the next in its container, its container's close, or the end.
    for (;;) {
      i = pastSpace(b, i, end);
      if (depth === 0) return i === end;
      const container = open[depth - 1];
      const d = b[i];
      if (i >= end) return false;
      if (d === COMMA) {
        i = pastSpace(b, i + 1, end);
        if (container === OPEN_OBJECT && (i = memberValueAt(b, i, end)) < 0) return false;
        break;
      }
      if (d !== (container === OPEN_LIST ? CLOSE_LIST : CLOSE_OBJECT)) return false;
      depth--;
      i++;
    }
  }
}

/** At a member's key in an object: where its value starts (past the key, the colon and spaces), or -1. */
function memberValueAt(b: Uint8Array, i: number, end: number): number {
  if (i >= end || b[i] !== QUOTE) return -1;
  i = stringEnd(b, i, end);
  if (i < 0) return -1;
  i = pastSpace(b, i, end);
  if (i >= end || b[i] !== COLON) return -1;
  return pastSpace(b, i + 1, end);
}

function parses(b: Uint8Array, start: number, end: number): boolean {
  try {
    JSON.parse(utf8.decode(b.subarray(start, end)));
    return true;
  } catch {
    return false;
  }
}
