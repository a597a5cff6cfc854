import type { CsvRow } from "./csv-row.ts";
import type { Bucket } from "./spec.ts";
import { isNull, unquoted, type Kind } from "./values.ts";

// What tells groups apart: each group column's values numbered as they are first met, by the text
// that PostgreSQL would hold equal (`1.0` and `1.00` in a numeric column are one value, as are `-0`
// and `0` in a float one; a bucket is its first characters). A row's group is then found by small
// numbers, and a cell of a CSV page is numbered straight from its bytes: no string is made for it,
// and no bytes kept but the first of each value.

/** The number of SQL NULL in every column; values are numbered from 1. */
export const NULL_ID = 0;

/** A column's distinct keys (UTF-8 bytes), numbered from 1 (at most one per group: memory follows the groups). */
export class KeyIds {
  private slots = new Int32Array(64);
  /** Every key's bytes one after another; key n is arena[offsets[n - 1], offsets[n]). */
  private arena = new Uint8Array(256);
  private readonly offsets: number[] = [0];
  private readonly hashes: number[] = [0];

  /** The number of the key b[start, end), given one if it is new. */
  id(b: Uint8Array, start: number, end: number): number {
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ b[i]!, 0x01000193);
    const mask = this.slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const id = this.slots[slot]!;
      if (id === 0) return this.add(b, start, end, hash, slot);
      if (this.hashes[id] === hash && this.same(id, b, start, end)) return id;
    }
  }

  private same(id: number, b: Uint8Array, start: number, end: number): boolean {
    const from = this.offsets[id - 1]!;
    if (this.offsets[id]! - from !== end - start) return false;
    for (let i = start, k = from; i < end; i++, k++) if (b[i] !== this.arena[k]) return false;
    return true;
  }

  private add(b: Uint8Array, start: number, end: number, hash: number, slot: number): number {
    const id = this.offsets.length;
    const at = this.offsets[id - 1]!;
    if (at + end - start > this.arena.length) {
      const bigger = new Uint8Array(Math.max(this.arena.length * 2, at + end - start));
      bigger.set(this.arena.subarray(0, at));
      this.arena = bigger;
    }
    this.arena.set(b.subarray(start, end), at);
    this.offsets.push(at + end - start);
    this.hashes.push(hash);
    this.slots[slot] = id;
    if (id * 2 > this.slots.length) this.grow();
    return id;
  }

  private grow(): void {
    const slots = new Int32Array(this.slots.length * 2);
    const mask = slots.length - 1;
    for (let id = 1; id < this.offsets.length; id++) {
      let slot = this.hashes[id]! & mask;
      while (slots[slot] !== 0) slot = (slot + 1) & mask;
      slots[slot] = id;
    }
    this.slots = slots;
  }

  /** The number of a key given as text (the rows of a `lists` page). */
  ofText(text: string): number {
    const b = utf8Of(text);
    return this.id(b, 0, b.length);
  }
}

const encoder = new TextEncoder();
const ZERO = encoder.encode("0");
const utf8Of = (text: string): Uint8Array => encoder.encode(text);

/** A group column's key of a value's bytes b[start, end): its number in `ids`. */
type KeyOfBytes = (b: Uint8Array, start: number, end: number, ids: KeyIds) => number;

/** numeric: trailing zeros of the fraction (and a bare point) left out; minus zero is zero. */
function numericKey(b: Uint8Array, start: number, end: number, ids: KeyIds): number {
  let point = -1;
  for (let i = start; i < end; i++) if (b[i] === 46) point = i;
  let last = end;
  if (point >= 0) {
    while (last > point + 1 && b[last - 1] === 48) last--;
    if (last === point + 1) last = point;
  }
  return isZero(b, start, last) ? ids.id(ZERO, 0, 1) : ids.id(b, start, last);
}

/** `-0`, or nothing (a fraction of zeros, its point left out). */
const isZero = (b: Uint8Array, start: number, end: number): boolean =>
  end === start || (end === start + 2 && b[start] === 45 && b[start + 1] === 48);

/** float: minus zero is zero. */
const floatKey: KeyOfBytes = (b, start, end, ids) =>
  end === start + 2 && b[start] === 45 && b[start + 1] === 48 ? ids.id(ZERO, 0, 1) : ids.id(b, start, end);

const plainKey: KeyOfBytes = (b, start, end, ids) => ids.id(b, start, end);

/** Characters of a date or timestamp (`2020-03-15T10:11:12.500`) that name its bucket. */
const BUCKET_LENGTH: Record<Bucket, number> = { year: 4, month: 7, day: 10, hour: 13 };

/**
 * A bucket's key: the common four-digit-year form by its first characters, anything else by its
 * bucket's value (written with quotes, so never the same text as a first-characters key).
 */
function bucketKey(bucket: Bucket, value: (cell: string) => string): KeyOfBytes {
  const length = BUCKET_LENGTH[bucket];
  return (b, start, end, ids) => {
    if (end - start >= length && b[start + 4] === 45) return ids.id(b, start, start + length);
    return ids.ofText(value(`"${decoder.decode(b.subarray(start, end))}"`));
  };
}

const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

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
    const ofCell = (cell: string | undefined, ids: KeyIds) => (isNull(cell) ? NULL_ID : ids.ofText(cell));
    return { ofCell, ofCsv: (row, c, ids) => ofCell(row.cell(c), ids) };
  }
  const key: KeyOfBytes =
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
      const b = utf8Of(unquoted(cell));
      return key(b, 0, b.length, ids);
    },
    ofCsv(row, c, ids) {
      if (row.quoted[c] === 0 && row.starts[c] === row.ends[c]) return NULL_ID;
      return key(row.bytes, row.starts[c]!, row.ends[c]!, ids);
    },
  };
}
