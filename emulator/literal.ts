import { pythonStr } from "./coerce.ts";
import type { ColumnType, Value } from "./schema.ts";

// How PostgreSQL reads a filter value bound against a typed column: "3" is a fine integer, "abc"
// is an error, a JSON number against a boolean column has no `=` operator. The error text is
// PostgreSQL's own, which CKAN passes through in `info.orig`.

export type Literal = { ok: true; value: Value } | { ok: false; orig: string };

const INTEGER = /^\s*[+-]?\d+\s*$/;
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;
const BOOLEAN_WORDS: Record<string, boolean> = {
  t: true, true: true, y: true, yes: true, on: true, 1: true,
  f: false, false: false, n: false, no: false, off: false, 0: false,
};
const TIMESTAMP = /^\s*(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?)?\s*$/;

const PG_NAMES: Record<ColumnType, string> = {
  int: "integer", int4: "integer", numeric: "numeric", float8: "double precision",
  text: "text", timestamp: "timestamp", bool: "boolean",
};

function syntaxError(type: ColumnType, value: string): Literal {
  return { ok: false, orig: `invalid input syntax for type ${PG_NAMES[type]}: "${value}"` };
}

function noOperator(type: ColumnType, value: unknown): Literal {
  const left = type === "timestamp" ? "timestamp without time zone" : PG_NAMES[type];
  const right = typeof value === "boolean" ? "boolean" : Number.isInteger(value) ? "integer" : "numeric";
  return { ok: false, orig: `operator does not exist: ${left} = ${right}` };
}

/** Converts a JSON filter value to a value comparable with the column's cells. */
export function literal(type: ColumnType, value: unknown): Literal {
  // `= NULL` is never true in SQL; a null literal simply matches nothing.
  if (value === null) return { ok: true, value: null };
  if (typeof value === "object") {
    return { ok: false, orig: `can't adapt type '${Array.isArray(value) ? "list" : "dict"}'` };
  }
  switch (type) {
    case "text":
      return { ok: true, value: pythonStr(value) };
    case "int":
    case "int4":
    case "numeric":
    case "float8":
      return numberLiteral(type, value);
    case "bool":
      return booleanLiteral(value);
    case "timestamp":
      return timestampLiteral(value);
  }
}

function numberLiteral(type: ColumnType, value: unknown): Literal {
  if (typeof value === "number") return { ok: true, value };
  if (typeof value === "boolean") return noOperator(type, value);
  const text = String(value);
  const pattern = type === "int" || type === "int4" ? INTEGER : DECIMAL;
  return pattern.test(text) ? { ok: true, value: Number(text) } : syntaxError(type, text);
}

function booleanLiteral(value: unknown): Literal {
  if (typeof value === "boolean") return { ok: true, value };
  if (typeof value === "number") return noOperator("bool", value);
  const text = String(value);
  const parsed = BOOLEAN_WORDS[text.trim().toLowerCase()];
  return parsed === undefined ? syntaxError("bool", text) : { ok: true, value: parsed };
}

function timestampLiteral(value: unknown): Literal {
  if (typeof value !== "string") return noOperator("timestamp", value);
  const match = TIMESTAMP.exec(value);
  if (!match) return syntaxError("timestamp", value);
  const [, year, month, day, hour = "00", minute = "00", second = "00"] = match;
  // Cells are stored as "YYYY-MM-DDTHH:MM:SS", so the canonical text compares correctly.
  return { ok: true, value: `${year}-${month}-${day}T${hour}:${minute}:${second}` };
}
