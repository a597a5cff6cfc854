import type { ColumnType, Table, Value } from "./schema.ts";

// The emulated tables as the DataStore keeps them in PostgreSQL: `_id` first, then `_full_text`
// (the tsvector CKAN's trigger fills from every user column), then the user's columns with
// CKAN's column types. A `json` column is CKAN's composite type `nested` (json plus an unused
// `extra`), which is why grouping by one fails with "could not identify an equality operator
// for type nested". Rows go in through COPY, as CSV text generated a batch at a time.

/** PostgreSQL's type for each emulated column type. */
const PG_TYPE: Record<ColumnType, string> = {
  int: "int4",
  int4: "int4",
  numeric: "numeric",
  float8: "float8",
  text: "text",
  timestamp: "timestamp",
  date: "date",
  bool: "bool",
  _text: "text[]",
  json: "nested",
};

export const NESTED_TYPE = "CREATE TYPE nested AS (json json, extra text)";

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** CREATE TABLE for a resource: CKAN's `_id` and `_full_text`, then the table's own columns. */
export function createTable(name: string, table: Table): string {
  const columns = table.columns.filter((column) => column.id !== "_id").map((column) => `${quoteIdent(column.id)} ${PG_TYPE[column.type]}`);
  return `CREATE TABLE ${quoteIdent(name)} ("_id" int4 NOT NULL, "_full_text" tsvector, ${columns.join(", ")})`;
}

/** COPY of the user columns and `_id`, in the table's order (`_full_text` is filled after). */
export function copyStatement(name: string, table: Table): string {
  return `COPY ${quoteIdent(name)} (${table.columns.map((column) => quoteIdent(column.id)).join(", ")}) FROM '/dev/blob' WITH (FORMAT csv)`;
}

/**
 * CKAN's trigger writes `to_tsvector(string_agg(value, ' '))` over json_each_text(row_to_json(row))
 * of every column not starting with `_`, with the default text search configuration (english).
 */
export function fillFullText(name: string): string {
  const row = "t";
  return (
    `UPDATE ${quoteIdent(name)} AS ${row} SET "_full_text" = (SELECT to_tsvector('english', string_agg(value, ' ')) ` +
    `FROM json_each_text(row_to_json(${row}.*)) WHERE key NOT LIKE '\\_%')`
  );
}

/** The CSV text of rows [from, to) of a table, for COPY ... WITH (FORMAT csv). */
export function csvRows(table: Table, from: number, to: number): string {
  const types = table.columns.map((column) => column.type);
  const parts: string[] = [];
  for (let index = from; index < to; index++) {
    let line = "";
    for (let column = 0; column < types.length; column++) {
      if (column > 0) line += ",";
      line += csvCell(types[column] ?? "text", table.cell(column, index));
    }
    parts.push(line);
  }
  return `${parts.join("\n")}\n`;
}

function csvQuote(text: string): string {
  return `"${text.replaceAll('"', '""')}"`;
}

function csvCell(type: ColumnType, value: Value): string {
  // An unquoted empty cell is NULL; every text is quoted so '' stays an empty string.
  if (value === null) return "";
  switch (type) {
    case "int":
    case "int4":
    case "numeric":
      return String(value);
    case "float8":
      // JavaScript's shortest text reads back as the same double; NaN and ±Infinity as PostgreSQL spells them.
      return String(value);
    case "bool":
      return value ? "t" : "f";
    case "_text":
      return csvQuote(arrayLiteral(value as readonly (string | null)[]));
    case "json":
      // A composite literal: the json text as its first field, `extra` null.
      return csvQuote(`(${compositeField(value as string)},)`);
    default:
      return csvQuote(String(value));
  }
}

function arrayLiteral(items: readonly (string | null)[]): string {
  return `{${items.map((item) => (item === null ? "NULL" : `"${item.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`)).join(",")}}`;
}

function compositeField(text: string): string {
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}
