import { type HttpError, UpstreamFailure, clip } from "../errors.ts";
import { compareDecimal, parseDecimal, type Decimal } from "./decimal.ts";

// What an aggregate needs to know of a column's values: which kind they are, how two compare as
// PostgreSQL compares them, and what a cell of CKAN's JSON text holds. Cells are CKAN's exact JSON
// text (`-0.50`, `"alpha"`, `"NaN"`, `null`); undefined or `null` is SQL NULL.

export type Kind =
  | "int"
  | "bigint"
  | "numeric"
  | "float"
  | "text"
  | "date"
  | "timestamp"
  | "bool"
  | "json"
  | "array"
  | "other";

export function kindOf(type: string): Kind {
  const t = type.toLowerCase();
  if (/^(int|int2|int4|integer|smallint|serial|smallserial)$/.test(t)) return "int";
  if (/^(int8|bigint|bigserial)$/.test(t)) return "bigint";
  if (/^(numeric|decimal)$/.test(t)) return "numeric";
  if (/^(float|float4|float8|real|double precision)$/.test(t)) return "float";
  if (/^(text|varchar|character varying|bpchar|char|character|name|citext|uuid)$/.test(t)) return "text";
  if (t === "date") return "date";
  if (/^timestamp( without time zone)?$/.test(t)) return "timestamp";
  if (t === "bool" || t === "boolean") return "bool";
  if (t === "json" || t === "jsonb") return "json";
  if (t.startsWith("_")) return "array";
  return "other";
}

export const isNumberKind = (kind: Kind): boolean =>
  kind === "int" || kind === "bigint" || kind === "numeric" || kind === "float";
/** Kinds min and max order: numbers, text, dates and timestamps. */
export const isOrderedKind = (kind: Kind): boolean =>
  isNumberKind(kind) || kind === "text" || kind === "date" || kind === "timestamp";

export const isNull = (cell: string | undefined): cell is undefined => cell === undefined || cell === "null";

/**
 * A copy of a cell that holds nothing else: a cell cut from a page's text keeps the whole page
 * alive while it is referenced, and a group or an extreme outlives its page.
 */
export const detached = (text: string): string => JSON.parse(JSON.stringify(text)) as string;

/** A JSON string's text (`"a\"b"` -> `a"b`), or the cell itself when it is a bare token. */
export function unquoted(cell: string): string {
  if (cell.charCodeAt(0) !== 34) return cell;
  return cell.includes("\\") ? (JSON.parse(cell) as string) : cell.slice(1, -1);
}

/** A number cell: finite ones exactly, and PostgreSQL's NaN and infinities (quoted in JSON). */
export type NumberValue = { finite: Decimal } | { special: "NaN" | "Infinity" | "-Infinity" };

export function numberValue(cell: string, column: string): NumberValue {
  const text = unquoted(cell);
  const finite = parseDecimal(text);
  if (finite !== undefined) return { finite };
  if (text === "NaN" || text === "Infinity" || text === "-Infinity") return { special: text };
  // A float in exponent form (`1.5e+16`): its digits, exactly.
  const exponent = /^([+-]?\d*(?:\.\d*)?)[eE]([+-]?\d+)$/.exec(text);
  const mantissa = exponent === null ? undefined : parseDecimal(exponent[1] ?? "");
  if (exponent !== null && mantissa !== undefined) {
    const shift = Number(exponent[2]);
    if (shift >= 0)
      return {
        finite: {
          units: mantissa.units * 10n ** BigInt(Math.max(0, shift - mantissa.scale)),
          scale: Math.max(0, mantissa.scale - shift),
        },
      };
    return { finite: { units: mantissa.units, scale: mantissa.scale - shift } };
  }
  throw notA(cell, column, "a number");
}

// An UpstreamFailure: the portal's answer was wrong this time, so a snapshot step tries again.
export const notA = (cell: string, column: string, what: string): HttpError =>
  new UpstreamFailure(
    502,
    `CKAN sent ${clip(cell)} in column "${clip(column)}", which is not ${what}: the aggregate stopped.`,
  );

/** PostgreSQL's order of numbers: -Infinity, the finite ones, Infinity, then NaN (above everything). */
function rank(value: NumberValue): number {
  if ("finite" in value) return 1;
  return value.special === "-Infinity" ? 0 : value.special === "Infinity" ? 2 : 3;
}

export function compareNumbers(a: NumberValue, b: NumberValue): number {
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra - rb;
  return "finite" in a && "finite" in b ? compareDecimal(a.finite, b.finite) : 0;
}

/**
 * Text in code point order: PostgreSQL's "C" collation, which the SQL path asks for by name, so
 * both ways agree whatever collation the portal's database was created with. JavaScript compares
 * UTF-16 units: characters beyond U+FFFF are moved above U+E000..U+FFFF to match.
 */
export function compareText(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/** A comparison of two non-null cells of one kind, as PostgreSQL orders their values. */
export function cellComparator(kind: Kind, column: string): (a: string, b: string) => number {
  switch (kind) {
    case "int":
    case "bigint":
    case "numeric":
    case "float":
      return (a, b) => compareNumbers(numberValue(a, column), numberValue(b, column));
    case "bool":
      return (a, b) => (a === b ? 0 : a === "false" ? -1 : 1);
    // ISO dates and CKAN's timestamps (fixed width) order as their text; text by code point.
    default:
      return (a, b) => compareText(unquoted(a), unquoted(b));
  }
}
