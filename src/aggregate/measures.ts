import { addDecimal, decimalText, divideDecimal, wholeDecimal, type Decimal } from "./decimal.ts";
import { float8Text } from "./float-text.ts";
import { cellComparator, isNull, numberValue, unquoted, type Kind } from "./values.ts";
import type { MeasureFunction } from "./spec.ts";

// One accumulator per measure and group, fed each row's cell as pages arrive (nulls skipped, as
// PostgreSQL's aggregates skip them), answering CKAN's JSON text of the result: numbers bare with
// every digit, NaN and the infinities quoted (as to_json writes them), null for no values.

export interface Accumulator {
  add(cell: string | undefined): void;
  result(): string;
}

/** PostgreSQL's result type of a measure over a column of this kind (and type name). */
export function resultType(fn: MeasureFunction, kind: Kind | undefined, type: string | undefined): string {
  switch (fn) {
    case "count":
      return "int8";
    case "sum":
      return kind === "int" ? "int8" : kind === "float" ? (type === "float4" || type === "real" ? "float4" : "float8") : "numeric";
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
  result(): string {
    return String(this.n);
  }
}

class CountValues implements Accumulator {
  n = 0;
  add(cell: string | undefined): void {
    if (!isNull(cell)) this.n++;
  }
  result(): string {
    return String(this.n);
  }
}

/** The running sum of numbers of any kind but float, exact, with PostgreSQL's NaN and infinities. */
class ExactSum {
  n = 0;
  /** Small whole numbers (int4) add as doubles while they stay exact, then as BigInt. */
  small = 0;
  sum: Decimal = { units: 0n, scale: 0 };
  nan = false;
  plusInfinity = false;
  minusInfinity = false;
  readonly kind: Kind;
  readonly column: string;
  constructor(kind: Kind, column: string) {
    this.kind = kind;
    this.column = column;
  }
  add(cell: string | undefined): void {
    if (isNull(cell)) return;
    this.n++;
    if (this.kind === "int") {
      const value = Number(cell);
      if (Number.isSafeInteger(value)) {
        this.small += value;
        if (Math.abs(this.small) > 2 ** 52) this.flush();
        return;
      }
    }
    const value = numberValue(cell, this.column);
    if ("special" in value) {
      if (value.special === "NaN") this.nan = true;
      else if (value.special === "Infinity") this.plusInfinity = true;
      else this.minusInfinity = true;
      return;
    }
    // Most cells have the scale of the sum so far (a column's usual decimals): added in place.
    if (value.finite.scale === this.sum.scale) this.sum.units += value.finite.units;
    else this.sum = addDecimal(this.sum, value.finite);
  }
  private flush(): void {
    this.sum = addDecimal(this.sum, wholeDecimal(this.small));
    this.small = 0;
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
  constructor(kind: Kind, column: string) {
    this.exact = new ExactSum(kind, column);
  }
  add(cell: string | undefined): void {
    this.exact.add(cell);
  }
  result(): string {
    if (this.exact.n === 0) return "null";
    const other = this.exact.specialResult();
    return other !== undefined ? special(other) : decimalText(this.exact.total());
  }
}

class Avg implements Accumulator {
  private readonly exact: ExactSum;
  constructor(kind: Kind, column: string) {
    this.exact = new ExactSum(kind, column);
  }
  add(cell: string | undefined): void {
    this.exact.add(cell);
  }
  result(): string {
    if (this.exact.n === 0) return "null";
    const other = this.exact.specialResult();
    return other !== undefined ? special(other) : decimalText(divideDecimal(this.exact.total(), wholeDecimal(this.exact.n)));
  }
}

/** float4 and float8: 64-bit floats, added in row order as PostgreSQL's float8pl adds them. */
class FloatSum implements Accumulator {
  n = 0;
  sum = 0;
  readonly average: boolean;
  readonly column: string;
  constructor(average: boolean, column: string) {
    this.average = average;
    this.column = column;
  }
  add(cell: string | undefined): void {
    if (isNull(cell)) return;
    this.n++;
    const text = unquoted(cell);
    const value = Number(text);
    if (Number.isNaN(value) && text !== "NaN") numberValue(cell, this.column);
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
  add(cell: string | undefined): void {
    if (isNull(cell)) return;
    if (this.best === undefined || this.sign * this.compare(cell, this.best) <= 0) this.best = cell;
  }
  result(): string {
    return this.best ?? "null";
  }
}

/** A new accumulator for a measure over a column of `kind` (none for `count` of rows). */
export function accumulatorFactory(fn: MeasureFunction, column: string | undefined, kind: Kind | undefined): () => Accumulator {
  const name = column ?? "";
  switch (fn) {
    case "count":
      return column === undefined ? () => new CountRows() : () => new CountValues();
    case "sum":
      return kind === "float" ? () => new FloatSum(false, name) : () => new Sum(kind ?? "numeric", name);
    case "avg":
      return kind === "float" ? () => new FloatSum(true, name) : () => new Avg(kind ?? "numeric", name);
    case "min":
    case "max": {
      const compare = cellComparator(kind ?? "text", name);
      const sign = fn === "min" ? 1 : -1;
      return () => new Extreme(compare, sign);
    }
  }
}
