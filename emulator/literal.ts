import { isDecimalText, numberAsDecimalText } from "./number-text.ts";
import { pyStr } from "./py-json.ts";
import type { ColumnType, Value } from "./schema.ts";
import type { Version } from "./cells.ts";

// How a filter value reaches PostgreSQL and what PostgreSQL makes of it. psycopg2 writes the Python
// value into the query (a str as a quoted literal of unknown type, an int as an integer, a float as
// a numeric, a bool as true/false, a list as ARRAY[...]); PostgreSQL then reads an unknown literal
// with the column type's input function, or looks for an operator between the two types. Errors
// carry PostgreSQL's own text, which CKAN passes on in `info.orig`, and where PostgreSQL points.

export interface PgError {
  readonly message: string;
  /** What the error position points at: the literal, the operator, or nothing (client-side). */
  readonly at: "literal" | "operator" | "none";
  readonly detail?: string;
  readonly hint?: string;
}

export type Bound = { ok: true; value: Value } | { ok: false; error: PgError };

/** Type names as PostgreSQL writes them in operator errors. */
const OPERATOR_NAMES: Record<ColumnType, string> = {
  int: "integer",
  int4: "integer",
  numeric: "numeric",
  float8: "double precision",
  text: "text",
  timestamp: "timestamp without time zone",
  date: "date",
  bool: "boolean",
  _text: "text[]",
  json: "nested",
};
/** Type names as PostgreSQL writes them in input syntax errors. */
const INPUT_NAMES: Partial<Record<ColumnType, string>> = {
  int: "integer",
  int4: "integer",
  numeric: "numeric",
  float8: "double precision",
  timestamp: "timestamp",
  date: "date",
  bool: "boolean",
};

const INTEGER = /^\s*[+-]?\d+\s*$/;
const FLOAT_WORDS = /^\s*[+-]?(inf|infinity|nan)\s*$/i;
const TIMESTAMP = /^\s*(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*$/;
const DATE = /^\s*(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]*)?\s*$/;

/** psycopg2's SQL text for a Python value; undefined when psycopg2 cannot adapt it (a dict). */
export function sqlLiteral(value: unknown): string | undefined {
  if (value === null || value === undefined) return "NULL";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "number") {
    if (Number.isNaN(value)) return "'NaN'::float";
    if (!Number.isFinite(value)) return value > 0 ? "'Infinity'::float" : "'-Infinity'::float";
    return numberAsDecimalText(value);
  }
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  if (Array.isArray(value)) {
    const items = value.map(sqlLiteral);
    return items.includes(undefined) ? undefined : `ARRAY[${items.join(",")}]`;
  }
  return undefined;
}

/** The PostgreSQL type of a non-string, non-null literal psycopg2 wrote. */
function literalType(value: unknown): string {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") {
    if (!Number.isInteger(value)) return "numeric";
    return Math.abs(value) <= 2147483647 ? "integer" : Math.abs(value) <= 9223372036854775807 ? "bigint" : "numeric";
  }
  if (Array.isArray(value)) {
    const first = value.find((item) => item !== null);
    return `${first === undefined ? "text" : typeof first === "string" ? "text" : literalType(first)}[]`;
  }
  return "unknown";
}

function syntaxError(type: ColumnType, text: string): Bound {
  return {
    ok: false,
    error: { message: `invalid input syntax for type ${INPUT_NAMES[type] ?? type}: "${text}"`, at: "literal" },
  };
}

function noOperator(type: ColumnType, op: string, value: unknown): Bound {
  return {
    ok: false,
    error: {
      message: `operator does not exist: ${OPERATOR_NAMES[type]} ${op} ${literalType(value)}`,
      at: "operator",
      hint: "No operator matches the given name and argument types. You might need to add explicit type casts.",
    },
  };
}

/**
 * Binds one filter value against a column, as PostgreSQL would: the value to compare cells with,
 * or PostgreSQL's error. `op` is the SQL operator (=, >, >=, <, <=) the value stands beside.
 */
export function bindLiteral(type: ColumnType, op: string, value: unknown, version: Version): Bound {
  // CKAN 2.12 hands text columns str(value), so even null becomes the text "None" there.
  if (type === "text" && version === "2.12") return { ok: true, value: pyStr(value) };
  // `= NULL` is never true in SQL: a null value simply matches nothing.
  if (value === null) return { ok: true, value: null };
  if (typeof value === "object" && !Array.isArray(value)) {
    return { ok: false, error: { message: "can't adapt type 'dict'", at: "none" } };
  }
  if (type === "text") return typeof value === "string" ? { ok: true, value } : noOperator(type, op, value);
  if (Array.isArray(value)) {
    if (type !== "_text" || literalType(value) !== "text[]") return noOperator(type, op, value);
    return { ok: true, value: value as (string | null)[] };
  }
  if (typeof value === "string") return readInput(type, value);
  if (typeof value === "number" && (type === "int" || type === "int4" || type === "float8")) return { ok: true, value };
  if (typeof value === "number" && type === "numeric") return { ok: true, value: numberAsDecimalText(value) };
  if (typeof value === "boolean" && type === "bool") return { ok: true, value };
  return noOperator(type, op, value);
}

/** The column type's input function reading a quoted literal. */
function readInput(type: ColumnType, text: string): Bound {
  switch (type) {
    case "int":
    case "int4": {
      if (!INTEGER.test(text)) return syntaxError(type, text);
      const number = Number(text);
      if (number > 2147483647 || number < -2147483648) {
        return { ok: false, error: { message: `value "${text}" is out of range for type integer`, at: "literal" } };
      }
      return { ok: true, value: number };
    }
    case "numeric":
      return isDecimalText(text) ? { ok: true, value: text.trim() } : syntaxError(type, text);
    case "float8":
      if (isDecimalText(text)) return { ok: true, value: Number(text) };
      if (FLOAT_WORDS.test(text))
        return { ok: true, value: Number(text.trim().replace(/^([+-]?)inf(inity)?$/i, "$1Infinity")) };
      return syntaxError(type, text);
    case "bool": {
      const parsed = readBoolean(text);
      return parsed === undefined ? syntaxError(type, text) : { ok: true, value: parsed };
    }
    case "timestamp": {
      const match = TIMESTAMP.exec(text);
      if (!match) return syntaxError(type, text);
      const [, year, month, day, hour = "00", minute = "00", second = "00", fraction = ""] = match;
      const micros = fraction.slice(0, 6).padEnd(6, "0");
      const base = `${year}-${month}-${day}T${hour}:${minute}:${second}`;
      return { ok: true, value: micros === "000000" ? base : `${base}.${micros}` };
    }
    case "date": {
      const match = DATE.exec(text);
      return match ? { ok: true, value: `${match[1]}-${match[2]}-${match[3]}` } : syntaxError(type, text);
    }
    case "_text":
      return readArray(text);
    case "json":
      return {
        ok: false,
        error: { message: `malformed record literal: "${text}"`, at: "literal", detail: "Missing left parenthesis." },
      };
    default:
      return { ok: true, value: text };
  }
}

/** boolin: true/yes/on/1 and false/no/off/0, any case, unambiguous prefixes allowed. */
function readBoolean(text: string): boolean | undefined {
  const word = text.trim().toLowerCase();
  if (word === "") return undefined;
  const prefixOf = (full: string, min = 1) => word.length >= min && full.startsWith(word);
  if (prefixOf("true") || prefixOf("yes") || prefixOf("on", 2) || word === "1") return true;
  if (prefixOf("false") || prefixOf("no") || prefixOf("off", 2) || word === "0") return false;
  return undefined;
}

/** array_in for a one-dimensional text[]: {a,"b c",NULL}. */
function readArray(text: string): Bound {
  const malformed = (detail: string): Bound => ({
    ok: false,
    error: { message: `malformed array literal: "${text}"`, at: "literal", detail },
  });
  const source = text.trim();
  if (!source.startsWith("{")) return malformed('Array value must start with "{" or dimension information.');
  const items: (string | null)[] = [];
  let position = 1;
  const skipSpace = () => {
    while (/\s/.test(source[position] ?? "")) position++;
  };
  skipSpace();
  if (source[position] === "}") {
    position++;
  } else {
    for (;;) {
      skipSpace();
      let item = "";
      let quoted = false;
      if (source[position] === '"') {
        quoted = true;
        position++;
        while (position < source.length && source[position] !== '"') {
          if (source[position] === "\\") position++;
          item += source[position] ?? "";
          position++;
        }
        if (position >= source.length) return malformed("Unexpected end of input.");
        position++;
      } else {
        while (position < source.length && !",}".includes(source[position] ?? "")) {
          if (source[position] === "{" || source[position] === '"')
            return malformed(`Unexpected "${source[position]}" character.`);
          if (source[position] === "\\") position++;
          item += source[position] ?? "";
          position++;
        }
        item = item.trim();
      }
      items.push(!quoted && item.toUpperCase() === "NULL" ? null : item);
      skipSpace();
      const next = source[position];
      position++;
      if (next === "}") break;
      if (next !== ",") return malformed("Unexpected end of input.");
    }
  }
  if (position < source.length) return malformed("Junk after closing right brace.");
  return { ok: true, value: items };
}
