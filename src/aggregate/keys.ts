import type { CsvRow } from "./csv-row.ts";
import type { Bucket } from "./spec.ts";
import { detached, isNull, unquoted, type Kind } from "./values.ts";

// What tells groups apart: each group column's values numbered as they are first met, by the text
// that PostgreSQL would hold equal (`1.0` and `1.00` in a numeric column are one value, as are `-0`
// and `0` in a float one; a bucket is its first characters). A row's group is then found by small
// numbers, and a cell of a CSV page is numbered straight from its stretch of the page's text: no
// string is cut out for it, and none is kept but the first of each value.

/** The number of SQL NULL in every column; values are numbered from 1. */
export const NULL_ID = 0;

/** A column's distinct key texts, numbered from 1 (at most one per group: memory follows the groups). */
export class KeyIds {
  private slots = new Int32Array(64);
  private readonly keys: string[] = [""];
  private readonly hashes: number[] = [0];

  /** The number of the key text src[start, end), given one if it is new. */
  id(src: string, start: number, end: number): number {
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ src.charCodeAt(i), 0x01000193);
    const mask = this.slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const id = this.slots[slot]!;
      if (id === 0) return this.add(src, start, end, hash, slot);
      if (this.hashes[id] === hash && this.same(this.keys[id]!, src, start, end)) return id;
    }
  }

  private same(key: string, src: string, start: number, end: number): boolean {
    if (key.length !== end - start) return false;
    for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) !== src.charCodeAt(start + i)) return false;
    return true;
  }

  private add(src: string, start: number, end: number, hash: number, slot: number): number {
    const id = this.keys.length;
    // A stretch of a page's text would keep the whole page alive.
    this.keys.push(detached(src.slice(start, end)));
    this.hashes.push(hash);
    this.slots[slot] = id;
    if (id * 2 > this.slots.length) this.grow();
    return id;
  }

  private grow(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let id = 1; id < this.keys.length; id++) {
      let slot = this.hashes[id]! & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = id;
    }
    this.slots = slots;
  }
}

/** A group column's key of a value's text src[start, end): its number in `ids`. */
type KeyOfText = (src: string, start: number, end: number, ids: KeyIds) => number;

/** numeric: trailing zeros of the fraction (and a bare point) left out; minus zero is zero. */
function numericKey(src: string, start: number, end: number, ids: KeyIds): number {
  let point = -1;
  for (let i = start; i < end; i++) if (src.charCodeAt(i) === 46) point = i;
  let last = end;
  if (point >= 0) {
    while (last > point + 1 && src.charCodeAt(last - 1) === 48) last--;
    if (last === point + 1) last = point;
  }
  return isZero(src, start, last) ? ids.id("0", 0, 1) : ids.id(src, start, last);
}

/** `-0`, or nothing (a fraction of zeros, its point left out). */
const isZero = (src: string, start: number, end: number): boolean =>
  end === start || (end === start + 2 && src.charCodeAt(start) === 45 && src.charCodeAt(start + 1) === 48);

/** float: minus zero is zero. */
const floatKey: KeyOfText = (src, start, end, ids) =>
  end === start + 2 && src.charCodeAt(start) === 45 && src.charCodeAt(start + 1) === 48
    ? ids.id("0", 0, 1)
    : ids.id(src, start, end);

const plainKey: KeyOfText = (src, start, end, ids) => ids.id(src, start, end);

/** Characters of a date or timestamp (`2020-03-15T10:11:12.500`) that name its bucket. */
const BUCKET_LENGTH: Record<Bucket, number> = { year: 4, month: 7, day: 10, hour: 13 };

/**
 * A bucket's key: the common four-digit-year form by its first characters, anything else by its
 * bucket's value (written with quotes, so never the same text as a first-characters key).
 */
function bucketKey(bucket: Bucket, value: (cell: string) => string): KeyOfText {
  const length = BUCKET_LENGTH[bucket];
  return (src, start, end, ids) => {
    if (end - start >= length && src.charCodeAt(start + 4) === 45) return ids.id(src, start, start + length);
    const text = value(`"${src.slice(start, end)}"`);
    return ids.id(text, 0, text.length);
  };
}

/** Kinds whose CSV cell text is the text of the value CKAN's JSON holds (NaN and the infinities unquoted). */
const SAME_TEXT: ReadonlySet<Kind> = new Set(["int", "bigint", "numeric", "float", "text", "date", "timestamp"]);

export interface GroupKeyer {
  /** The key number of a cell of CKAN's JSON text (undefined or `null`: NULL_ID). */
  ofCell(cell: string | undefined, ids: KeyIds): number;
  /** The key number of cell `c` of a CSV row: the same number as its JSON text would get. */
  ofCsv(row: CsvRow, c: number, ids: KeyIds): number;
}

/** How a group column's values are told apart: by kind, or by bucket (`value`: the bucket's value of a cell). */
export function groupKeyer(kind: Kind, bucket: Bucket | undefined, value: (cell: string) => string): GroupKeyer {
  if (!SAME_TEXT.has(kind)) {
    // Booleans, arrays and the rest: by CKAN's JSON text, which a CSV cell is first written as.
    const ofCell = (cell: string | undefined, ids: KeyIds) => (isNull(cell) ? NULL_ID : ids.id(cell, 0, cell.length));
    return { ofCell, ofCsv: (row, c, ids) => ofCell(row.cell(c), ids) };
  }
  const key: KeyOfText =
    bucket !== undefined
      ? bucketKey(bucket, value)
      : kind === "numeric"
        ? numericKey
        : kind === "float"
          ? floatKey
          : plainKey;
  return {
    ofCell(cell, ids) {
      if (isNull(cell)) return NULL_ID;
      const text = unquoted(cell);
      return key(text, 0, text.length, ids);
    },
    ofCsv(row, c, ids) {
      if (row.quoted[c] === 0 && row.starts[c] === row.ends[c]) return NULL_ID;
      return key(row.source(c), row.starts[c]!, row.ends[c]!, ids);
    },
  };
}
