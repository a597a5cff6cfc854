import type { OutputType } from "./cells.ts";
import { compareValues } from "./filters.ts";
import type { Table, Value } from "./schema.ts";

// ORDER BY as PostgreSQL runs it: NULLS LAST ascending, NULLS FIRST descending. Ties fall back to
// `_id` so that paging by offset is repeatable (real PostgreSQL promises nothing there).

/** A sort on a table column, or on one of the rank columns a text search adds. */
export type SortKey =
  | { readonly kind: "column"; readonly column: number; readonly desc: boolean }
  | { readonly kind: "rank"; readonly rank: number; readonly desc: boolean };

const CLAUSE = /^(.+?)( +(asc|desc) *)?$/is;

/** CKAN's _parse_sort_clause: `name`, `name desc`, `"quoted name" ASC`; undefined when invalid. */
export function parseSortClause(clause: string, table: Table): SortKey | undefined {
  const match = CLAUSE.exec(clause);
  if (!match) return undefined;
  let field = match[1] ?? "";
  if (field.length > 0 && field[0] === '"' && field[field.length - 1] === '"') field = field.slice(1, -1);
  const column = table.columnIndex(field);
  if (column === undefined) return undefined;
  return { kind: "column", column, desc: (match[3] ?? "asc").toLowerCase() === "desc" };
}

/** `_id` direction when the order starts with `_id` (unique, so later keys never matter). */
export function idOrder(keys: readonly SortKey[]): "asc" | "desc" | undefined {
  const first = keys[0];
  if (first?.kind !== "column" || first.column !== 0) return undefined;
  return first.desc ? "desc" : "asc";
}

/** Compares two cells of one sort key, nulls placed as PostgreSQL places them. */
export function compareCells(type: OutputType, a: Value, b: Value, desc: boolean): number {
  if (a === null || b === null) {
    if (a === b) return 0;
    // NULL sorts as larger than any value: last ascending, first descending.
    return a === null ? (desc ? -1 : 1) : desc ? 1 : -1;
  }
  const order = compareValues(type, a, b);
  return desc ? -order : order;
}
