import type { CsvRow } from "./csv-row.ts";
import { addDecimal, decimalText, divideDecimal, wholeDecimal, type Decimal } from "./decimal.ts";
import { floatRead, readFloat } from "./float-read.ts";
import { float8Text } from "./float-text.ts";
import { cellComparator, detached, isNull, numberValue, unquoted, type Kind } from "./values.ts";
import type { MeasureFunction } from "./spec.ts";

// One accumulator per measure and group, fed each row's cell as pages arrive (nulls skipped, as
// PostgreSQL's aggregates skip them), answering CKAN's JSON text of the result: numbers bare with
// every digit, NaN and the infinities quoted (as to_json writes them), null for no values.

export interface Accumulator {
  add(cell: string | undefined): void;
  /** The same for cell `c` of a CSV row (-1 for `count` of rows): what `add` of its JSON text would do. */
  addCsv(row: CsvRow, c: number): void;
  result(): string;
  /** After a page: let go of what still points into it. */
  settle?(): void;
}

/** PostgreSQL's result type of a measure over a column of this kind (and type name). */
export function resultType(fn: MeasureFunction, kind: Kind | undefined, type: string | undefined): string {
  switch (fn) {
    case "count":
      return "int8";
    case "sum":
      return kind === "int"
        ? "int8"
        : kind === "float"
          ? type === "float4" || type === "real"
            ? "float4"
            : "float8"
          : "numeric";
    case "avg":
      return kind === "float" ? "float8" : "numeric";
    default:
      return type ?? "text";
  }
}

const special = (text: string): string => JSON.stringify(text);

class CountRows implements Accumulator {
  n = 0;
  add(): void {
    this.n++;
  }
  addCsv(): void {
    this.n++;
  }
  result(): string {
    return String(this.n);
  }
}

class CountValues implements Accumulator {
  n = 0;
  add(cell: string | undefined): void {
    if (!isNull(cell)) this.n++;
  }
  addCsv(row: CsvRow, c: number): void {
    if (!row.isNull(c)) this.n++;
  }
  result(): string {
    return String(this.n);
  }
}

/**
 * A plain decimal of at most 15 digits (`-1234.56`) read as whole units and its scale, into
 * `fastValue` (units are exact in a double); false for anything else (more digits, NaN, quoted).
 */
const fastValue = { units: 0, scale: 0 };
function readFast(cell: string): boolean {
  const b = encoder.encode(cell);
  return readFastBytes(b, 0, b.length);
}
const encoder = new TextEncoder();

/** The same for the bytes b[start, end). */
function readFastBytes(b: Uint8Array, start: number, end: number): boolean {
  let i = b[start] === 45 ? start + 1 : start;
  const negative = i > start;
  let units = 0;
  let digits = 0;
  let scale = -1;
  for (; i < end; i++) {
    const c = b[i]!;
    if (c >= 48 && c <= 57) {
      units = units * 10 + (c - 48);
      digits++;
      if (scale >= 0) scale++;
    } else if (c === 46 && scale < 0) {
      scale = 0;
    } else {
      return false;
    }
  }
  if (digits === 0 || digits > 15) return false;
  fastValue.units = negative ? -units : units;
  fastValue.scale = Math.max(scale, 0);
  return true;
}

/**
 * The running sum of numbers of any kind but float, exact, with PostgreSQL's NaN and infinities.
 * Most values are short decimals: they add as whole units in a double per scale while that is exact
 * (below 2^53), and go into the BigInt sum when it would not be, and at the end.
 */
class ExactSum {
  n = 0;
  /** Whole units of the values of each scale (up to 15 decimals) added so far, each exact below 2^53. */
  readonly fast = new Float64Array(16);
  /** Which scales were met (bit n: scale n): a sum keeps the most decimals met, `0.10` + `0.20` is `0.30`. */
  scales = 0;
  sum: Decimal = { units: 0n, scale: 0 };
  nan = false;
  plusInfinity = false;
  minusInfinity = false;
  readonly column: string;
  constructor(column: string) {
    this.column = column;
  }
  add(cell: string | undefined): void {
    if (isNull(cell)) return;
    this.n++;
    if (readFast(cell)) this.addFast();
    else this.addOther(cell);
  }
  addCsv(row: CsvRow, c: number): void {
    const start = row.starts[c]!;
    const end = row.ends[c]!;
    if (start === end && row.quoted[c] === 0) return;
    this.n++;
    if (readFastBytes(row.bytes, start, end)) this.addFast();
    else this.addOther(row.textOf(c));
  }
  private addFast(): void {
    const scale = fastValue.scale;
    const units = this.fast[scale]! + fastValue.units;
    this.scales |= 1 << scale;
    if (Math.abs(units) <= 2 ** 52) this.fast[scale] = units;
    else {
      this.sum = addDecimal(this.sum, { units: BigInt(units), scale });
      this.fast[scale] = 0;
    }
  }
  /** A value of more digits, or NaN and the infinities (`cell` quoted or not). */
  private addOther(cell: string): void {
    const value = numberValue(cell, this.column);
    if ("special" in value) {
      if (value.special === "NaN") this.nan = true;
      else if (value.special === "Infinity") this.plusInfinity = true;
      else this.minusInfinity = true;
      return;
    }
    this.sum = addDecimal(this.sum, value.finite);
  }
  private flush(): void {
    for (let scale = 0; scale < 16; scale++) {
      if ((this.scales & (1 << scale)) === 0) continue;
      this.sum = addDecimal(this.sum, { units: BigInt(this.fast[scale]!), scale });
      this.fast[scale] = 0;
    }
  }
  /** The special value the sum is, if any (numeric's rules: NaN wins, both infinities are NaN). */
  specialResult(): string | undefined {
    if (this.nan || (this.plusInfinity && this.minusInfinity)) return "NaN";
    if (this.plusInfinity) return "Infinity";
    if (this.minusInfinity) return "-Infinity";
    return undefined;
  }
  total(): Decimal {
    this.flush();
    return this.sum;
  }
}

class Sum implements Accumulator {
  private readonly exact: ExactSum;
  constructor(column: string) {
    this.exact = new ExactSum(column);
  }
  add(cell: string | undefined): void {
    this.exact.add(cell);
  }
  addCsv(row: CsvRow, c: number): void {
    this.exact.addCsv(row, c);
  }
  result(): string {
    if (this.exact.n === 0) return "null";
    const other = this.exact.specialResult();
    return other !== undefined ? special(other) : decimalText(this.exact.total());
  }
}

class Avg implements Accumulator {
  private readonly exact: ExactSum;
  constructor(column: string) {
    this.exact = new ExactSum(column);
  }
  add(cell: string | undefined): void {
    this.exact.add(cell);
  }
  addCsv(row: CsvRow, c: number): void {
    this.exact.addCsv(row, c);
  }
  result(): string {
    if (this.exact.n === 0) return "null";
    const other = this.exact.specialResult();
    return other !== undefined
      ? special(other)
      : decimalText(divideDecimal(this.exact.total(), wholeDecimal(this.exact.n)));
  }
}

/** float4 and float8: 64-bit floats, added in row order as PostgreSQL's float8pl adds them. */
class FloatSum implements Accumulator {
  n = 0;
  sum: number;
  readonly average: boolean;
  readonly column: string;
  constructor(average: boolean, column: string) {
    this.average = average;
    this.column = column;
    // PostgreSQL's sum(float8) starts from the first value, so a sum of -0 alone is -0; -0 plus any
    // x is x. Its avg starts from 0.
    this.sum = average ? 0 : -0;
  }
  add(cell: string | undefined): void {
    if (isNull(cell)) return;
    this.n++;
    this.addText(unquoted(cell));
  }
  addCsv(row: CsvRow, c: number): void {
    const start = row.starts[c]!;
    const end = row.ends[c]!;
    if (start === end && row.quoted[c] === 0) return;
    this.n++;
    // Most cells are read from their bytes exactly as Number() reads their text (float-read.ts).
    const value = readFloat(row.bytes, start, end);
    if (floatRead.ok) this.sum += value;
    else this.addText(row.textOf(c));
  }
  private addText(text: string): void {
    const value = Number(text);
    if (Number.isNaN(value) && text !== "NaN") numberValue(text, this.column);
    this.sum += value;
  }
  result(): string {
    if (this.n === 0) return "null";
    const value = this.average ? this.sum / this.n : this.sum;
    return Number.isFinite(value) ? float8Text(value) : special(float8Text(value));
  }
}

/**
 * min and max keep the cell CKAN wrote (its text, trailing zeros and all). On a tie the later
 * value wins, as numeric_smaller, float8smaller and their kin return their second argument.
 */
class Extreme implements Accumulator {
  best: string | undefined;
  readonly compare: (a: string, b: string) => number;
  readonly sign: 1 | -1;
  constructor(compare: (a: string, b: string) => number, sign: 1 | -1) {
    this.compare = compare;
    this.sign = sign;
  }
  addCsv(row: CsvRow, c: number): void {
    this.add(row.cell(c));
  }
  add(cell: string | undefined): void {
    if (isNull(cell)) return;
    if (this.best === undefined || this.sign * this.compare(cell, this.best) <= 0) {
      this.best = cell;
      this.fresh = true;
    }
  }
  /** The extreme of a page, copied once the page is folded (a new maximum on every row is common). */
  fresh = false;
  settle(): void {
    if (!this.fresh || this.best === undefined) return;
    this.best = detached(this.best);
    this.fresh = false;
  }
  result(): string {
    return this.best ?? "null";
  }
}

/** A new accumulator for a measure over a column of `kind` (none for `count` of rows). */
export function accumulatorFactory(
  fn: MeasureFunction,
  column: string | undefined,
  kind: Kind | undefined,
): () => Accumulator {
  const name = column ?? "";
  switch (fn) {
    case "count":
      return column === undefined ? () => new CountRows() : () => new CountValues();
    case "sum":
      return kind === "float" ? () => new FloatSum(false, name) : () => new Sum(name);
    case "avg":
      return kind === "float" ? () => new FloatSum(true, name) : () => new Avg(name);
    case "min":
    case "max": {
      const compare = cellComparator(kind ?? "text", name);
      const sign = fn === "min" ? 1 : -1;
      return () => new Extreme(compare, sign);
    }
  }
}
