import type { Row } from "../rows/types.ts";
import { asText, type Bounds, type ChunkValues, ColumnValues } from "./parquet-chunk.ts";
import type { ParquetColumn } from "./parquet-columns.ts";
import type { CellReader } from "./parquet-cells.ts";
import { type Cells, cellText, NULL_CELL } from "./parquet-from-csv.ts";
import { TextValues } from "./parquet-text-values.ts";

// Each column of a row group as it fills: its definition levels, and its values in a typed buffer of
// the Parquet type (no value object kept per cell), with min and max as they come. Each class has its
// own copy of the loop over a page's rows, so each loop calls one converter at one place.

/** A typed array with room for `need` values, its first `used` kept. */
function roomy<T extends Int32Array | Float64Array | Float32Array | Uint8Array>(
  array: T,
  used: number,
  need: number,
  make: (n: number) => T,
): T {
  if (need <= array.length) return array;
  const grown = make(Math.max(array.length * 2, need));
  grown.set(array.subarray(0, used) as never);
  return grown;
}

/** The first `count` values' bytes, not copied: the chunk's pages are written before the buffer fills again. */
const bytesOf = (array: Int32Array | Float64Array | Float32Array, count: number): Uint8Array =>
  new Uint8Array(array.buffer, array.byteOffset, count * array.BYTES_PER_ELEMENT);

/** INT32 (and DATE): typed arrays are little-endian where Workers run, as PLAIN is. */
export class Int32Values extends ColumnValues {
  private values = new Int32Array(1024);
  private count = 0;
  private min = Number.POSITIVE_INFINITY;
  private max = Number.NEGATIVE_INFINITY;
  private readonly value: (raw: string) => number;
  private readonly cell: CellReader<number>;
  constructor(value: (raw: string) => number, cell?: CellReader<number>) {
    super();
    this.value = value;
    this.cell = cell ?? (() => undefined);
  }

  addCells(cells: Cells, column: number, from: number, to: number): number {
    this.roomForRows(to - from);
    const values = (this.values = roomy(this.values, this.count, this.count + to - from, (k) => new Int32Array(k)));
    const { defs, value, cell } = this;
    const { bytes, at, length, width } = cells;
    let { rows: r, count: n, nulls, min, max } = this;
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
      const v = cell(bytes, at[k]!, size) ?? value(cellText(bytes, at[k]!, size));
      values[n++] = v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    Object.assign(this, { rows: r, count: n, nulls, min, max });
    return chars;
  }

  add(rows: Row[], column: number): number {
    this.roomForRows(rows.length);
    const values = (this.values = roomy(this.values, this.count, this.count + rows.length, (n) => new Int32Array(n)));
    const { defs, value } = this;
    let { rows: r, count: n, nulls, min, max } = this;
    let chars = 0;
    for (const row of rows) {
      const raw = row[column];
      if (raw === undefined || raw === "null") {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      defs[r++] = 1;
      chars += raw.length;
      const v = value(raw);
      values[n++] = v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    Object.assign(this, { rows: r, count: n, nulls, min, max });
    return chars;
  }

  protected take(): { values: ChunkValues; bounds: Bounds } {
    const bounds = this.count === 0 ? {} : { min: asText(this.min), max: asText(this.max) };
    const plain = bytesOf(this.values, this.count);
    this.count = 0;
    this.min = Number.POSITIVE_INFINITY;
    this.max = Number.NEGATIVE_INFINITY;
    return { values: { plain }, bounds };
  }
}

/** INT64 (bigint, timestamp): each value's low and high 32 bits, from a number where it is one. */
/** The `n`th INT64 value, as two little-endian halves; returns n + 1. */
function putInt64(values: Int32Array, n: number, v: number | bigint): number {
  if (typeof v === "number") {
    values[2 * n] = v | 0;
    values[2 * n + 1] = Math.floor(v / 4294967296) | 0;
  } else {
    values[2 * n] = Number(BigInt.asIntN(32, v));
    values[2 * n + 1] = Number(BigInt.asIntN(32, v >> 32n));
  }
  return n + 1;
}

export class Int64Values extends ColumnValues {
  private values = new Int32Array(2048);
  private count = 0;
  private min: number | bigint = Number.POSITIVE_INFINITY;
  private max: number | bigint = Number.NEGATIVE_INFINITY;
  private readonly value: (raw: string) => number | bigint;
  private readonly cell: CellReader<number | bigint>;
  constructor(value: (raw: string) => number | bigint, cell?: CellReader<number | bigint>) {
    super();
    this.value = value;
    this.cell = cell ?? (() => undefined);
  }

  addCells(cells: Cells, column: number, from: number, to: number): number {
    this.roomForRows(to - from);
    const need = 2 * (this.count + to - from);
    const values = (this.values = roomy(this.values, 2 * this.count, need, (k) => new Int32Array(k)));
    const { defs, value, cell } = this;
    const { bytes, at, length, width } = cells;
    let { rows: r, count: n, nulls, min, max } = this;
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
      const v = cell(bytes, at[k]!, size) ?? value(cellText(bytes, at[k]!, size));
      n = putInt64(values, n, v);
      if (v < min) min = v;
      if (v > max) max = v;
    }
    Object.assign(this, { rows: r, count: n, nulls, min, max });
    return chars;
  }

  add(rows: Row[], column: number): number {
    this.roomForRows(rows.length);
    const need = 2 * (this.count + rows.length);
    const values = (this.values = roomy(this.values, 2 * this.count, need, (n) => new Int32Array(n)));
    const { defs, value } = this;
    let { rows: r, count: n, nulls, min, max } = this;
    let chars = 0;
    for (const row of rows) {
      const raw = row[column];
      if (raw === undefined || raw === "null") {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      defs[r++] = 1;
      chars += raw.length;
      const v = value(raw);
      n = putInt64(values, n, v);
      if (v < min) min = v;
      if (v > max) max = v;
    }
    Object.assign(this, { rows: r, count: n, nulls, min, max });
    return chars;
  }

  protected take(): { values: ChunkValues; bounds: Bounds } {
    const bounds = this.count === 0 ? {} : { min: asText(this.min), max: asText(this.max) };
    const plain = bytesOf(this.values, 2 * this.count);
    this.count = 0;
    this.min = Number.POSITIVE_INFINITY;
    this.max = Number.NEGATIVE_INFINITY;
    return { values: { plain }, bounds };
  }
}

/** DOUBLE or FLOAT; NaN left out of min and max, as Parquet asks. */
export class FloatValues extends ColumnValues {
  private values: Float64Array | Float32Array;
  private count = 0;
  private min = Number.POSITIVE_INFINITY;
  private max = Number.NEGATIVE_INFINITY;
  private readonly value: (raw: string) => number;
  private readonly single: boolean;
  constructor(value: (raw: string) => number, single: boolean) {
    super();
    this.value = value;
    this.single = single;
    this.values = this.make(1024);
  }

  private make(n: number): Float64Array | Float32Array {
    return this.single ? new Float32Array(n) : new Float64Array(n);
  }

  addCells(cells: Cells, column: number, from: number, to: number): number {
    this.roomForRows(to - from);
    const values = (this.values = roomy(this.values, this.count, this.count + to - from, (k) => this.make(k)));
    const { defs, value } = this;
    const { bytes, at, length, width } = cells;
    let { rows: r, count: n, nulls, min, max } = this;
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
      // Number() of the text, as from CKAN's JSON: a double's exact value needs no parser of our own.
      const v = value(cellText(bytes, at[k]!, size));
      values[n++] = v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    Object.assign(this, { rows: r, count: n, nulls, min, max });
    return chars;
  }

  add(rows: Row[], column: number): number {
    this.roomForRows(rows.length);
    const values = (this.values = roomy(this.values, this.count, this.count + rows.length, (n) => this.make(n)));
    const { defs, value } = this;
    let { rows: r, count: n, nulls, min, max } = this;
    let chars = 0;
    for (const row of rows) {
      const raw = row[column];
      if (raw === undefined || raw === "null") {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      defs[r++] = 1;
      chars += raw.length;
      const v = value(raw);
      values[n++] = v;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    Object.assign(this, { rows: r, count: n, nulls, min, max });
    return chars;
  }

  protected take(): { values: ChunkValues; bounds: Bounds } {
    // A chunk of NaN only has no bounds; a float's bounds are its own (rounded) values.
    const round = this.single ? Math.fround : (n: number) => n;
    const bounds = this.min > this.max ? {} : { min: asText(round(this.min)), max: asText(round(this.max)) };
    const plain = bytesOf(this.values, this.count);
    this.count = 0;
    this.min = Number.POSITIVE_INFINITY;
    this.max = Number.NEGATIVE_INFINITY;
    return { values: { plain }, bounds };
  }
}

/** BOOLEAN, PLAIN: one bit per value, the first in the lowest bit. */
export class BooleanValues extends ColumnValues {
  private values = new Uint8Array(1024);
  private count = 0;
  private readonly value: (raw: string) => boolean;
  private readonly cell: CellReader<boolean>;
  constructor(value: (raw: string) => boolean, cell?: CellReader<boolean>) {
    super();
    this.value = value;
    this.cell = cell ?? (() => undefined);
  }

  addCells(cells: Cells, column: number, from: number, to: number): number {
    this.roomForRows(to - from);
    const values = (this.values = roomy(this.values, this.count, this.count + to - from, (k) => new Uint8Array(k)));
    const { defs, value, cell } = this;
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
      values[n++] = (cell(bytes, at[k]!, size) ?? value(cellText(bytes, at[k]!, size))) ? 1 : 0;
    }
    Object.assign(this, { rows: r, count: n, nulls });
    return chars;
  }

  add(rows: Row[], column: number): number {
    this.roomForRows(rows.length);
    const values = (this.values = roomy(this.values, this.count, this.count + rows.length, (n) => new Uint8Array(n)));
    const { defs, value } = this;
    let { rows: r, count: n, nulls } = this;
    let chars = 0;
    for (const row of rows) {
      const raw = row[column];
      if (raw === undefined || raw === "null") {
        defs[r++] = 0;
        nulls++;
        continue;
      }
      defs[r++] = 1;
      chars += raw.length;
      values[n++] = value(raw) ? 1 : 0;
    }
    Object.assign(this, { rows: r, count: n, nulls });
    return chars;
  }

  protected take(): { values: ChunkValues; bounds: Bounds } {
    const plain = new Uint8Array((this.count + 7) >>> 3);
    let any = 0;
    for (let i = 0; i < this.count; i++) {
      const bit = this.values[i]!;
      plain[i >>> 3]! |= bit << (i & 7);
      any |= 1 << bit;
    }
    const bounds = any === 0 ? {} : { min: String(any === 2), max: String(any !== 1) };
    this.count = 0;
    return { values: { plain }, bounds };
  }
}

/** The buffer a column's values fill, by its Parquet type. */
export function columnValues(column: ParquetColumn): ColumnValues {
  const { element, value, cell } = column;
  switch (element.type) {
    case "INT32":
      return new Int32Values(value as (raw: string) => number, cell as CellReader<number> | undefined);
    case "INT64":
      return new Int64Values(
        value as (raw: string) => number | bigint,
        cell as CellReader<number | bigint> | undefined,
      );
    case "FLOAT":
    case "DOUBLE":
      return new FloatValues(value as (raw: string) => number, element.type === "FLOAT");
    case "BOOLEAN":
      return new BooleanValues(value as (raw: string) => boolean, cell as CellReader<boolean> | undefined);
    default: {
      // JSON keeps CKAN's text byte for byte, without min and max (an order of JSON text tells nothing).
      const json = element.logical_type?.type === "JSON";
      return new TextValues(element, !json, json);
    }
  }
}
