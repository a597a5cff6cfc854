import { grownBytes, grownEnds, rowEnds, type RecordsReader } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import { ownedBytes } from "../rows/owned-bytes.ts";
import type { Column } from "../rows/types.ts";
import { bytesText, copiedPage, firstFlagged, hasByte, readCell, scanned, wordsOut } from "./csv-records.ts";
import {
  type CellKind,
  cellKind,
  excelDate,
  exactDouble,
  fractionUnits,
  MAX_CELL_TEXT,
  textCell,
} from "./xlsx-cells.ts";
import { isShortestDecimal } from "./shortest-float.ts";
import { STYLE } from "./xlsx-parts.ts";
import { putWords, wordsOf, type Words } from "./words.ts";

// XLSX rows written straight from CKAN's `records_format: "csv"` answer bytes (csv-records.ts reads
// the cells), as csv-passthrough.ts writes CSV and json-from-csv.ts JSON: no JavaScript string per
// value but where a value needs one (a timestamp's serial, a float past 15 digits, text to escape).
// Each cell is the bytes `writeCell` (xlsx-cells.ts) writes for the same value from CKAN's `lists`
// records: a spec holds the two side by side.

const QUOTE = 34;
const utf8 = new TextEncoder();
// A BOM is text here, kept as the row path keeps it.
const text = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

const ROW_OPEN = wordsOf("<row>");
const ROW_CLOSE = wordsOf("</row>");
const EMPTY_CELL = wordsOf("<c/>");
const NUMBER_OPEN = wordsOf("<c><v>");
const NUMBER_CLOSE = wordsOf("</v></c>");
const TEXT_OPEN = wordsOf('<c t="inlineStr"><is><t>');
const TEXT_CLOSE = wordsOf("</t></is></c>");
const TRUE_CELL = wordsOf('<c t="b"><v>1</v></c>');
const FALSE_CELL = wordsOf('<c t="b"><v>0</v></c>');

/**
 * Room a cell's markup takes beyond its text. Markup is written as words (words.ts): their padding
 * lands within this room, and never on a cell's text waiting at TEXT_AT (the markup before it is
 * TEXT_AT bytes or fewer).
 */
const MARKUP = 64;
/** Where a cell's text is read, past what its markup may take before it. */
const TEXT_AT = TEXT_OPEN.length;
/** Where a number cell's text is read: right after its markup, written before it. */
const NUMBER_AT = NUMBER_OPEN.length;

/**
 * Whether out[start, end) is a number as JavaScript's String writes it, with at most 15 significant
 * digits: then it is the shortest text of its double, which a spreadsheet shows as it is
 * (`exactDouble`'s fast case, on bytes). Anything else goes the way of a string.
 */
function isShortNumber(out: Uint8Array, start: number, end: number): boolean {
  let i = start;
  const negative = out[i] === 0x2d;
  if (negative) i++;
  const whole = i;
  while (i < end && out[i]! >= 0x30 && out[i]! <= 0x39) i++;
  const wholeDigits = i - whole;
  if (wholeDigits === 0 || (wholeDigits > 1 && out[whole] === 0x30)) return false;
  let significant = out[whole] === 0x30 ? 0 : wholeDigits;
  if (i === end) return significant <= 15 && !(negative && significant === 0);
  if (out[i] !== 0x2e) return false;
  const fraction = ++i;
  while (i < end && out[i]! >= 0x30 && out[i]! <= 0x39) i++;
  if (i !== end || i === fraction || out[end - 1] === 0x30) return false;
  if (significant > 0) return significant + end - fraction <= 15;
  let first = fraction;
  while (out[first] === 0x30) first++;
  // Below 1e-6 String writes an exponent.
  significant = end - first;
  return first - fraction <= 5 && significant <= 15;
}

/**
 * Whether out[at, end) is a positional decimal of 16 or 17 significant digits that is the shortest
 * text of its double (`isShortestDecimal`, certain answers only): a float8 value as PostgreSQL writes it.
 */
function isShortestAt(out: Uint8Array, at: number, end: number): boolean {
  let i = out[at] === 0x2d ? at + 1 : at;
  let point = i;
  while (point < end && out[point] !== 0x2e) point++;
  if (point <= i || point >= end - 1 || out[end - 1] === 0x30 || (out[i] === 0x30 && point !== i + 1)) return false;
  const places = end - point - 1;
  if (out[i] === 0x30) {
    // 0.000ddd: below 1e-6 String writes an exponent.
    i = point + 1;
    while (out[i] === 0x30) i++;
    if (i - point - 1 > 5) return false;
  }
  const significant = end - i - (i < point ? 1 : 0);
  if (significant < 16 || significant > 17) return false;
  let high = 0;
  let low = 0;
  let count = 0;
  for (let k = i; k < end; k++) {
    if (k === point) continue;
    const digit = out[k]! - 48;
    if (digit < 0 || digit > 9) return false;
    if (count++ < significant - 8) high = high * 10 + digit;
    else low = low * 10 + digit;
  }
  return isShortestDecimal(high, low, places) === true;
}

/** A cell that needs a string: decoded, written as `writeCell` writes it, at `o` (room made by the caller). */
function stringCell(out: Uint8Array, o: number, value: string, kind: CellKind): number {
  let xml: string | undefined;
  if (kind === "number" || kind === "float") {
    const exact = exactDouble(value, kind === "number" ? 15 : 17);
    if (exact !== undefined) xml = `<c><v>${exact}</v></c>`;
  } else if (kind === "bool") {
    if (value === "t" || value === "f") xml = `<c t="b"><v>${value === "t" ? 1 : 0}</v></c>`;
  } else if (kind === "date" || kind === "timestamp") {
    const date = excelDate(value);
    if (date !== undefined) xml = `<c s="${date.style}"><v>${date.serial}</v></c>`;
  }
  return o + utf8.encodeInto(xml ?? textCell(value), out.subarray(o)).written;
}

/** How text goes into an inline string: as it is, with markup escaped (`&`, `<`, `>`, CR), or by `textCell`. */
const Text = { Plain: 0, Markup: 1, String: 2 } as const;

/** How the text at [start, end) is written (see Text): `textCell` for edge spaces, escapes of Excel's own, long text. */
function textWay(out: Uint8Array, start: number, end: number, bom: boolean): number {
  if (bom || end - start > MAX_CELL_TEXT || edgeSpace(out, start, end)) return Text.String;
  let way: number = Text.Plain;
  const words = wordsOut(out);
  for (let k = start; k < end; k++) {
    if (k + 4 <= end) {
      // Four bytes at once where none is a control character, `&`, `<`, `>`, `_` or 0xEF (a BOM or
      // U+FFFE/FFFF starts with it; other non-ASCII bytes pass, as in csv-records.ts's words).
      const w = words.getInt32(k, true);
      const special =
        (hasByte(w ^ 0x26262626) |
          hasByte(w ^ 0x3c3c3c3c) |
          hasByte(w ^ 0x3e3e3e3e) |
          hasByte(w ^ 0x5f5f5f5f) |
          hasByte(w ^ 0xefefefef) |
          ((w - 0x20202020) & ~w)) &
        0x80808080;
      if (special === 0) {
        k += 3;
        continue;
      }
      k += firstFlagged(special);
    }
    const c = out[k]!;
    if (c >= 0x20 && c !== 0x26 && c !== 0x3c && c !== 0x3e && c !== 0x5f && c !== 0xef) continue;
    // Kept as they are: tab and LF, `_` that starts no `_x`, U+F000 to U+FFFD.
    if (c === 9 || c === 10) continue;
    if (c === 0x5f && out[k + 1] !== 0x78) continue;
    if (c === 0xef && !(out[k + 1] === 0xbf && out[k + 2]! >= 0xbe)) continue;
    if (c === 0x26 || c === 0x3c || c === 0x3e || c === 13) way = Text.Markup;
    else return Text.String;
  }
  return way;
}

const ESCAPES: (Words | undefined)[] = [];
ESCAPES[0x26] = wordsOf("&amp;");
ESCAPES[0x3c] = wordsOf("&lt;");
ESCAPES[0x3e] = wordsOf("&gt;");
ESCAPES[13] = wordsOf("&#13;");
/** The text being escaped, moved aside (it grows where it is). */
let aside = new Uint8Array(1 << 16);

/** The text at [at, end) with `&`, `<`, `>` and CR escaped as `xmlText` escapes them, in place (room made by the caller): its new end. */
function escapeMarkup(out: Uint8Array, at: number, end: number): number {
  if (end - at > aside.length) aside = new Uint8Array(2 * (end - at));
  aside.set(out.subarray(at, end));
  let o = at;
  for (let k = 0; k < end - at; k++) {
    const c = aside[k]!;
    const escape = ESCAPES[c];
    if (escape === undefined) out[o++] = c;
    else o = putWords(out, o, escape);
  }
  return o;
}

/** `\s` at either end of the UTF-8 text at [start, end): ASCII space, or one of the Unicode spaces JavaScript's `\s` takes. */
function edgeSpace(out: Uint8Array, start: number, end: number): boolean {
  const first = out[start]!;
  const last = out[end - 1]!;
  if (first === 0x20 || (first >= 9 && first <= 13) || last === 0x20 || (last >= 9 && last <= 13)) return true;
  return (first >= 0xc2 && unicodeSpaceAt(out, start, end)) || (last >= 0x80 && unicodeSpaceBefore(out, start, end));
}

/** U+00A0, U+1680, U+2000-200A, U+2028, U+2029, U+202F, U+205F, U+3000 (U+FEFF is a BOM: `bom` covers it) at `at`. */
function unicodeSpaceAt(out: Uint8Array, at: number, end: number): boolean {
  const a = out[at];
  const b = out[at + 1];
  const c = at + 2 < end ? out[at + 2]! : -1;
  if (a === 0xc2) return b === 0xa0;
  if (a === 0xe1) return b === 0x9a && c === 0x80;
  if (a === 0xe2 && b === 0x80) return (c >= 0x80 && c <= 0x8a) || c === 0xa8 || c === 0xa9 || c === 0xaf;
  if (a === 0xe2) return b === 0x81 && c === 0x9f;
  return a === 0xe3 && b === 0x80 && c === 0x80;
}

function unicodeSpaceBefore(out: Uint8Array, start: number, end: number): boolean {
  if (end - start >= 2 && out[end - 2] === 0xc2) return out[end - 1] === 0xa0;
  return end - start >= 3 && unicodeSpaceAt(out, end - 3, end);
}

/** Read from the cell's text at `at`: text cells for `kind` (text, json) written in place from `start`. */
function textCellAt(out: Uint8Array, start: number, at: number, kind: CellKind): number {
  const end = scanned.o;
  const quoted = scanned.quoted;
  // Null: an empty unquoted cell, or a json or array column's `null`.
  if ((at === end && !quoted) || (kind === "json" && !quoted && isNull(out, at, end)))
    return putWords(out, start, EMPTY_CELL);
  const way = at === end ? Text.Plain : textWay(out, at, end, scanned.bom);
  if (way === Text.Plain) return putWords(out, end, TEXT_CLOSE);
  if (way === Text.Markup) return putWords(out, escapeMarkup(out, at, end), TEXT_CLOSE);
  return stringCell(out, start, text.decode(out.subarray(at, end)), "text");
}

const isNull = (out: Uint8Array, at: number, end: number): boolean =>
  end - at === 4 && out[at] === 0x6e && out[at + 1] === 0x75 && out[at + 2] === 0x6c && out[at + 3] === 0x6c;

/** Where a cell of `kind` written from `o` is read: a number's in place, its markup written first. */
function textFrom(out: Uint8Array, o: number, kind: CellKind | undefined): number {
  if (kind !== "number" && kind !== "float") return o + TEXT_AT;
  putWords(out, o, NUMBER_OPEN);
  return o + NUMBER_AT;
}

/**
 * A number cell read at `at`, right after the NUMBER_OPEN already written from `start`: most numbers
 * are then written where they were read.
 */
function numberCellAt(out: Uint8Array, start: number, at: number, kind: CellKind): number {
  const end = scanned.o;
  if (at === end && !scanned.quoted) return putWords(out, start, EMPTY_CELL);
  if (isShortNumber(out, at, end) || (kind === "float" && isShortestAt(out, at, end)))
    return putWords(out, end, NUMBER_CLOSE);
  return stringCell(out, start, bytesText(out, at, end), kind);
}

/** A bool, date or timestamp cell read at `at`, written from `start`. */
function valueCellAt(out: Uint8Array, start: number, at: number, kind: CellKind): number {
  const end = scanned.o;
  if (at === end && !scanned.quoted) return putWords(out, start, EMPTY_CELL);
  if (kind === "bool" && end - at === 1 && (out[at] === 0x74 || out[at] === 0x66))
    return putWords(out, start, out[at] === 0x74 ? TRUE_CELL : FALSE_CELL);
  if (kind === "date" || kind === "timestamp") {
    const o = serialCell(out, start, at, end);
    if (o >= 0) return o;
  }
  return stringCell(out, start, text.decode(out.subarray(at, end)), kind);
}

const DAY_MS = 86_400_000;
/** Excel's day 0 is 1899-12-30 (for dates from 1900-03-01, past its 1900 leap-year bug), as xlsx-cells.ts says. */
const EXCEL_EPOCH = Date.UTC(1899, 11, 30);
const FIRST_DAY = Date.UTC(1900, 2, 1);
const isDigitAt = (out: Uint8Array, at: number): boolean => out[at]! >= 0x30 && out[at]! <= 0x39;
/** The two digits at `at` as a number, or -1000 where either is not a digit (a sum of pairs stays negative). */
const pairAt = (out: Uint8Array, at: number): number => {
  const a = out[at]! - 48;
  const b = out[at + 1]! - 48;
  return a >>> 0 > 9 || b >>> 0 > 9 ? -1000 : a * 10 + b;
};

/** Date.UTC (or NaN where Excel holds no such day) of the dates seen, by YYYYMMDD: a sheet's dates are few. */
const days = new Map<number, number>();
/** The last date asked, and its day: rows in time order ask the same one again and again. */
let lastKey = -1;
let lastDay = Number.NaN;

/** Date.UTC of YYYY-MM-DD (digits checked), or NaN where Excel holds no such day. */
function dayOf(y: number, mo: number, d: number): number {
  const key = y * 10_000 + mo * 100 + d;
  if (key === lastKey) return lastDay;
  let day = days.get(key);
  if (day === undefined) {
    const utc = Date.UTC(y, mo - 1, d);
    const check = new Date(utc);
    const valid = y >= 1900 && check.getUTCDate() === d && check.getUTCMonth() === mo - 1 && utc >= FIRST_DAY;
    day = valid ? utc : Number.NaN;
    if (days.size >= 4096) days.clear();
    days.set(key, day);
  }
  lastKey = key;
  lastDay = day;
  return day;
}

/** Milliseconds of `HH:MM:SS[.fff]` at `at` + 11 (-1: not a time Excel shows exactly), and whether its fraction is not zero (in `fraction`). */
function timeAt(out: Uint8Array, at: number, end: number): number {
  const n = end - at;
  const t = out[at + 10];
  if (out[at + 13] !== 0x3a || out[at + 16] !== 0x3a || (t !== 0x54 && t !== 0x20)) return -1;
  const h = pairAt(out, at + 11);
  const mi = pairAt(out, at + 14);
  const s = pairAt(out, at + 17);
  if (h < 0 || mi < 0 || s < 0 || h > 23 || mi > 59 || s > 59) return -1;
  let millis = 0;
  fraction.nonZero = false;
  if (n > 19) {
    if (out[at + 19] !== 0x2e || n === 20) return -1;
    for (let k = 20; k < n; k++) {
      if (!isDigitAt(out, at + k)) return -1;
      const d = out[at + k]! - 48;
      if (d === 0) continue;
      // Below a millisecond, Excel shows nothing: such a timestamp keeps its text.
      if (k >= 23) return -1;
      fraction.nonZero = true;
      millis += d * (k === 20 ? 100 : k === 21 ? 10 : 1);
    }
  }
  return h * 3_600_000 + mi * 60_000 + s * 1000 + millis;
}
const fraction = { nonZero: false };

/**
 * The cell of a date (`YYYY-MM-DD`) or timestamp (`YYYY-MM-DD[T ]HH:MM:SS[.fff]`) at [at, end), as
 * `excelDate` writes it, from `start`: the new end, or -1 for any other text (the string path decides).
 */
function serialCell(out: Uint8Array, start: number, at: number, end: number): number {
  const n = end - at;
  if ((n !== 10 && n < 19) || out[at + 4] !== 0x2d || out[at + 7] !== 0x2d) return -1;
  const century = pairAt(out, at);
  const year = pairAt(out, at + 2);
  const mo = pairAt(out, at + 5);
  const d = pairAt(out, at + 8);
  if (century < 0 || year < 0 || mo < 0 || d < 0) return -1;
  const ms = n === 10 ? 0 : timeAt(out, at, end);
  if (ms < 0) return -1;
  const day = dayOf(century * 100 + year, mo, d);
  if (Number.isNaN(day)) return -1;
  const style = n === 10 ? STYLE.date : fraction.nonZero ? STYLE.dateTimeMs : STYLE.dateTime;
  const o = writeSerial(out, putWords(out, start, STYLE_OPEN[style]!), (day - EXCEL_EPOCH) / DAY_MS, ms);
  return putWords(out, o, NUMBER_CLOSE);
}

/** "00" to "99" as pairs of ASCII digits. */
const PAIRS = new Uint8Array(200);
for (let k = 0; k < 100; k++) {
  PAIRS[2 * k] = 48 + ((k / 10) | 0);
  PAIRS[2 * k + 1] = 48 + (k % 10);
}

/** `serialText`'s digits written at `o`, no string made: whole days, then the fraction's places. */
function writeSerial(out: Uint8Array, o: number, days: number, ms: number): number {
  // Days from 1927-05-18 to 2173-10-14 have five digits: one, then two pairs.
  if (days >= 10_000 && days < 100_000) {
    const first = (days / 10_000) | 0;
    out[o] = 48 + first;
    o = writeFour(out, o + 1, days - first * 10_000);
  } else o = writeDigits(out, o, days | 0, 1);
  if (ms === 0) return o;
  // 12 places as two halves of 6, int32 both (a double's % is a call to fmod: measured 5 times slower),
  // written two digits at a time, then the trailing zeros taken back.
  const units = fractionUnits(ms);
  const high = Math.floor(units / 1e6) | 0;
  const low = (units - high * 1e6) | 0;
  out[o++] = 0x2e;
  o = writeSix(out, writeSix(out, o, high), low);
  while (out[o - 1] === 0x30) o--;
  return o;
}

/** The four digits of `n` (below 10,000), zero-padded. */
function writeFour(out: Uint8Array, o: number, n: number): number {
  const a = (n / 100) | 0;
  const b = n - a * 100;
  out[o] = PAIRS[2 * a]!;
  out[o + 1] = PAIRS[2 * a + 1]!;
  out[o + 2] = PAIRS[2 * b]!;
  out[o + 3] = PAIRS[2 * b + 1]!;
  return o + 4;
}

/** The six digits of `n` (an int32 below 1e6), zero-padded. */
function writeSix(out: Uint8Array, o: number, n: number): number {
  const a = (n / 10_000) | 0;
  out[o] = PAIRS[2 * a]!;
  out[o + 1] = PAIRS[2 * a + 1]!;
  return writeFour(out, o + 2, n - a * 10_000);
}

/** An int32's decimal digits at `o`, zero-padded to `width`. */
function writeDigits(out: Uint8Array, o: number, value: number, width: number): number {
  let n = 1;
  for (let v = value; v >= 10; v = (v / 10) | 0) n++;
  if (n < width) n = width;
  for (let k = n - 1, v = value; k >= 0; k--, v = (v / 10) | 0) out[o + k] = 48 + (v % 10);
  return o + n;
}

/** `<c s="N"><v>` per style. */
const STYLE_OPEN: Words[] = [];
for (const style of [STYLE.date, STYLE.dateTime, STYLE.dateTimeMs]) STYLE_OPEN[style] = wordsOf(`<c s="${style}"><v>`);

/**
 * The sheet rows (`<row>` and its cells: no row number, see xlsx.ts) of CKAN's CSV records, for
 * the columns as requested (those from `dropFrom` on left out).
 */
export function xlsxCsvReader(incoming: Column[], dropFrom: number): RecordsReader {
  const kinds = incoming.map((c, i): CellKind | undefined => (i < dropFrom ? cellKind(c.type) : undefined));
  const width = incoming.length;
  // Output bytes per input byte, from the last page: sheet XML is two to three times CKAN's CSV.
  let ratio = 3;
  return (b, at) => {
    if (b[at] !== QUOTE) throw new NotTheJson("records are not a string");
    const length = b.length;
    let out = ownedBytes(Math.ceil((length - at) * ratio) + width * MARKUP * 2 + 1024);
    let o = 0;
    let ends = rowEnds();
    let rows = 0;
    let lastStart = -1;
    let lastEnd = -1;
    let firstStart = -1;
    let column = 0;
    let i = at + 1;
    for (;;) {
      if (i >= length) throw new NotTheJson("unterminated string");
      // Room before each cell, for the rest of the input as it is: a cell's text is at most its input (escapes
      // only shrink), but the cells before it may have grown past theirs. One needing more gets it below.
      const room = o + (length - i) + MARKUP;
      if (room > out.length) out = grownBytes(out, o, room - o);
      if (column === 0) {
        if (b[i] === QUOTE) break;
        o = putWords(out, o, ROW_OPEN);
      }
      const kind = column < width ? kinds[column] : undefined;
      const start = i;
      const textAt = textFrom(out, o, kind);
      readCell(b, i, out, textAt, false, false);
      i = scanned.i;
      if (kind !== undefined) {
        // Escaped text may grow up to 7 times (a control character as _x0001_): room first.
        const need = o + 8 * (scanned.o - o) + MARKUP;
        if (need > out.length) out = grownBytes(out, scanned.o, need - scanned.o);
        if (textAt === o + NUMBER_AT) o = numberCellAt(out, o, textAt, kind);
        else if (kind === "text" || kind === "json") {
          putWords(out, o, TEXT_OPEN);
          o = textCellAt(out, o, o + TEXT_AT, kind);
        } else o = valueCellAt(out, o, o + TEXT_AT, kind);
      }
      if (column === width - 1) {
        lastStart = start;
        lastEnd = i;
        if (firstStart < 0) firstStart = start;
      }
      if (scanned.ended) {
        if (column !== width - 1) throw new NotTheJson(`a row has ${column + 1} cells for ${width} columns`);
        o = putWords(out, o, ROW_CLOSE);
        if (rows === ends.length) ends = grownEnds(ends);
        ends[rows++] = o;
        column = 0;
      } else column++;
    }
    if (length - at > 1 && o > 0) ratio = Math.max(1, o / (length - at));
    return copiedPage(out, o, ends, rows, i + 1, { b, firstStart, lastStart, lastEnd });
  };
}
