// The one table layout every emulated resource shares, copied from the real CKAN 2.10 fixtures:
// `_id` first (CKAN's own row key, type "int"), then the user columns with PostgreSQL type names.

export type Value = number | string | boolean | null;

export type ColumnType = "int" | "int4" | "numeric" | "float8" | "text" | "timestamp" | "bool";

export interface Column {
  readonly id: string;
  readonly type: ColumnType;
}

export const COLUMNS: readonly Column[] = [
  { id: "_id", type: "int" },
  { id: "id", type: "int4" },
  { id: "amount", type: "numeric" },
  { id: "ratio", type: "float8" },
  { id: "category", type: "text" },
  { id: "name", type: "text" },
  { id: "note", type: "text" },
  { id: "formula", type: "text" },
  { id: "created", type: "timestamp" },
  { id: "active", type: "bool" },
];

const INDEX_BY_ID = new Map(COLUMNS.map((column, index) => [column.id, index]));

/** Position of a column in COLUMNS, or undefined when the table has no such column. */
export function columnIndex(id: string): number | undefined {
  return INDEX_BY_ID.get(id);
}

export function isNumericType(type: ColumnType): boolean {
  return type === "int" || type === "int4" || type === "numeric" || type === "float8";
}
