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

/** `_table_metadata`, the DataStore's list of its tables and aliases, a view over pg_class. */
export const TABLE_METADATA_VIEW =
  `CREATE VIEW "_table_metadata" AS SELECT substr(md5(relname), 0, 17) AS "_id", relname AS name, oid, NULL::name AS alias_of ` +
  `FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'v')`;

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** CREATE TABLE for a resource: CKAN's `_id` and `_full_text`, then the table's own columns. */
export function createTable(name: string, table: Table): string {
  const columns = table.columns
    .filter((column) => column.id !== "_id")
    .map((column) => `${quoteIdent(column.id)} ${PG_TYPE[column.type]}`);
  return `CREATE UNLOGGED TABLE ${quoteIdent(name)} ("_id" int4 NOT NULL, "_full_text" tsvector, ${columns.join(", ")})`;
}

/** COPY of the user columns and `_id`, in the table's order (`_full_text` is filled after). */
export function copyStatement(name: string, table: Table): string {
  return `COPY ${quoteIdent(name)} (${table.columns.map((column) => quoteIdent(column.id)).join(", ")}) FROM '/dev/blob' WITH (FORMAT csv)`;
}

/**
 * CKAN's trigger writes `to_tsvector(string_agg(value, ' '))` over json_each_text(row_to_json(row))
 * of every column not starting with `_`, with the default text search configuration (english).
 * `to_json(column) #>> '{}'` is each of those values (a scalar's text, an array's or a composite's
 * JSON), and concat_ws skips the nulls as string_agg does: the same tsvector, a third cheaper.
 */
export function fillFullText(name: string, table: Table): string {
  const values = table.columns
    .filter((column) => !column.id.startsWith("_"))
    .map((column) => `to_json(${quoteIdent(column.id)}) #>> '{}'`);
  return `UPDATE ${quoteIdent(name)} SET "_full_text" = to_tsvector('english', concat_ws(' ', ${values.join(", ")}))`;
}

/** The CSV text of rows [from, to) of a table, for COPY ... WITH (FORMAT csv). */
export function csvRows(table: Table, from: number, to: number): string {
  const formats = table.columns.map((column) => csvFormat(column.type));
  const width = formats.length;
  let text = "";
  for (let index = from; index < to; index++) {
    for (let column = 0; column < width; column++) {
      const value = table.cell(column, index);
      // An unquoted empty cell is NULL.
      if (value !== null) text += (formats[column] as CsvFormat)(value);
      text += column === width - 1 ? "\n" : ",";
    }
  }
  return text;
}

type CsvFormat = (value: Exclude<Value, null>) => string;

function csvQuote(text: string): string {
  // Every text is quoted, so that '' stays an empty string and never reads as NULL.
  return text.includes('"') ? `"${text.replaceAll('"', '""')}"` : `"${text}"`;
}

function csvFormat(type: ColumnType): CsvFormat {
  switch (type) {
    case "int":
    case "int4":
    case "numeric":
    case "timestamp":
    case "date":
      // Digits, signs, dashes, colons and a T: nothing CSV needs to quote.
      return String;
    case "float8":
      // JavaScript's shortest text reads back as the same double; NaN and ±Infinity as PostgreSQL spells them.
      return String;
    case "bool":
      return (value) => (value ? "t" : "f");
    case "_text":
      return (value) => csvQuote(arrayLiteral(value as readonly (string | null)[]));
    case "json":
      // A composite literal: the json text as its first field, `extra` null.
      return (value) => csvQuote(`(${compositeField(value as string)},)`);
    default:
      return (value) => csvQuote(String(value));
  }
}
function arrayLiteral(items: readonly (string | null)[]): string {
  return `{${items.map((item) => (item === null ? "NULL" : `"${item.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`)).join(",")}}`;
}

function compositeField(text: string): string {
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}
