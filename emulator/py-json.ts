import { pythonFloatRepr } from "./number-text.ts";

// CKAN writes its answers with Python's (simple)json.dumps: ", " and ": " between items, every
// character outside printable ASCII escaped as \uXXXX (lower-case hex), floats as Python's repr.
// Records are the exception: PostgreSQL builds them as JSON text and CKAN splices that text in
// unchanged, which `RawJson` stands for here.

/** JSON text to be written as is (records built "in SQL"). */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\"',
  "\\": "\\\\",
  "\b": "\\b",
  "\f": "\\f",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

function escapeChar(char: string): string {
  return SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** A JSON string literal as Python's json.dumps writes it (ensure_ascii). */
export function pyJsonString(text: string): string {
  // UTF-16 code units: a character above U+FFFF comes out as its surrogate pair, as in Python.
  return `"${text.replace(/[\\"]|[^\x20-\x7e]/g, escapeChar)}"`;
}

function pyNumber(value: number): string {
  // A JSON number without a fraction arrives in Python as an int, and ints are printed exactly.
  return Number.isInteger(value) && Math.abs(value) < 1e21 ? BigInt(value).toString() : pythonFloatRepr(value);
}

/** Python's json.dumps(value) with default separators; `RawJson` values are spliced in. */
export function pyDumps(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value === null || value === undefined) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "number") return pyNumber(value);
  if (typeof value === "string") return pyJsonString(value);
  if (Array.isArray(value)) return `[${value.map(pyDumps).join(", ")}]`;
  if (typeof value === "object") {
    const members = Object.entries(value as Record<string, unknown>).map(
      ([key, item]) => `${pyJsonString(key)}: ${pyDumps(item)}`,
    );
    return `{${members.join(", ")}}`;
  }
  return pyJsonString(String(value));
}

/** Python's str() of a JSON value: what CKAN gets when it formats or str()-converts a parameter. */
export function pyStr(value: unknown): string {
  return typeof value === "string" ? value : pyRepr(value);
}

/** Python's repr() of a JSON value: `'a'`, `True`, `None`, `{'k': [1, 2.5]}`. */
export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return pyNumber(value);
  if (typeof value === "string") return pyStringRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  if (typeof value === "object") {
    const members = Object.entries(value as Record<string, unknown>).map(
      ([key, item]) => `${pyStringRepr(key)}: ${pyRepr(item)}`,
    );
    return `{${members.join(", ")}}`;
  }
  return String(value);
}

function pyStringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  const body = text.replace(/[\\\n\r\t]/g, (char) => SHORT_ESCAPES[char] ?? char).replaceAll(quote, `\\${quote}`);
  return quote + body + quote;
}
