import type { SchemaElement } from "hyparquet-writer";
import { clip, UpstreamFailure } from "../errors.ts";
import type { Column } from "../rows/types.ts";
import { isJsonType } from "../rows/values.ts";
import type { NumericMode } from "../query/formats.ts";
import {
  bigIntegerCell,
  booleanCell,
  type CellReader,
  dateCell,
  daysFromCivil,
  smallIntegerCell,
  timestampCell,
} from "./parquet-cells.ts";

// How each CKAN (PostgreSQL) column type becomes a Parquet column, and how CKAN's JSON text of a
// value becomes that column's value. Every mapping keeps the value exact:
// - integers, booleans, floats: their Parquet types (CKAN's float text is the shortest text of a
//   double, so the double it parses to is the value PostgreSQL holds);
// - numeric: UTF-8 text as CKAN wrote it (every digit, trailing zeros kept) unless the link asks for
//   doubles. A DECIMAL would need one scale for the whole file before its first row group is
//   written, while a later page may need more digits; CKAN's numeric columns are unconstrained
//   (up to 131,072 digits before the point), and DuckDB and Arrow readers stop at 38 or 76;
// - date: DATE; timestamp: TIMESTAMP in microseconds, not adjusted to UTC (PostgreSQL's
//   `timestamp`), which holds CKAN 2.10's seconds, 2.12's milliseconds and PostgreSQL's microseconds;
// - json and arrays: the JSON text CKAN sent, byte for byte, as a JSON column (PostgreSQL arrays
//   may be multi-dimensional and hold nulls, which JSON says exactly and a Parquet LIST of one
//   element type cannot always);
// - anything else (text, time, interval, money, ...): UTF-8 text.

type Value = string | number | bigint | boolean | null;

export interface ParquetColumn {
  element: SchemaElement;
  /** The column's value from CKAN's JSON text of it (never "null" or undefined). */
  value(raw: string): Value;
  /** The same value from a CSV cell's bytes in its usual text (parquet-cells.ts); `value` reads the rest. */
  cell?: CellReader<Value>;
}

/** A JSON string's text, or the JSON text itself for any other value (a number in a text column). */
const text = (raw: string): string => {
  if (raw.charCodeAt(0) !== 34) return raw;
  return raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1);
};

function refused(column: Column, raw: string, what: string): UpstreamFailure {
  return new UpstreamFailure(
    502,
    `CKAN sent ${clip(raw)} in column "${column.id}" (${column.type}), which is not ${what}: the Parquet export stopped.`,
  );
}

/** The integer of CKAN's text of up to 9 digits after an optional sign, read digit by digit (what Number gives); undefined for any other text. */
function smallInteger(raw: string): number | undefined {
  const length = raw.length;
  const negative = raw.charCodeAt(0) === 45;
  let at = negative ? 1 : 0;
  if (length === at || length - at > 9) return undefined;
  let n = 0;
  for (; at < length; at++) {
    const digit = raw.charCodeAt(at) - 48;
    if (digit < 0 || digit > 9) return undefined;
    n = n * 10 + digit;
  }
  return negative ? -n : n;
}

/** Digits after an optional minus, as PostgreSQL writes an integer (no `+`, exponent, point or space). */
const INTEGER_TEXT = /^-?\d+$/;

function integer(column: Column, bits: 16 | 32): (raw: string) => number {
  const max = 2 ** (bits - 1);
  return (raw) => {
    const digits = text(raw);
    const n = smallInteger(raw) ?? (INTEGER_TEXT.test(digits) ? Number(digits) : Number.NaN);
    if (!Number.isInteger(n) || n < -max || n >= max) throw refused(column, raw, `a ${bits}-bit integer`);
    return n;
  };
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function bigInteger(column: Column): (raw: string) => number | bigint {
  return (raw) => {
    const digits = text(raw);
    if (!/^-?\d{1,19}$/.test(digits)) throw refused(column, raw, "a 64-bit integer");
    // Up to 15 characters a double holds the value exactly, and a number is cheaper to write.
    if (digits.length <= 15) return Number(digits);
    const n = BigInt(digits);
    if (n < INT64_MIN || n > INT64_MAX) throw refused(column, raw, "a 64-bit integer");
    return n;
  };
}

function float(column: Column): (raw: string) => number {
  return (raw) => {
    // CKAN's JSON number tokens (and NaN, Infinity, -Infinity) parse as they are; Number("") is 0.
    const t = text(raw);
    const n = Number(t);
    if (Number.isNaN(n) ? t !== "NaN" : t === "") throw refused(column, raw, "a number");
    return n;
  };
}

function boolean(column: Column): (raw: string) => boolean {
  return (raw) => {
    const t = text(raw);
    if (t === "true" || t === "t") return true;
    if (t === "false" || t === "f") return false;
    throw refused(column, raw, "true or false");
  };
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;

function date(column: Column): (raw: string) => number {
  return (raw) => {
    const m = DATE.exec(text(raw));
    if (m === null) throw refused(column, raw, "a date (YYYY-MM-DD)");
    return daysFromCivil(Number(m[1]), Number(m[2]), Number(m[3]));
  };
}

/**
 * Microseconds since 1970 as a number while a double holds them exactly (years 1685 to 2254, which
 * the writer turns into INT64 exactly), else as a bigint. The day's part is kept from the last value:
 * rows in time order share their day, and the date's arithmetic is most of the work.
 */
const isDigit = (raw: string, at: number): boolean => {
  const c = raw.charCodeAt(at);
  return c >= 48 && c <= 57;
};
const digitsOf = (raw: string, from: number, to: number): number => {
  let n = 0;
  for (let at = from; at < to; at++) n = n * 10 + raw.charCodeAt(at) - 48;
  return n;
};
/** Where the digits of `"YYYY-MM-DDTHH:MM:SS` sit in CKAN's JSON text of a timestamp. */
const TIMESTAMP_DIGITS = [1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19];

/**
 * CKAN's JSON text of a timestamp, `"YYYY-MM-DDTHH:MM:SS"` with up to 6 decimals, read digit by digit
 * (what TIMESTAMP reads, to the same fields); false for any other text.
 */
function usualTimestamp(raw: string): boolean {
  const n = raw.length;
  if (n < 21 || n === 22 || n > 28 || raw.charCodeAt(0) !== 34 || raw.charCodeAt(n - 1) !== 34) return false;
  if (raw.charCodeAt(5) !== 45 || raw.charCodeAt(8) !== 45 || raw.charCodeAt(14) !== 58 || raw.charCodeAt(17) !== 58)
    return false;
  const t = raw.charCodeAt(11);
  if (t !== 84 && t !== 32) return false;
  for (const at of TIMESTAMP_DIGITS) if (!isDigit(raw, at)) return false;
  if (n === 21) return true;
  if (raw.charCodeAt(20) !== 46) return false;
  for (let at = 21; at < n - 1; at++) if (!isDigit(raw, at)) return false;
  return true;
}

function timestamp(column: Column): (raw: string) => number | bigint {
  let lastDay = "";
  let days = 0;
  // The usual text's day, as a number: no string made per value.
  let lastKey = -1;
  let keyDays = 0;
  return (raw) => {
    if (usualTimestamp(raw)) {
      const key = digitsOf(raw, 1, 5) * 10_000 + digitsOf(raw, 6, 8) * 100 + digitsOf(raw, 9, 11);
      if (key !== lastKey) {
        lastKey = key;
        keyDays = daysFromCivil(digitsOf(raw, 1, 5), digitsOf(raw, 6, 8), digitsOf(raw, 9, 11));
      }
      const fraction = raw.length > 21 ? digitsOf(raw, 21, raw.length - 1) * 10 ** (6 - (raw.length - 22)) : 0;
      const ofDay =
        (digitsOf(raw, 12, 14) * 3600 + digitsOf(raw, 15, 17) * 60 + digitsOf(raw, 18, 20)) * 1_000_000 + fraction;
      const micros = keyDays * 86_400_000_000 + ofDay;
      if (Number.isSafeInteger(micros)) return micros;
      return BigInt(keyDays) * 86_400_000_000n + BigInt(ofDay);
    }
    const t = text(raw);
    const m = TIMESTAMP.exec(t);
    if (m === null) throw refused(column, raw, "a timestamp (YYYY-MM-DDTHH:MM:SS with up to 6 decimals)");
    const day = t.slice(0, 10);
    if (day !== lastDay) {
      lastDay = day;
      days = daysFromCivil(Number(m[1]), Number(m[2]), Number(m[3]));
    }
    const ofDay =
      (Number(m[4]) * 3600 + Number(m[5]) * 60 + Number(m[6])) * 1_000_000 + Number((m[7] ?? "").padEnd(6, "0"));
    const micros = days * 86_400_000_000 + ofDay;
    if (Number.isSafeInteger(micros)) return micros;
    return BigInt(days) * 86_400_000_000n + BigInt(ofDay);
  };
}

const optional = (name: string, element: Omit<SchemaElement, "name" | "repetition_type">): SchemaElement => ({
  name,
  repetition_type: "OPTIONAL",
  ...element,
});

/** The Parquet column of a CKAN column, named `name` (its id, or its label with header=label). */
export function parquetColumn(column: Column, name: string, numeric: NumericMode): ParquetColumn {
  const type = column.type.toLowerCase();
  switch (type) {
    case "int2":
    case "smallint":
      return {
        element: optional(name, { type: "INT32", logical_type: { type: "INTEGER", bitWidth: 16, isSigned: true } }),
        value: integer(column, 16),
        cell: smallIntegerCell(16),
      };
    case "int":
    case "int4":
    case "integer":
    case "serial":
      return { element: optional(name, { type: "INT32" }), value: integer(column, 32), cell: smallIntegerCell(32) };
    case "int8":
    case "bigint":
    case "bigserial":
      return { element: optional(name, { type: "INT64" }), value: bigInteger(column), cell: bigIntegerCell() };
    case "float4":
    case "real":
      return { element: optional(name, { type: "FLOAT" }), value: float(column) };
    case "float8":
    case "float":
    case "double precision":
      return { element: optional(name, { type: "DOUBLE" }), value: float(column) };
    case "numeric":
    case "decimal":
      if (numeric === "double") return { element: optional(name, { type: "DOUBLE" }), value: float(column) };
      return { element: optional(name, { type: "BYTE_ARRAY", converted_type: "UTF8" }), value: text };
    case "bool":
    case "boolean":
      return { element: optional(name, { type: "BOOLEAN" }), value: boolean(column), cell: booleanCell };
    case "date":
      return {
        element: optional(name, { type: "INT32", converted_type: "DATE" }),
        value: date(column),
        cell: dateCell,
      };
    case "timestamp":
    case "timestamp without time zone":
      return {
        element: optional(name, {
          type: "INT64",
          logical_type: { type: "TIMESTAMP", isAdjustedToUTC: false, unit: "MICROS" },
        }),
        value: timestamp(column),
        cell: timestampCell(),
      };
    default:
      // JSON both ways (readers such as DuckDB read the converted type); the text is written as CKAN sent it.
      if (isJsonType(type))
        return {
          element: optional(name, { type: "BYTE_ARRAY", converted_type: "JSON", logical_type: { type: "JSON" } }),
          value: (raw) => raw,
        };
      return { element: optional(name, { type: "BYTE_ARRAY", converted_type: "UTF8" }), value: text };
  }
}
