// CKAN's `records_format: "csv"` records as they arrive: one JSON string (Python's `json.dumps`,
// every non-ASCII character as `\uXXXX`) holding PostgreSQL's CSV (LF rows, quotes doubled, null an
// empty unquoted cell). Read here cell by cell straight from the answer's bytes, for the readers
// that write them as CSV (csv-passthrough.ts), JSON (json-from-csv.ts) or sheet rows (xlsx-from-csv.ts).
import type { CopiedRecords, RecordsReader, RecordsStream, StreamedRecords } from "../rows/batch.ts";
import { NotTheJson } from "../rows/json-bytes.ts";
import { freedIfThrown, ownedBytes, release } from "../rows/owned-bytes.ts";

// Module constants rather than rows/json-bytes.ts's imports: `readCell` compares each byte with them, and
// imported bindings measured about 10% slower there (reading a 32,000-row page, in Node).
const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const LF = 10;
const CR = 13;
const TAB = 9;
const SPACE = 32;

/** Where the cell `readCell` read last ended; its offsets stay the caller's locals, this is written once a cell. */
export const scanned = { i: 0, o: 0, quoted: false, ended: false, bom: false };

/**
 * Reads the cell at `i` of the records string into `out` at `o`, its escapes undone: with CKAN's
 * quoting kept (`quotes`: the quotes and doubled quotes as they came) or its text alone. `oneLine`
 * turns the cell's line breaks into spaces (a json value's whitespace, for NDJSON). Sets `scanned`:
 * past the delimiter, the cell's end in `out`, whether CKAN quoted it, whether the row ended after
 * it, and whether it holds a BOM (escaped or as UTF-8: 0xEF starts it).
 */
export function readCell(
  b: Uint8Array,
  i: number,
  out: Uint8Array,
  o: number,
  quotes: boolean,
  oneLine: boolean,
): void {
  const quoted = b[i] === BACKSLASH && b[i + 1] === QUOTE;
  if (quoted) {
    readQuoted(b, i + 2, out, o, quotes, oneLine);
    return;
  }
  o = readPlain(b, i, out, o);
  scanned.i = endOfCell(b, scanned.i);
  scanned.o = o;
  scanned.quoted = false;
}

/** A quoted cell's text from `i` (past its opening `\"`) into `out` at `o`: see readCell. */
function readQuoted(b: Uint8Array, i: number, out: Uint8Array, o: number, quotes: boolean, oneLine: boolean): void {
  let bom = false;
  if (quotes) out[o++] = QUOTE;
  const from = wordsIn(b);
  const to = wordsOut(out);
  const last = b.length - 4;
  // A tight loop: most of a page's time is spent in this one and readPlain's.
  for (;;) {
    if (i <= last) {
      // Four bytes at once where none is a quote, a backslash or 0xEF (a BOM starts with it: see hasByte).
      const w = from.getInt32(i, true);
      const special = (hasByte(w ^ 0x22222222) | hasByte(w ^ 0x5c5c5c5c) | hasByte(w ^ 0xefefefef)) & 0x80808080;
      if (special === 0) {
        to.setInt32(o, w, true);
        i += 4;
        o += 4;
        continue;
      }
      for (let k = firstFlagged(special); k > 0; k--) out[o++] = b[i++]!;
    }
    const c = b[i]!;
    if (c > QUOTE && c !== BACKSLASH && c < 0xef) {
      out[o++] = c;
      i++;
      continue;
    }
    if (c === BACKSLASH) {
      if (b[i + 1] === QUOTE) {
        if (!doubledQuote(b, i)) {
          i += 2;
          if (quotes) out[o++] = QUOTE;
          break;
        }
        out[o++] = QUOTE;
        if (quotes) out[o++] = QUOTE;
        i += 4;
        continue;
      }
      const written = writeEscape(b, i, out, o);
      if (written & BOM_SEEN) bom = true;
      else if (oneLine && (written & 7) === 1 && (out[o] === LF || out[o] === CR)) out[o] = SPACE;
      i += written >> 8;
      o += written & 7;
      continue;
    }
    if (c === undefined || c === QUOTE) throw new NotTheJson("unterminated quoted cell");
    if (c === 0xef) bom = true;
    out[o++] = c;
    i++;
  }
  scanned.i = endOfCell(b, i);
  scanned.o = o;
  scanned.quoted = true;
  scanned.bom = bom;
}

/** An unquoted cell's text from `i` into `out` at `o`: returns its end in `out`; sets scanned.i (its delimiter) and bom. */
function readPlain(b: Uint8Array, i: number, out: Uint8Array, o: number): number {
  let bom = false;
  const from = wordsIn(b);
  const to = wordsOut(out);
  const last = b.length - 4;
  for (;;) {
    if (i <= last) {
      // Four bytes at once where none is a quote, a comma, a backslash or 0xEF (see hasByte).
      const w = from.getInt32(i, true);
      const special =
        (hasByte(w ^ 0x22222222) | hasByte(w ^ 0x2c2c2c2c) | hasByte(w ^ 0x5c5c5c5c) | hasByte(w ^ 0xefefefef)) &
        0x80808080;
      if (special === 0) {
        to.setInt32(o, w, true);
        i += 4;
        o += 4;
        continue;
      }
      for (let k = firstFlagged(special); k > 0; k--) out[o++] = b[i++]!;
    }
    const c = b[i]!;
    // Most bytes are none of the few that mean something here: one test, and copied.
    if (c > QUOTE && c !== COMMA && c !== BACKSLASH && c < 0xef) {
      out[o++] = c;
      i++;
      continue;
    }
    if (c === COMMA || c === QUOTE) break;
    if (c === BACKSLASH) {
      if (b[i + 1] === 0x6e) break;
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
  scanned.i = i;
  scanned.bom = bom;
  return o;
}

// A leading U+FEFF is a character of the value, kept: texts that differ by one are two values.
const utf8Text = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/**
 * The text of the UTF-8 bytes at [at, end) (a cell read by a reader, for what needs a string): a short
 * ASCII one by `String.fromCharCode`, cheaper than the decoder for a few bytes; anything else decoded.
 */
export function bytesText(bytes: Uint8Array, at: number, end: number): string {
  if (end - at <= 64) {
    let k = at;
    while (k < end && bytes[k]! < 0x80) k++;
    if (k === end) return String.fromCharCode.apply(null, bytes.subarray(at, end) as unknown as number[]);
  }
  return utf8Text.decode(bytes.subarray(at, end));
}

/**
 * Sets the high bit of a word's first zero byte (and maybe of bytes after it, never of one before):
 * `hasByte(w ^ 0x22222222)` finds the first quote of four bytes. The cell loops copy a word with none
 * of the bytes that mean something to them whole, and the bytes before the first that does one by
 * one (`firstFlagged`), so each such byte costs one word that fails. Measured, paired in workerd: a
 * tenth less CPU for a CSV export. Words go through DataViews, at any offset and little-endian: the
 * bytes keep their order, and a word is written only where its bytes would be (`out` may be `b`).
 * Each loop (readPlain, readQuoted, json-from-csv's readStringText) spells its word step out: one
 * function for the three measured 5-10% slower, as V8 no longer inlined it into the page loops.
 */
export const hasByte = (x: number): number => (x - 0x01010101) & ~x;
/** The index of the first byte of a word (little-endian) whose high bit is set in `flags` (not 0). */
export const firstFlagged = (flags: number): number => (31 - Math.clz32(flags & -flags)) >> 3;

// The last bytes read and written, and their views: a page's cells share them, one view per page.
let inBytes: Uint8Array | undefined;
let inView: DataView = new DataView(new ArrayBuffer(0));
let outBytes: Uint8Array | undefined;
let outView = inView;
/** A DataView of the bytes a loop reads, for its words. */
export const wordsIn = (b: Uint8Array): DataView =>
  b === inBytes ? inView : ((inBytes = b), (inView = new DataView(b.buffer, b.byteOffset, b.byteLength)));
/** A DataView of the bytes a loop writes, for its words. */
export const wordsOut = (b: Uint8Array): DataView =>
  b === outBytes ? outView : ((outBytes = b), (outView = new DataView(b.buffer, b.byteOffset, b.byteLength)));

/** In a quoted cell, the `\"` at `at` is CSV's doubled quote (another follows), not the closing one. */
export const doubledQuote = (b: Uint8Array, at: number): boolean => b[at + 2] === BACKSLASH && b[at + 3] === QUOTE;

/** After a cell: past its delimiter (`scanned.ended` when that was the row's LF or the records' end). */
export function endOfCell(b: Uint8Array, i: number): number {
  const c = b[i];
  if (c === COMMA) {
    scanned.ended = false;
    return i + 1;
  }
  scanned.ended = true;
  if (c === QUOTE) return i;
  if (c === BACKSLASH && b[i + 1] === 0x6e) return i + 2;
  throw new NotTheJson("expected a comma or a line end after a cell");
}

/**
 * The output buffer of a page of CSV records of `size` bytes: escapes only shrink, so a row's output
 * is at most its input and `growth`; rows counted from the last page's width.
 */
export const pageBuffer = (size: number, bytesPerRow: number, growth: number): Uint8Array<ArrayBuffer> =>
  ownedBytes(Math.ceil(size + (size / (bytesPerRow || 32)) * growth) + 64);

/**
 * A read's result: the output's first `o` bytes, its `rows` row ends, where the records ended in the
 * answer, and the first and last rows' `_id`s, from where their last cells start in the answer `b`.
 */
export function copiedPage(
  out: Uint8Array,
  o: number,
  ends: Uint32Array,
  rows: number,
  end: number,
  ids: { b: Uint8Array; firstStart: number; lastStart: number; lastEnd: number },
): CopiedRecords {
  return {
    page: { bytes: out.subarray(0, o), rows, ends: ends.subarray(0, rows) },
    end,
    lastId: cellDigits(ids.b, ids.lastStart, ids.lastEnd),
    // The first row's last cell ends at its row's end (cellDigits stops there).
    firstId: cellDigits(ids.b, ids.firstStart, ids.b.length),
  };
}

/** The text of the digits cell at [start, end) of the records (an `_id`: its text is its bytes). */
export function cellDigits(b: Uint8Array, start: number, end: number): string | undefined {
  if (start < 0) return undefined;
  let text = "";
  for (let k = start; k < end && b[k] !== COMMA && b[k] !== BACKSLASH && b[k] !== QUOTE; k++)
    text += String.fromCharCode(b[k]!);
  return text;
}

/** `\ufeff` (any case) at `at`. */
const isBomEscape = (b: Uint8Array, at: number): boolean =>
  (b[at + 2]! | 0x20) === 0x66 &&
  (b[at + 3]! | 0x20) === 0x65 &&
  (b[at + 4]! | 0x20) === 0x66 &&
  (b[at + 5]! | 0x20) === 0x66;

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

/** Bytes of whole rows a streamed page gathers before reading them: fewer, larger batches for the encoder. */
export const SEGMENT_BYTES = 256 * 1024;

/**
 * Whether an export's pages guess where rows end (see CsvRecordsStream): not after guesses failed on
 * two pages, as they do on most pages of a table whose text has line breaks throughout, each costing
 * a batch read twice (3% of such a page).
 */
export class RowEndGuesses {
  #failed = 0;

  get worth(): boolean {
    return this.#failed < 2;
  }

  failed(): void {
    this.#failed++;
  }
}

/**
 * CKAN's CSV records string read as its answer arrives: bytes in as the body gives them (cut
 * anywhere, inside an escape or a quoted cell), whole rows out, each batch read by the same reader
 * that reads a whole page (`read`, given a string of just those rows). A page in flight holds the
 * row it is inside of and at most SEGMENT_BYTES of rows not yet read, never its whole answer.
 *
 * Rows end at the `\n` escape outside a quoted cell (a `\"` opens or closes one, a doubled quote
 * is two); the string ends at the first bare quote.
 *
 * Finding them means a pass over every byte before the reader's own (a sixth of a CSV page's time,
 * measured in Node). A reader that only writes its page (`guess`) is instead handed the rows up to
 * the last `\n` escape, found from the end: where that `\n` was inside a quoted cell, the reader
 * meets the string's end inside it and throws, and this stream goes back to the byte pass for the
 * rest of the answer (a table of multi-line text). So the end of the string is mostly found at the
 * end of the answer (`finish`).
 */
export class CsvRecordsStream implements RecordsStream {
  readonly #read: RecordsReader;
  /** Whether rows are handed on up to a guessed row end (see above): false once a guess failed. */
  #guess: boolean;
  readonly #guesses: RowEndGuesses | undefined;
  /** `#pending` searched up to here (from its end) for a row end, and none found. */
  #searched = 1;
  /** Bytes pushed and not yet read: whole rows up to `#rowsEnd`, then part of a row. */
  #pending: Uint8Array<ArrayBuffer> = ownedBytes(1024);
  /** `#pending` four bytes at a time, for `#scan`. */
  #words = new DataView(this.#pending.buffer);
  #used = 0;
  #rowsEnd = 0;
  #scanAt = 0;
  #inQuotes = false;
  #ended = false;

  /** Rows gathered before they are read (SEGMENT_BYTES; smaller in specs, to cut many segments from a few rows). */
  readonly #segment: number;

  /**
   * `guess`, the export's guesses so far: `read` writes nothing but its page, so a read that throws
   * can be made again on other bytes (not so a reader that folds rows as it reads them:
   * aggregate/csv-pages.ts).
   */
  constructor(read: RecordsReader, options: { guess?: RowEndGuesses; segmentBytes?: number } = {}) {
    this.#read = read;
    this.#guesses = options.guess;
    this.#guess = options.guess?.worth ?? false;
    this.#segment = options.segmentBytes ?? SEGMENT_BYTES;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Bytes of the records string, from just after its opening quote on. */
  push(chunk: Uint8Array): StreamedRecords {
    if (this.#ended) throw new NotTheJson("bytes after the records string ended");
    const need = this.#used + chunk.length + 2;
    if (need > this.#pending.length) {
      const bigger = ownedBytes(Math.max(need, this.#pending.length * 2));
      bigger.set(this.#pending.subarray(0, this.#used + 1));
      release(this.#pending);
      this.#pending = bigger;
      this.#words = new DataView(bigger.buffer);
    }
    // Index 0 is kept for the opening quote the reader expects: written when rows are read.
    this.#pending.set(chunk, this.#used + 1);
    this.#used += chunk.length;
    if (this.#guess) {
      const guessed = this.#guessed();
      if (guessed !== false) return guessed;
    }
    const end = this.#scan();
    if (end >= 0) return this.#end(end);
    return { records: this.#rowsEnd >= this.#segment ? this.#take(false) : undefined, after: undefined };
  }

  /** Whole rows up to the last `\n` escape, once SEGMENT_BYTES are gathered; false: the guess failed, scan instead. */
  #guessed(): StreamedRecords | false {
    const none = { records: undefined, after: undefined };
    if (this.#used < this.#segment) return none;
    const rowsEnd = this.#lastLineEnd();
    if (rowsEnd < 0) return none;
    const b = this.#pending;
    let records: CopiedRecords;
    try {
      records = freedIfThrown(() => this.#readTo(rowsEnd));
    } catch (error) {
      if (!(error instanceof NotTheJson)) throw error;
      // The `\n` was inside a quoted cell (or the bytes are broken: the byte pass then says so).
      this.#guess = false;
      this.#guesses?.failed();
      return false;
    }
    if (records.end < rowsEnd + 2) {
      // The string ended before that `\n` (one in the answer's rest): its closing quote at end - 1.
      this.#ended = true;
      const after = b.slice(records.end, this.#used + 1);
      release(b);
      return { records, after };
    }
    this.#drop(rowsEnd);
    this.#searched = this.#used + 1;
    return { records: records.page.rows > 0 ? records : undefined, after: undefined };
  }

  /** The last `\n` escape's end in `#pending` (its `n`'s index, past the string's first byte), or -1. */
  #lastLineEnd(): number {
    const b = this.#pending;
    let k = this.#used;
    const from = Math.max(1, this.#searched - 1);
    while (k >= from) {
      k = b.lastIndexOf(BACKSLASH, k);
      if (k < from) break;
      let run = k;
      while (run > 1 && b[run - 1] === BACKSLASH) run--;
      // An odd run of backslashes: the last one starts an escape.
      if ((k - run) % 2 === 0 && k < this.#used && b[k + 1] === 0x6e) return k + 1;
      k = run - 1;
    }
    this.#searched = this.#used + 1;
    return -1;
  }

  /** Reads `#pending`'s first `rows` bytes as a string of their own: quote, rows, quote (the byte after them kept aside). */
  #readTo(rows: number): CopiedRecords {
    const b = this.#pending;
    b[0] = QUOTE;
    const kept = b[rows + 1]!;
    b[rows + 1] = QUOTE;
    try {
      return this.#read(b.subarray(0, rows + 2), 0);
    } finally {
      b[rows + 1] = kept;
    }
  }

  /** Drops the `rows` bytes read from `#pending`, keeping the incomplete row's. */
  #drop(rows: number): void {
    const rest = this.#used - rows;
    this.#pending.copyWithin(1, rows + 1, this.#used + 1);
    this.#used = rest;
  }

  /**
   * The answer's bytes ended: the rows kept and where the string ended, found now if it was not yet
   * (`ended` false after it: the answer ended inside its records).
   */
  finish(): StreamedRecords {
    const end = this.#ended ? -1 : this.#scan();
    return end < 0 ? { records: undefined, after: undefined } : this.#end(end);
  }

  /** The string ended at `end` (its closing quote's index in `#pending`): the last rows, and the bytes after it (copied: `#pending` is freed). */
  #end(end: number): StreamedRecords {
    this.#ended = true;
    const after = this.#pending.slice(end + 1, this.#used + 1);
    this.#rowsEnd = end - 1;
    return { records: this.#take(true), after };
  }

  /** Scans the new bytes for row ends and the closing quote; returns the closing quote's index or -1. */
  #scan(): number {
    const b = this.#pending;
    const end = this.#used + 1;
    let i = Math.max(this.#scanAt, 1);
    let inQuotes = this.#inQuotes;
    let rowsEnd = this.#rowsEnd + 1;
    const words = this.#words;
    const last = end - 4;
    while (i < end) {
      // Four bytes at once where none is a quote or a backslash, as most are: a third less time here.
      if (i <= last) {
        const w = words.getInt32(i, true);
        const special = (hasByte(w ^ 0x22222222) | hasByte(w ^ 0x5c5c5c5c)) & 0x80808080;
        if (special === 0) {
          i += 4;
          continue;
        }
        i += firstFlagged(special);
      }
      const c = b[i]!;
      if (c === QUOTE) {
        this.#scanAt = i;
        this.#inQuotes = inQuotes;
        this.#rowsEnd = rowsEnd - 1;
        return i;
      }
      if (c !== BACKSLASH) {
        i++;
        continue;
      }
      // An escape: its second byte may not have arrived yet.
      if (i + 1 >= end) break;
      const e = b[i + 1];
      if (e === QUOTE) inQuotes = !inQuotes;
      else if (e === 0x6e && !inQuotes) rowsEnd = i + 2;
      i += 2;
    }
    this.#scanAt = i;
    this.#inQuotes = inQuotes;
    this.#rowsEnd = rowsEnd - 1;
    return -1;
  }

  /** Reads the whole rows gathered (all of them when the string ended), keeping the incomplete row's bytes. */
  #take(last: boolean): CopiedRecords | undefined {
    const rows = this.#rowsEnd;
    if (rows === 0 && !last) return undefined;
    const records = this.#readTo(rows);
    this.#drop(rows);
    this.#scanAt = Math.max(1, this.#scanAt - rows);
    this.#rowsEnd = 0;
    if (last) release(this.#pending);
    return records.page.rows > 0 || last ? records : undefined;
  }
}
