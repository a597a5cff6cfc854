import { float4Text, float8Text } from "./number-text.ts";
import type { ColumnType, Value } from "./schema.ts";

// The text of one cell as CKAN's SQL produces it. CKAN selects every column through a format
// (ckanext/datastore/backend/postgres.py, datastore_search): timestamps through to_char, arrays
// through coalesce(array_to_json(..),'null'), json through coalesce((..).json,'null'), and for
// `lists` everything else through to_json. `objects` rows are array_to_json(array_agg(row)).
// So the three record formats agree on every value's text; only JSON quoting differs from CSV.

/** The CKAN releases the emulator answers as: 2.11 is 2.10 but for how it binds filter values. */
export type Version = "2.10" | "2.11" | "2.12";

/** Output column types: the table's, plus "float" for the `rank` columns a text search adds. */
export type OutputType = ColumnType | "float";

/** to_char(ts, 'YYYY-MM-DD"T"HH24:MI:SS') in 2.10 and 2.11; 2.12 adds '.MS' (milliseconds, cut not rounded). */
export function timestampText(value: string, version: Version): string {
  const seconds = value.slice(0, 19);
  if (version !== "2.12") return seconds;
  const fraction = value.length > 20 ? value.slice(20, 23).padEnd(3, "0") : "000";
  return `${seconds}.${fraction}`;
}

/** array_to_json of a text[]: compact JSON, elements escaped as PostgreSQL escapes JSON strings. */
export function arrayJson(items: readonly (string | null)[]): string {
  // JSON.stringify escapes exactly what PostgreSQL's escape_json does (", \, control characters).
  return `[${items.map((item) => (item === null ? "null" : JSON.stringify(item))).join(",")}]`;
}

/** The JSON text of a cell in `objects` and `lists` records. */
export function jsonCell(type: OutputType, value: Value, version: Version): string {
  if (value === null) return "null";
  switch (type) {
    case "int":
    case "int4":
      return String(value);
    case "numeric": {
      const text = String(value);
      // numeric NaN and infinities are not JSON numbers: to_json quotes them.
      return /^[-+]?(NaN|Infinity)$/.test(text) ? JSON.stringify(text) : text;
    }
    case "float8":
    case "float": {
      const text = type === "float" ? float4Text(value as number) : float8Text(value as number);
      return Number.isFinite(value as number) ? text : JSON.stringify(text);
    }
    case "bool":
      return value ? "true" : "false";
    case "timestamp":
      return JSON.stringify(timestampText(value as string, version));
    case "_text":
      return arrayJson(value as readonly (string | null)[]);
    case "json":
      return value as string;
    default:
      return JSON.stringify(String(value));
  }
}

/** The text COPY writes for a cell, or null for SQL NULL (an empty unquoted cell). */
export function copyCell(type: OutputType, value: Value, version: Version): string | null {
  if (value === null) {
    // coalesce(..., 'null') turns a missing array or json value into the text `null`.
    return type === "_text" || type === "json" ? "null" : null;
  }
  switch (type) {
    case "float8":
      return float8Text(value as number);
    case "float":
      return float4Text(value as number);
    case "bool":
      return value ? "t" : "f";
    case "timestamp":
      return timestampText(value as string, version);
    case "_text":
      return arrayJson(value as readonly (string | null)[]);
    default:
      return String(value);
  }
}

/**
 * The text of a cell inside `_full_text`, which CKAN's trigger builds from row_to_json of the row:
 * what a whole-row text search sees.
 */
export function searchText(type: OutputType, value: Value): string {
  if (value === null) return "";
  switch (type) {
    case "float8":
      return float8Text(value as number);
    case "bool":
      return value ? "true" : "false";
    case "_text":
      return arrayJson(value as readonly (string | null)[]);
    default:
      return String(value);
  }
}
