import { isJsonType } from "../rows/values.ts";
import type { Column, Row } from "../rows/types.ts";
import type { Encoder } from "./types.ts";

/**
 * `{"a":` and `,"b":` written once per export; values are CKAN's own JSON text, copied, so a record
 * costs no stringify and no number is ever rounded.
 */
function recordWriter(columns: Column[], oneLine = false): (row: Row) => string {
  const keys = columns.map((c, i) => `${i === 0 ? "{" : ","}${JSON.stringify(c.id)}:`);
  // Only json columns can hold line breaks (as whitespace a json value was stored with).
  const multiline = columns.map((c) => oneLine && isJsonType(c.type));
  const empty = "{}";
  return (row) => {
    if (keys.length === 0) return empty;
    let out = "";
    for (let i = 0; i < keys.length; i++) {
      const value = row[i] ?? "null";
      out += keys[i] + (multiline[i] ? sameLine(value) : value);
    }
    return `${out}}`;
  };
}

/**
 * NDJSON is one record per line, so a json value stored with line breaks (PostgreSQL's json keeps
 * its whitespace) has them turned into spaces: in JSON text a raw CR or LF can only be whitespace
 * outside strings, so nothing else changes.
 */
const sameLine = (value: string): string =>
  value.includes("\n") || value.includes("\r") ? value.replace(/[\r\n]/g, " ") : value;

/** An array of records, keys in column order, values exactly as CKAN wrote them. */
export function jsonEncoder(columns: Column[], continued?: { rows: number }): Encoder<string> {
  const record = recordWriter(columns);
  let first = (continued?.rows ?? 0) === 0;
  return {
    begin: () => (continued === undefined ? "[" : ""),
    page(rows) {
      let out = "";
      for (const row of rows) {
        out += (first ? "\n" : ",\n") + record(row);
        first = false;
      }
      return out;
    },
    end: () => (first ? "]\n" : "\n]\n"),
    // Leaving the array unclosed is already invalid JSON: a parser cannot mistake it for complete.
    failure: () => "",
  };
}

/** One record per line. A cut-off NDJSON file would look complete, so a failure adds a non-JSON line. */
export function ndjsonEncoder(columns: Column[]): Encoder<string> {
  const record = recordWriter(columns, true);
  return {
    begin: () => "",
    page(rows) {
      let out = "";
      for (const row of rows) out += `${record(row)}\n`;
      return out;
    },
    end: () => "",
    failure: (reason) => `#EXPORT INCOMPLETE: ${reason} The lines above are only part of the export.\n`,
  };
}
