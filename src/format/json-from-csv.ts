import { grownBytes, grownEnds, rowEnds, type RecordsReader } from "../rows/batch.ts";
import {
  copiedPage,
  doubledQuote,
  endOfCell,
  firstFlagged,
  hasByte,
  hex4,
  pageBuffer,
  readCell,
  scanned,
  wordsIn,
  wordsOut,
  writeEscape,
} from "./csv-records.ts";
import { isJsonNumber, isOneJsonValue } from "./json-valid.ts";
import { putWords, wordsOf, type Words } from "./words.ts";
import { isJsonType, isNumericType } from "../rows/values.ts";
import { BACKSLASH, COMMA, NotTheJson, QUOTE } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";

const utf8 = new TextEncoder();

const NULL = utf8.encode("null");
const TRUE = utf8.encode("true");
const FALSE = utf8.encode("false");

/** How a column's CSV cell becomes its JSON value. */
const Kind = { Number: 0, Bool: 1, Json: 2, String: 3, Drop: 4 } as const;
type Kind = (typeof Kind)[keyof typeof Kind];

/**
 * JSON and NDJSON records written straight from CKAN's `records_format: "csv"` answer bytes, the
 * format CKAN serves at about 40% of the cost of `lists` (see the README's cost model). CKAN builds
 * both in SQL from the same value texts, so each value's JSON is its CSV cell: numbers as they are,
 * `t`/`f` as true/false, arrays and json as their stored JSON text, everything else a JSON string
 * escaped as PostgreSQL's `to_json` escapes it (`\"`, `\\`, `\n`-style escapes and `\u00XX` for the
 * other control characters, UTF-8 as it is), null (an empty cell, or `null` for arrays and json) as
 * `null`. The output is byte for byte what `jsonEncoder`/`ndjsonEncoder` write from `lists` records
 * of the same rows: specs hold the two side by side on real CKAN 2.12 answers and whole exports.
 *
 * For pages after the first: a JSON record here always follows one already written (`,\n` first).
 */
export function jsonCsvReader(columns: Column[], dropFrom: number, ndjson: boolean): RecordsReader {
  const keys = columns.slice(0, dropFrom).map((c, i) => wordsOf(`${i === 0 ? "{" : ","}${JSON.stringify(c.id)}:`));
  const lead = utf8.encode(ndjson ? "" : ",\n");
  const tail = utf8.encode(keys.length === 0 ? (ndjson ? "{}\n" : "{}") : ndjson ? "}\n" : "}");
  const how: JsonFromCsv = {
    keys,
    kinds: columns.map((c, i) => kindOf(c, i >= dropFrom)),
    lead,
    tail,
    // A value grows by at most its quotes and "false" for "f"; a string's \uXXXX only shrinks.
    extra: lead.length + tail.length + keys.reduce((n, k) => n + k.length + 5, 0),
    ndjson,
    bytesPerRow: 0,
  };
  return (b, at) => readPage(b, at, how);
}

/** How one reader writes its records, and what its pages so far tell of the next one's size. */
interface JsonFromCsv {
  /** Each kept column's `{"name":` or `,"name":`, as words: their padding lands where the value goes (`extra` gives each key five bytes more). */
  keys: Words[];
  kinds: Kind[];
  /** What goes before each record (`,\n` in a JSON array) and after it. */
  lead: Uint8Array;
  tail: Uint8Array;
  /** What a row can grow by. */
  extra: number;
  ndjson: boolean;
  bytesPerRow: number;
}

function kindOf(column: Column, dropped: boolean): Kind {
  if (dropped) return Kind.Drop;
  if (column.type === "bool") return Kind.Bool;
  if (isJsonType(column.type)) return Kind.Json;
  return isNumericType(column.type) ? Kind.Number : Kind.String;
}

/** One page's CSV records (the JSON string at `at`), written as JSON records: see jsonCsvReader. */
function readPage(b: Uint8Array, at: number, how: JsonFromCsv): ReturnType<RecordsReader> {
  const { keys, kinds, lead, tail, extra, ndjson } = how;
  const width = kinds.length;
  if (b[at] !== QUOTE) throw new NotTheJson("records are not a string");
  const length = b.length;
  let out = pageBuffer(length - at, how.bytesPerRow, extra);
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
    if (column === 0) {
      if (b[i] === QUOTE) break;
      if (o + (length - i) + extra > out.length) out = grownBytes(out, o, length - i + extra);
      for (let k = 0; k < lead.length; k++) out[o++] = lead[k]!;
    }
    const kind = column < width ? kinds[column]! : Kind.Drop;
    const start = i;
    if (kind !== Kind.Drop) o = putWords(out, o, keys[column]!);
    if (kind === Kind.String) {
      readString(b, i, out, o);
    } else {
      readCell(b, i, out, o, false, ndjson && kind === Kind.Json);
      // The cell is written bare only when it is the value its column's type says: anything else
      // (a hostile `1,"isAdmin":true`, NaN, `$1.00`) goes out as a JSON string, escaped.
      if (kind !== Kind.Drop && fitsBare(out, o, scanned.o, scanned.quoted, kind))
        scanned.o = rawValue(out, o, scanned.o, scanned.quoted, kind);
      else if (kind !== Kind.Drop) readString(b, i, out, o);
    }
    i = scanned.i;
    if (kind !== Kind.Drop) o = scanned.o;
    if (column === width - 1) {
      lastStart = start;
      lastEnd = i;
      if (firstStart < 0) firstStart = start;
    }
    if (scanned.ended) {
      if (column !== width - 1) throw new NotTheJson(`a row has ${column + 1} cells for ${width} columns`);
      for (let k = 0; k < tail.length; k++) out[o++] = tail[k]!;
      if (rows === ends.length) ends = grownEnds(ends);
      ends[rows++] = o;
      column = 0;
    } else {
      column++;
    }
  }
  if (rows > 0) how.bytesPerRow = (i - at) / rows;
  return copiedPage(out, o, ends, rows, i + 1, { b, firstStart, lastStart, lastEnd });
}

/**
 * Whether the raw cell at out[start, end) may be written as it is: null, t/f in a bool column, a
 * JSON number in a number column, one whole JSON value in a json or array column. CKAN writes no
 * other, but what reaches the worker is only text: a cell must not be able to close its record.
 */
function fitsBare(out: Uint8Array, start: number, end: number, quoted: boolean, kind: Kind): boolean {
  if (end === start && !quoted) return true;
  if (kind === Kind.Bool) return end - start === 1 && (out[start] === 0x74 || out[start] === 0x66);
  if (kind === Kind.Number) return isJsonNumber(out, start, end);
  return isOneJsonValue(out, start, end);
}

/** The JSON value of a raw cell now at out[start, end) that fits bare (see fitsBare): returns its new end. */
function rawValue(out: Uint8Array, start: number, end: number, quoted: boolean, kind: Kind): number {
  if (end === start && !quoted) return put(out, start, NULL);
  if (kind === Kind.Bool) return put(out, start, out[start] === 0x74 ? TRUE : FALSE);
  return end;
}

function put(out: Uint8Array, at: number, word: Uint8Array): number {
  for (let k = 0; k < word.length; k++) out[at + k] = word[k]!;
  return at + word.length;
}

/**
 * A cell as a JSON string, written at `o` (an empty unquoted cell is null). CKAN's CSV arrives
 * JSON-escaped by Python; most of those escapes are PostgreSQL's `to_json` ones too and stay: only
 * CSV's doubled quotes are undone and `\uXXXX` of a character from U+0020 up becomes its UTF-8.
 */
function readString(b: Uint8Array, i: number, out: Uint8Array, o: number): void {
  const quoted = b[i] === BACKSLASH && b[i + 1] === QUOTE;
  if (quoted) i += 2;
  else if (b[i] === COMMA || b[i] === QUOTE || (b[i] === BACKSLASH && b[i + 1] === 0x6e)) {
    scanned.i = endOfCell(b, i);
    scanned.o = put(out, o, NULL);
    return;
  }
  out[o] = QUOTE;
  readStringText(b, i, out, o + 1, quoted);
}

/** readString's text from `i` (past the cell's opening quote if `quoted`) and its closing quote. */
function readStringText(b: Uint8Array, i: number, out: Uint8Array, o: number, quoted: boolean): void {
  const from = wordsIn(b);
  const to = wordsOut(out);
  const last = b.length - 4;
  for (;;) {
    if (i <= last) {
      // Four bytes at once where none is a quote, a backslash or a comma (see csv-records.ts).
      const w = from.getInt32(i, true);
      const special = (hasByte(w ^ 0x22222222) | hasByte(w ^ 0x2c2c2c2c) | hasByte(w ^ 0x5c5c5c5c)) & 0x80808080;
      if (special === 0) {
        to.setInt32(o, w, true);
        i += 4;
        o += 4;
        continue;
      }
      for (let k = firstFlagged(special); k > 0; k--) out[o++] = b[i++]!;
    }
    const c = b[i];
    if (c === undefined) throw new NotTheJson("unterminated string");
    if (c > QUOTE && c !== BACKSLASH && c !== COMMA) {
      out[o++] = c;
      i++;
      continue;
    }
    if (c === BACKSLASH) {
      const e = b[i + 1];
      if (e === QUOTE && quoted) {
        i += 2;
        if (!doubledQuote(b, i - 2)) break;
        out[o++] = BACKSLASH;
        out[o++] = QUOTE;
        i += 2;
        continue;
      }
      if (e === 0x6e && !quoted) break;
      const written = stringEscape(b, i, out, o);
      i += written >> 8;
      o += written & 7;
      continue;
    }
    if (!quoted && (c === COMMA || c === QUOTE)) break;
    if (c === QUOTE) throw new NotTheJson("unterminated quoted cell");
    out[o++] = c;
    i++;
  }
  out[o++] = QUOTE;
  scanned.i = endOfCell(b, i);
  scanned.o = o;
}

/**
 * Any other escape at b[i], as to_json writes it: `\uXXXX` (see unicodeEscape), `\/` as `/`, and
 * `\"` (a quote in an unquoted cell), `\\`, `\n`, `\r`, `\t`, `\b`, `\f` as they are. Returns the
 * bytes read << 8 | the bytes written.
 */
function stringEscape(b: Uint8Array, i: number, out: Uint8Array, o: number): number {
  const e = b[i + 1]!;
  if (e === 0x75) return unicodeEscape(b, i, out, o);
  if (e === 0x2f) {
    out[o] = e;
    return (2 << 8) | 1;
  }
  out[o] = BACKSLASH;
  out[o + 1] = e;
  return (2 << 8) | 2;
}

/**
 * The `\uXXXX` escape at b[i] as to_json writes it, at out[o]: a control character as it is
 * (lowercased, as Python writes it), anything else as its UTF-8. Returns the bytes read << 8 | the
 * bytes written.
 */
function unicodeEscape(b: Uint8Array, i: number, out: Uint8Array, o: number): number {
  if (hex4(b, i + 2) >= 0x20) return writeEscape(b, i, out, o);
  for (let k = 0; k < 6; k++) {
    const d = b[i + k]!;
    out[o + k] = k >= 2 && d >= 0x41 && d <= 0x46 ? d | 0x20 : d;
  }
  return (6 << 8) | 6;
}
