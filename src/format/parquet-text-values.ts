import type { SchemaElement } from "hyparquet-writer";
import { unconvertMinMax } from "hyparquet-writer/src/unconvert.js";
import type { Row } from "../rows/types.ts";
import { type Bounds, type ChunkValues, ColumnValues } from "./parquet-chunk.ts";
import { type Cells, cellText, NULL_CELL } from "./parquet-from-csv.ts";
import { jsonUtf8, textUtf8, utf8Room } from "./parquet-text.ts";

// A BYTE_ARRAY column (text, numeric text, JSON): each value's UTF-8 written from CKAN's JSON text
// into one buffer, PLAIN (a 4-byte length, then the bytes). A chunk starts dictionary-encoded (each
// distinct JSON text once, found by the text itself: no decoding for a repeat) and turns PLAIN once
// the dictionary stops paying: more than half its values distinct, or past the limits below. A
// column that turned PLAIN starts its next chunks PLAIN.

const MAX_ENTRIES = 1 << 15;
const MAX_DICTIONARY_BYTES = 1 << 20;
/** Below this many entries a dictionary is kept whatever the share of distinct values. */
const SMALL_DICTIONARY = 1024;

/** A growing buffer of PLAIN byte arrays. */
class Plain {
  bytes = new Uint8Array(1 << 16);
  length = 0;

  /** Room for `n` more bytes. */
  room(n: number): Uint8Array {
    if (this.length + n > this.bytes.length) {
      const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + n));
      grown.set(this.bytes.subarray(0, this.length));
      this.bytes = grown;
    }
    return this.bytes;
  }
}

/** Unsigned byte order of two PLAIN values (each at its length prefix). */
function compare(bytes: Uint8Array, a: number, b: number): number {
  const aLength = lengthAt(bytes, a);
  const bLength = lengthAt(bytes, b);
  const n = Math.min(aLength, bLength);
  for (let i = 4; i < n + 4; i++) {
    const d = bytes[a + i]! - bytes[b + i]!;
    if (d !== 0) return d;
  }
  return aLength - bLength;
}

const lengthAt = (bytes: Uint8Array, at: number): number =>
  bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24);

// A leading U+FEFF is a character of the value, kept (TextDecoder would drop it by default).
const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

export class TextValues extends ColumnValues {
  private readonly plain = new Plain();
  private readonly entries = new Plain();
  private dictionary: Map<string, number> | undefined = new Map();
  /** Entries in the dictionary: found by CKAN's JSON text (`dictionary`), or for cells by their bytes. */
  private entryCount = 0;
  /**
   * The entries cells made (`cellsToDictionary`), by a hash of their bytes (no string made to find
   * one), and where two texts share a hash by the later one's text. Apart from `dictionary`'s keys
   * (a chunk of a snapshot's continued part has a page of JSON rows, then cells): the same value
   * from both may be two entries, never one entry for two values.
   */
  private byHash = new Map<number, number>();
  private byText = new Map<string, number>();
  private starts = new Int32Array(1024);
  private indexes = new Int32Array(1024);
  private count = 0;
  private usesDictionary = true;
  private readonly utf8: (raw: string, out: Uint8Array, p: number) => number;

  /** `stats`: whether the chunk's min and max are kept (not for JSON: an order of JSON text tells nothing). */
  private readonly element: SchemaElement;
  private readonly stats: boolean;
  constructor(element: SchemaElement, stats: boolean, json: boolean) {
    super();
    this.element = element;
    this.stats = stats;
    this.utf8 = json ? jsonUtf8 : textUtf8;
  }

  add(rows: Row[], column: number): number {
    this.roomForRows(rows.length);
    let from = 0;
    let chars = 0;
    if (this.dictionary !== undefined) {
      const [upTo, read] = this.addToDictionary(rows, column);
      from = upTo;
      chars += read;
    }
    return from < rows.length ? chars + this.addPlain(rows, column, from) : chars;
  }

  addCells(cells: Cells, column: number, from: number, to: number): number {
    this.roomForRows(to - from);
    let at = from;
    let chars = 0;
    if (this.dictionary !== undefined) {
      const [upTo, read] = this.cellsToDictionary(cells, column, from, to);
      at = upTo;
      chars += read;
    }
    return at < to ? chars + this.cellsToPlain(cells, column, at, to) : chars;
  }

  /** `addToDictionary` for cells: a cell's text is its bytes, and the dictionary finds it by its text. */
  private cellsToDictionary(cells: Cells, column: number, from: number, to: number): [number, number] {
    if (this.indexes.length < this.count + to - from) this.indexes = grown(this.indexes, this.count + to - from);
    const { defs, indexes, entries } = this;
    const { bytes, at, length, width } = cells;
    let { rows: r, count: n, nulls } = this;
    let chars = 0;
    let row = from;
    for (let k = from * width + column; row < to; row++, k += width) {
      const size = length[k]!;
      if (size === NULL_CELL) {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      const start = at[k]!;
      const hash = hashOf(bytes, start, size);
      let e = this.byHash.get(hash);
      // Another text with the same hash (rare): found by its text.
      if (e !== undefined && !sameBytes(entries.bytes, this.starts[e]!, bytes, start, size))
        e = this.byText.get(cellText(bytes, start, size));
      if (e === undefined) {
        e = this.entryCount;
        if (e >= MAX_ENTRIES || entries.length > MAX_DICTIONARY_BYTES || (e > SMALL_DICTIONARY && 2 * e > n)) break;
        if (this.starts.length <= e) this.starts = grown(this.starts, e + 1);
        this.starts[e] = entries.length;
        const out = entries.room(size + 4);
        setLength(out, entries.length, size);
        out.set(bytes.subarray(start, start + size), entries.length + 4);
        entries.length += size + 4;
        this.entryCount = e + 1;
        if (this.byHash.has(hash)) this.byText.set(cellText(bytes, start, size), e);
        else this.byHash.set(hash, e);
      }
      defs[r++] = 1;
      chars += size + 1;
      indexes[n++] = e;
    }
    Object.assign(this, { rows: r, count: n, nulls });
    if (row < to) this.toPlain();
    return [row, chars];
  }

  private cellsToPlain(cells: Cells, column: number, from: number, to: number): number {
    const { defs, plain } = this;
    const { bytes, at, length, width } = cells;
    let { rows: r, count: n, nulls } = this;
    let chars = 0;
    for (let row = from, k = from * width + column; row < to; row++, k += width) {
      const size = length[k]!;
      if (size === NULL_CELL) {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      defs[r++] = 1;
      chars += size + 1;
      n++;
      const out = plain.room(size + 4);
      setLength(out, plain.length, size);
      const start = at[k]!;
      // Short texts byte by byte: a copy through `set` costs a view per value.
      if (size <= 32) for (let b = 0, o = plain.length + 4; b < size; b++) out[o + b] = bytes[start + b]!;
      else out.set(bytes.subarray(start, start + size), plain.length + 4);
      plain.length += size + 4;
    }
    Object.assign(this, { rows: r, count: n, nulls });
    return chars;
  }

  /** Rows from the first into the dictionary, until it stops paying; returns where it stopped and the characters read. */
  private addToDictionary(rows: Row[], column: number): [number, number] {
    const dictionary = this.dictionary!;
    if (this.indexes.length < this.count + rows.length) this.indexes = grown(this.indexes, this.count + rows.length);
    const { defs, indexes, entries, utf8 } = this;
    let { rows: r, count: n, nulls } = this;
    let chars = 0;
    let at = 0;
    for (; at < rows.length; at++) {
      const raw = rows[at]![column];
      if (raw === undefined || raw === "null") {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      let k = dictionary.get(raw);
      if (k === undefined) {
        k = this.entryCount;
        if (k >= MAX_ENTRIES || entries.length > MAX_DICTIONARY_BYTES || (k > SMALL_DICTIONARY && 2 * k > n)) break;
        if (this.starts.length <= k) this.starts = grown(this.starts, k + 1);
        this.starts[k] = entries.length;
        const out = entries.room(utf8Room(raw) + 4);
        const end = utf8(raw, out, entries.length + 4);
        setLength(out, entries.length, end - entries.length - 4);
        entries.length = end;
        dictionary.set(raw, k);
        this.entryCount = k + 1;
      }
      defs[r++] = 1;
      chars += raw.length;
      indexes[n++] = k;
    }
    Object.assign(this, { rows: r, count: n, nulls });
    if (at < rows.length) this.toPlain();
    return [at, chars];
  }

  private addPlain(rows: Row[], column: number, from: number): number {
    const { defs, plain, utf8 } = this;
    let { rows: r, count: n, nulls } = this;
    let chars = 0;
    for (let at = from; at < rows.length; at++) {
      const raw = rows[at]![column];
      if (raw === undefined || raw === "null") {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      defs[r++] = 1;
      chars += raw.length;
      n++;
      const out = plain.room(utf8Room(raw) + 4);
      const end = utf8(raw, out, plain.length + 4);
      setLength(out, plain.length, end - plain.length - 4);
      plain.length = end;
    }
    Object.assign(this, { rows: r, count: n, nulls });
    return chars;
  }

  private forgetEntries(): void {
    this.entryCount = 0;
    this.byHash.clear();
    this.byText.clear();
  }

  /** The dictionary's values so far written out PLAIN, in their rows' order; PLAIN from now on. */
  private toPlain(): void {
    const { entries, plain, starts, indexes } = this;
    for (let i = 0; i < this.count; i++) {
      const start = starts[indexes[i]!]!;
      const length = lengthAt(entries.bytes, start) + 4;
      plain.room(length).set(entries.bytes.subarray(start, start + length), plain.length);
      plain.length += length;
    }
    this.dictionary = undefined;
    this.forgetEntries();
    this.usesDictionary = false;
  }

  protected take(): { values: ChunkValues; bounds: Bounds } {
    const dictionary = this.dictionary;
    const source = dictionary === undefined ? this.plain : this.entries;
    const bounds = this.stats ? this.bounds(source) : {};
    const values: ChunkValues =
      dictionary === undefined || this.entryCount === 0
        ? { plain: this.plain.bytes.subarray(0, this.plain.length) }
        : {
            dictionary: {
              bytes: this.entries.bytes.subarray(0, this.entries.length),
              entries: this.entryCount,
              indexes: this.indexes,
              count: this.count,
            },
          };
    this.plain.length = 0;
    this.entries.length = 0;
    this.count = 0;
    this.dictionary = this.usesDictionary ? new Map() : undefined;
    this.forgetEntries();
    return { values, bounds };
  }

  /** Min and max of the PLAIN values in `source`, shortened as the footer keeps them (16 bytes). */
  private bounds(source: Plain): Bounds {
    const { bytes, length } = source;
    if (length === 0) return {};
    let min = 0;
    let max = 0;
    for (let at = 0; at < length; at += lengthAt(bytes, at) + 4) {
      if (compare(bytes, at, min) < 0) min = at;
      else if (compare(bytes, at, max) > 0) max = at;
    }
    const value = (at: number): Uint8Array => bytes.subarray(at + 4, at + 4 + lengthAt(bytes, at));
    const low = value(min);
    const high = value(max);
    const shortLow = unconvertMinMax(low, this.element, false) as Uint8Array;
    const shortHigh = unconvertMinMax(high, this.element, true) as Uint8Array;
    return {
      min: decoder.decode(shortLow),
      max: decoder.decode(shortHigh),
      ...(shortLow.length < low.length || shortHigh.length < high.length
        ? { exact: [shortLow.length === low.length, shortHigh.length === high.length] as [boolean, boolean] }
        : {}),
    };
  }
}

/** FNV-1a of bytes [at, at + length). */
function hashOf(bytes: Uint8Array, at: number, length: number): number {
  let h = 0x811c9dc5;
  for (let k = at; k < at + length; k++) h = Math.imul(h ^ bytes[k]!, 0x01000193);
  return h;
}

/** Whether the PLAIN value at `entry` (its length, then its bytes) is the bytes [at, at + length). */
function sameBytes(entries: Uint8Array, entry: number, bytes: Uint8Array, at: number, length: number): boolean {
  if (lengthAt(entries, entry) !== length) return false;
  for (let k = 0; k < length; k++) if (entries[entry + 4 + k] !== bytes[at + k]) return false;
  return true;
}

function setLength(out: Uint8Array, at: number, n: number): void {
  out[at] = n & 0xff;
  out[at + 1] = (n >>> 8) & 0xff;
  out[at + 2] = (n >>> 16) & 0xff;
  out[at + 3] = n >>> 24;
}

function grown(array: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  const next = new Int32Array(Math.max(array.length * 2, need));
  next.set(array);
  return next;
}
