import { grownBytes, grownEnds, type RecordsReader } from "./batch.ts";
import { isJsonType, isNumericType } from "./guard.ts";
import { NotTheJson } from "./json-scan.ts";
import type { Column } from "./types.ts";

/** How one incoming column is written: as is, text (guarded or not), a boolean, JSON text, or not at all. */
const Action = { Copy: 0, Text: 1, Guarded: 2, Bool: 3, Json: 4, Drop: 5 } as const;
type Action = (typeof Action)[keyof typeof Action];

// Local, not json-scan.ts's: the loops below compare against them per byte.
const QUOTE = 34;
const BACKSLASH = 92;
const LF = 10;
const CR = 13;
const TAB = 9;
const SPACE = 32;
const COMMA = 44;
const APOSTROPHE = 39;
const TRUE = new TextEncoder().encode("true");
const FALSE = new TextEncoder().encode("false");

/**
 * CKAN's `records_format: "csv"` page, read from the answer's bytes and written as exactly the bytes
 * the row encoder writes for the same values (one rule for every page; a spec holds the two side by
 * side on real CKAN answers). The records are one JSON string; one pass undoes its escapes and
 * rewrites the CSV cell by cell as it copies. CKAN's CSV differs from ours in few places: LF rows
 * (ours CRLF), `t`/`f` (ours true/false), the literal `null` for a null array or json (ours an empty
 * cell), no quotes around a cell with edge spaces or a BOM (papaparse quotes those), and no formula
 * guard. Everything else is copied byte for byte: no text is decoded or encoded.
 *
 * `incoming` are the columns as requested (output columns, then any to drop, such as `_id`).
 */
export function csvRecordsReader(incoming: Column[], dropFrom: number, formulaGuard: boolean): RecordsReader {
  const actions = incoming.map((c, i): Action => {
    if (i >= dropFrom) return Action.Drop;
    if (c.type === "bool") return Action.Bool;
    if (isJsonType(c.type)) return Action.Json;
    if (isNumericType(c.type)) return Action.Copy;
    return formulaGuard ? Action.Guarded : Action.Text;
  });
  const width = incoming.length;
  // What a row can grow by: "false" for "f", a guard's apostrophe and two quotes per cell, CRLF.
  const growth = 5 * width + 2;
  let bytesPerRow = 0;

  return (b, at) => {
    if (b[at] !== QUOTE) throw new NotTheJson("records are not a string");
    const length = b.length;
    let out = pageBuffer(length - at, bytesPerRow, growth);
    let o = 0;
    let ends = new Uint32Array(1024);
    let rows = 0;
    let lastStart = -1;
    let lastEnd = -1;
    let column = 0;
    let i = at + 1;
    // Set on a BOM, escaped or as UTF-8 (0xEF starts it): only then are cells searched for one.
    let bom = false;
    for (;;) {
      if (i >= length) throw new NotTheJson("unterminated string");
      if (column === 0 && b[i] === QUOTE) break; // the end of the records string (after a row's LF, or of an empty page)
      if (column === 0 && o + (length - i) + growth > out.length) out = grownBytes(out, o, length - i + growth);
      const action = column < width ? actions[column]! : Action.Drop;
      if (column > 0 && action !== Action.Drop) out[o++] = COMMA;
      const cellAt = i;
      const cell = o;
      let quoted = false;
      let ended = false; // the row ended after this cell (LF, or the end of the string)
      // The cell's bytes, unescaped, straight into `out`.
      if (b[i] === BACKSLASH && b[i + 1] === QUOTE) {
        quoted = true;
        out[o++] = QUOTE;
        i += 2;
        for (;;) {
          const c = b[i]!;
          if (c > QUOTE && c !== BACKSLASH && c < 0xef) {
            out[o++] = c;
            i++;
            continue;
          }
          if (c === BACKSLASH) {
            const e = b[i + 1];
            if (e === QUOTE) {
              out[o++] = QUOTE;
              i += 2;
              // `""` inside: a quote; a lone one closes the cell.
              if (b[i] === BACKSLASH && b[i + 1] === QUOTE) {
                out[o++] = QUOTE;
                i += 2;
                continue;
              }
              break;
            }
            const written = writeEscape(b, i, out, o);
            if (written & BOM_SEEN) bom = true;
            i += written >> 8;
            o += written & 7;
          } else if (c === undefined || c === QUOTE) {
            throw new NotTheJson("unterminated quoted cell");
          } else {
            if (c === 0xef) bom = true;
            out[o++] = c;
            i++;
          }
        }
      }
      for (;;) {
        const c = b[i]!;
        // Most bytes are none of the few that mean something here: one test, and copied.
        if (c > QUOTE && c !== COMMA && c !== BACKSLASH && c < 0xef) {
          out[o++] = c;
          i++;
          continue;
        }
        if (c === COMMA) {
          i++;
          break;
        }
        if (c === QUOTE) {
          ended = true;
          break;
        }
        if (c === BACKSLASH) {
          const e = b[i + 1];
          if (e === 0x6e) {
            i += 2;
            ended = true;
            break;
          }
          const written = writeEscape(b, i, out, o);
          if (written & BOM_SEEN) bom = true;
          i += written >> 8;
          o += written & 7;
          continue;
        }
        if (c === undefined) throw new NotTheJson("unterminated string");
        if (c === 0xef) bom = true;
        out[o++] = c;
        i++;
      }
      if (column === width - 1) {
        lastStart = cellAt;
        lastEnd = i;
      }
      // PostgreSQL's COPY quotes a lone column's value `\.` (its end-of-data marker); papaparse does not.
      if (quoted && width === 1 && o - cell === 4 && out[cell + 1] === BACKSLASH && out[cell + 2] === 0x2e) {
        out[cell] = BACKSLASH;
        out[cell + 1] = 0x2e;
        o = cell + 2;
        quoted = false;
      }
      if (action === Action.Drop) o = cell;
      else if (action !== Action.Copy && o > cell) o = rewriteCell(out, cell, o, quoted, action, bom);
      if (ended) {
        out[o++] = CR;
        out[o++] = LF;
        if (rows === ends.length) ends = grownEnds(ends);
        ends[rows++] = o;
        column = 0;
      } else {
        column++;
      }
    }
    if (column !== 0) throw new NotTheJson("the last row has no line end");
    if (rows > 0) bytesPerRow = (i - at) / rows;
    return { page: { bytes: out.subarray(0, o), rows, ends: ends.subarray(0, rows) }, end: i + 1, lastId: cellDigits(b, lastStart, lastEnd) };
  };
}

/**
 * The output buffer of a page of CSV records of `size` bytes: escapes only shrink, so a row's output
 * is at most its input and `growth`; rows counted from the last page's width.
 */
export const pageBuffer = (size: number, bytesPerRow: number, growth: number): Uint8Array<ArrayBuffer> =>
  new Uint8Array(Math.ceil(size + (size / (bytesPerRow || 32)) * growth) + 64);

/** The text of the digits cell at [start, end) of the records (an `_id`: its text is its bytes). */
export function cellDigits(b: Uint8Array, start: number, end: number): string | undefined {
  if (start < 0) return undefined;
  let text = "";
  for (let k = start; k < end && b[k] !== COMMA && b[k] !== BACKSLASH && b[k] !== QUOTE; k++) text += String.fromCharCode(b[k]!);
  return text;
}

/** `\ufeff` (any case) at `at`. */
const isBomEscape = (b: Uint8Array, at: number): boolean =>
  (b[at + 2]! | 0x20) === 0x66 && (b[at + 3]! | 0x20) === 0x65 && (b[at + 4]! | 0x20) === 0x66 && (b[at + 5]! | 0x20) === 0x66;

/** The byte a one-letter JSON escape stands for. */
function simpleEscape(e: number | undefined): number {
  if (e === BACKSLASH || e === 0x2f || e === QUOTE) return e;
  if (e === 0x72) return CR;
  if (e === 0x74) return TAB;
  if (e === 0x62) return 8;
  if (e === 0x66) return 12;
  throw new NotTheJson("bad escape");
}

/** Set in `writeEscape`'s result when the escape was a BOM. */
const BOM_SEEN = 0x80;

/**
 * Writes the character of the escape at `at`: `\uXXXX` as UTF-8 (with its low surrogate's for a
 * pair), `\n` and the other one-letter ones as their byte. Returns the escape's length << 8 | the
 * bytes written (| BOM_SEEN), so the caller's offsets stay locals.
 */
export function writeEscape(b: Uint8Array, at: number, out: Uint8Array, o: number): number {
  const e = b[at + 1];
  if (e !== 0x75) {
    out[o] = e === 0x6e ? LF : simpleEscape(e);
    return (2 << 8) | 1;
  }
  if (isBomEscape(b, at)) {
    // U+FEFF in UTF-8.
    out[o] = 0xef;
    out[o + 1] = 0xbb;
    out[o + 2] = 0xbf;
    return (6 << 8) | BOM_SEEN | 3;
  }
  let code = hex4(b, at + 2);
  let read = 6;
  if (code >= 0xd800 && code < 0xdc00 && b[at + 6] === BACKSLASH && b[at + 7] === 0x75) {
    const low = hex4(b, at + 8);
    if (low >= 0xdc00 && low < 0xe000) {
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
      read = 12;
    }
  }
  // A lone surrogate becomes U+FFFD, as decoding the answer as text and encoding it again would.
  if (code >= 0xd800 && code < 0xe000) code = 0xfffd;
  if (code < 0x80) {
    out[o] = code;
    return (read << 8) | 1;
  }
  if (code < 0x800) {
    out[o] = 0xc0 | (code >> 6);
    out[o + 1] = 0x80 | (code & 0x3f);
    return (read << 8) | 2;
  }
  if (code < 0x10000) {
    out[o] = 0xe0 | (code >> 12);
    out[o + 1] = 0x80 | ((code >> 6) & 0x3f);
    out[o + 2] = 0x80 | (code & 0x3f);
    return (read << 8) | 3;
  }
  out[o] = 0xf0 | (code >> 18);
  out[o + 1] = 0x80 | ((code >> 12) & 0x3f);
  out[o + 2] = 0x80 | ((code >> 6) & 0x3f);
  out[o + 3] = 0x80 | (code & 0x3f);
  return (read << 8) | 4;
}

/**
 * The cell CKAN wrote, now in out[cell, end), rewritten in place where ours differs; returns its new
 * end. Most cells stay as they are: text that neither starts a formula nor needs quotes CKAN did not
 * give it (the row has room: see `growth`).
 */
function rewriteCell(out: Uint8Array, cell: number, end: number, quoted: boolean, action: Action, bom: boolean): number {
  if (action === Action.Bool) {
    if (end - cell !== 1) return end;
    const word = out[cell] === 0x74 ? TRUE : out[cell] === 0x66 ? FALSE : undefined;
    if (word === undefined) return end;
    out.set(word, cell);
    return cell + word.length;
  }
  if (quoted) {
    // CKAN quoted it for a comma, quote or line break: papaparse quotes it too, the guard goes inside.
    if (action !== Action.Guarded || !startsFormula(out, cell + 1, end - 1)) return end;
    out.copyWithin(cell + 2, cell + 1, end);
    out[cell + 1] = APOSTROPHE;
    return end + 1;
  }
  // A null array or json value is the literal `null` in CKAN's CSV (a JSON null inside is quoted text).
  if (action === Action.Json && end - cell === 4 && out[cell] === 0x6e && out[cell + 1] === 0x75 && out[cell + 2] === 0x6c && out[cell + 3] === 0x6c) return cell;
  if (action === Action.Guarded && startsFormula(out, cell, end)) {
    out.copyWithin(cell + 1, cell, end);
    out[cell] = APOSTROPHE;
    end++;
  }
  // Papaparse also quotes a cell with an edge space or a BOM (no quote is inside: CKAN would have quoted it).
  if (out[cell] !== SPACE && out[end - 1] !== SPACE && !(bom && hasBom(out, cell, end))) return end;
  out.copyWithin(cell + 1, cell, end);
  out[cell] = QUOTE;
  out[end + 1] = QUOTE;
  return end + 2;
}

/**
 * Whether the text in [start, end) starts as a formula would (see guard.ts: `=`, `+`, `-`, `@`, tab,
 * CR, LF, and their full-width forms) and is not a plain number (`-12.5` stays a number).
 */
function startsFormula(csv: Uint8Array, start: number, end: number): boolean {
  const c = csv[start];
  if (c === 0x3d || c === 0x40 || c === TAB || c === CR || c === LF) return true;
  if (c === 0x2b || c === 0x2d) return !isPlainNumber(csv, start, end);
  // U+FF1D, U+FF0B, U+FF0D, U+FF20 in UTF-8.
  if (c !== 0xef || csv[start + 1] !== 0xbc) return false;
  const d = csv[start + 2];
  return d === 0x9d || d === 0x8b || d === 0x8d || d === 0xa0;
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;

/** guard.ts's PLAIN_NUMBER on bytes: `[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?`, all of [start, end). */
export function isPlainNumber(csv: Uint8Array, start: number, end: number): boolean {
  let i = start;
  if (csv[i] === 0x2b || csv[i] === 0x2d) i++;
  const whole = i;
  while (i < end && isDigit(csv[i])) i++;
  let digits = i - whole;
  if (i < end && csv[i] === 0x2e) {
    const fraction = ++i;
    while (i < end && isDigit(csv[i])) i++;
    digits += i - fraction;
  }
  if (digits === 0) return false;
  if (i < end && (csv[i] === 0x65 || csv[i] === 0x45)) {
    i++;
    if (i < end && (csv[i] === 0x2b || csv[i] === 0x2d)) i++;
    const exponent = i;
    while (i < end && isDigit(csv[i])) i++;
    if (i === exponent) return false;
  }
  return i === end;
}

function hasBom(csv: Uint8Array, start: number, end: number): boolean {
  for (let k = start; k + 2 < end; k++) if (csv[k] === 0xef && csv[k + 1] === 0xbb && csv[k + 2] === 0xbf) return true;
  return false;
}

const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[0x30 + c] = c;
for (let c = 0; c < 6; c++) HEX[0x41 + c] = HEX[0x61 + c] = 10 + c;

export function hex4(b: Uint8Array, at: number): number {
  let value = 0;
  for (let k = at; k < at + 4; k++) {
    const digit = HEX[b[k]! & 0x7f]!;
    if (digit < 0 || b[k]! > 0x7f) throw new NotTheJson("bad \\u escape");
    value = (value << 4) | digit;
  }
  return value;
}
