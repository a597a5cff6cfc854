import { pythonFloatRepr } from "./number-text.ts";
import { pyJsonString } from "./py-json.ts";
import type { SqlCell } from "./sql-engine.ts";

// A datastore_search_sql value as CKAN writes it: psycopg2 turns PostgreSQL's text into a Python
// object (int, Decimal, float, datetime, date, bool, str, list, dict), CKAN's convert() keeps it
// or makes it a string, and json.dumps writes it. So: integers and numerics with every digit
// (a Decimal is written as its digits), floats as Python's repr (a NaN or an infinity cannot be
// written: CKAN answers 500), timestamps in isoformat ("2020-01-01T00:00:00", microseconds when
// there are some), dates and everything else as PostgreSQL's text, json as Python re-writes it.

/** A float CKAN cannot write as JSON: the whole answer becomes its HTML error page. */
export class NotJsonCompliant extends Error {}

const INTEGERS = new Set(["int2", "int4", "int8", "oid"]);
const FLOATS = new Set(["float4", "float8"]);

export function jsonValue(type: string, cell: SqlCell): string {
  if (cell === null) return "null";
  if (Array.isArray(cell)) {
    const element = type.startsWith("_") ? type.slice(1) : "text";
    return `[${cell.map((item) => jsonValue(element, item)).join(", ")}]`;
  }
  const text = cell as string;
  if (INTEGERS.has(type)) return text;
  if (type === "numeric") {
    if (/^-?(NaN|Infinity)$/i.test(text)) throw new NotJsonCompliant(text);
    return decimalStr(text);
  }
  if (FLOATS.has(type)) {
    const value = Number(text);
    if (!Number.isFinite(value)) throw new NotJsonCompliant(text);
    return pythonFloatRepr(value);
  }
  switch (type) {
    case "bool":
      return text === "t" ? "true" : "false";
    case "timestamp":
    case "timestamptz":
      return pyJsonString(isoformat(text));
    case "json":
    case "jsonb":
      return pythonJson(text);
    case "nested":
      return pythonJson(nestedJson(text));
    default:
      return pyJsonString(text);
  }
}

/**
 * str(Decimal(text)), which is how a numeric reaches the JSON: PostgreSQL's digits, trailing zeros
 * kept, but in scientific notation below 1E-6 (`0.0000001` is `1E-7`, `0.00000010` is `1.0E-7`).
 */
export function decimalStr(text: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) return text;
  const [, sign, whole, fraction = ""] = match;
  const exponent = -fraction.length;
  const digits = `${whole}${fraction}`.replace(/^0+(?=\d)/, "");
  const adjusted = exponent + digits.length - 1;
  if (adjusted >= -6) return text;
  const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
  return `${sign}${mantissa}E${adjusted}`;
}

/** datetime.isoformat() of PostgreSQL's ISO text: "T" between date and time, six fraction digits or none, "+00:00". */
export function isoformat(text: string): string {
  const match = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?([+-]\d\d(?::?\d\d)?)?$/.exec(text);
  if (match === null) return text;
  const [, date, time, fraction, zone] = match;
  const micros = fraction === undefined ? "" : `.${fraction.padEnd(6, "0")}`;
  const offset =
    zone === undefined
      ? ""
      : zone.length === 3
        ? `${zone}:00`
        : zone.includes(":")
          ? zone
          : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  return `${date}T${time}${micros}${offset}`;
}

/** The json field of a `nested` composite's text: `("{""k"": 1}",)` → `{"k": 1}`. */
function nestedJson(text: string): string {
  const match = /^\("((?:[^"\\]|""|\\.)*)"/s.exec(text);
  if (match === null) return text.startsWith("(,") ? "null" : text.slice(1, text.indexOf(","));
  return (match[1] ?? "").replace(/""/g, '"').replace(/\\(.)/gs, "$1");
}

/**
 * json.dumps(json.loads(text)): Python's separators (", " and ": "), non-ASCII escaped, integers
 * kept whole, other numbers as Python floats, duplicate keys reduced to the last value.
 */
export function pythonJson(text: string): string {
  let i = 0;
  const space = (): void => {
    while (i < text.length && " \t\r\n".includes(text[i] ?? "")) i++;
  };
  const value = (): string => {
    space();
    const char = text[i];
    if (char === "{") {
      i++;
      const members = new Map<string, string>();
      space();
      if (text[i] === "}") {
        i++;
        return "{}";
      }
      for (;;) {
        space();
        const key = stringValue();
        space();
        i++; // :
        members.set(key, value());
        space();
        if (text[i++] === "}") break;
      }
      return `{${[...members].map(([key, item]) => `${pyJsonString(key)}: ${item}`).join(", ")}}`;
    }
    if (char === "[") {
      i++;
      const items: string[] = [];
      space();
      if (text[i] === "]") {
        i++;
        return "[]";
      }
      for (;;) {
        items.push(value());
        space();
        if (text[i++] === "]") break;
      }
      return `[${items.join(", ")}]`;
    }
    if (char === '"') return pyJsonString(stringValue());
    const literal = /^(true|false|null|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/.exec(text.slice(i))?.[0] ?? "";
    i += literal.length;
    if (/^-?\d+$/.test(literal)) return literal.replace(/^(-?)0+(?=\d)/, "$1");
    if (/^-?\d/.test(literal)) return pythonFloatRepr(Number(literal));
    return literal;
  };
  const stringValue = (): string => {
    const match = /^"(?:[^"\\]|\\.)*"/s.exec(text.slice(i))?.[0] ?? '""';
    i += match.length;
    return JSON.parse(match) as string;
  };
  return value();
}
