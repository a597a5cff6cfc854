// Column types and cell values of the emulated tables. Every table starts with `_id` (CKAN's own row
// key, type "int"); the rest carry PostgreSQL type names, as `fields` reports them.
//
// A cell holds what PostgreSQL holds, in the form that keeps every digit:
// - int, int4: a JavaScript number (always a safe integer);
// - numeric: PostgreSQL's own text of the value ("12345678901234567890.123456789", "-0.50");
// - float8: a JavaScript number (a double, like float8);
// - text, date ("2000-01-01"): a string;
// - timestamp: "YYYY-MM-DDTHH:MM:SS" plus ".ffffff" when there are fractional seconds;
// - bool: a boolean;
// - _text: an array of strings and nulls;
// - json: the JSON text exactly as stored (spaces and \u escapes kept).

export type ColumnType =
  | "int"
  | "int4"
  | "numeric"
  | "float8"
  | "text"
  | "timestamp"
  | "date"
  | "bool"
  | "_text"
  | "json";

export type Value = number | string | boolean | null | readonly (string | null)[];

export interface Column {
  readonly id: string;
  readonly type: ColumnType;
}

export interface Table {
  /** `_id` first, then the user's columns in table order. */
  readonly columns: readonly Column[];
  readonly rows: number;
  /** The value of column `column` (a `columns` position) in row `index` (0-based; `_id` is index + 1). */
  cell(column: number, index: number): Value;
  /** Position of a column in `columns`, or undefined when the table has none of that name. */
  columnIndex(id: string): number | undefined;
}

export function defineTable(
  columns: readonly Column[],
  rows: number,
  cell: (column: number, index: number) => Value,
): Table {
  // A Map, not an object: a column may be called "constructor" or "__proto__".
  const positions = new Map(columns.map((column, index) => [column.id, index]));
  return { columns, rows, cell, columnIndex: (id) => positions.get(id) };
}

export function isNumericType(type: ColumnType): boolean {
  return type === "int" || type === "int4" || type === "numeric" || type === "float8";
}
