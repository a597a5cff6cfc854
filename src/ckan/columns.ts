import { UpstreamFailure } from "../errors.ts";
import { ColumnRefusal } from "./refusals.ts";
import type { Column, Row } from "../rows/types.ts";
import type { SearchResult } from "./types.ts";
import type { TableQuery } from "../query/table-query.ts";

/** Columns CKAN adds that are not data: kept out of an export unless `fields` names them. */
/** CKAN's bookkeeping columns, which an export leaves out unless `fields` names them. */
export const isHiddenColumn = (id: string): boolean =>
  id === "_id" || id === "_full_text" || id === "rank" || id.startsWith("rank ");

/**
 * Whether CKAN's CSV records write this type's values otherwise than its JSON records: CKAN formats
 * `timestamp` columns itself and arrays and json the same way in both, but leaves the rest to
 * PostgreSQL, whose to_json writes a timestamptz as `2020-06-01T10:30:00.25+00:00` where its text
 * (what CSV holds) is `2020-06-01 10:30:00.25+00`. A table with one is read as JSON pages throughout.
 */
export const csvTextDiffers = (type: string): boolean => type === "timestamptz" || type === "timestamp with time zone";

/** A column as CKAN describes it in `fields`, with the data dictionary's label and notes (`info.label`, `info.notes`) when set. */
function column(field: Column & { info?: unknown }): Column {
  const info =
    field.info !== null && typeof field.info === "object" ? (field.info as { label?: unknown; notes?: unknown }) : {};
  const text = (value: unknown): string | undefined =>
    typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  const label = text(info.label);
  const description = text(info.notes);
  return {
    id: field.id,
    type: field.type,
    ...(label === undefined ? {} : { label }),
    ...(description === undefined ? {} : { description }),
  };
}

export function outputColumns(query: Pick<TableQuery, "fields">, fields: Column[]): Column[] {
  if (query.fields === undefined) return fields.filter((f) => !isHiddenColumn(f.id)).map(column);
  return query.fields.map((id) => {
    const field = fields.find((f) => f.id === id);
    if (field === undefined) throw new ColumnRefusal("fields", `CKAN rejected fields: invalid value "${id}".`);
    return column(field);
  });
}

/**
 * Index of each output column in a page's field list, or undefined when the page's fields start with
 * the output columns in order (extra trailing ones, such as `_id` for keyset paging, are ignored).
 */
function projection(columns: Column[], pageFields: Column[]): number[] | undefined {
  const index = columns.map((c) => pageFields.findIndex((f) => f.id === c.id));
  if (index.some((i) => i < 0)) throw new UpstreamFailure(502, "CKAN changed the table's columns during the export.");
  return index.every((i, n) => i === n) ? undefined : index;
}

/**
 * A page's records as rows in output column order; the common case (lists, same order) copies nothing.
 * A row may carry extra trailing cells, which encoders ignore.
 */
export function rowsOf(result: SearchResult, columns: Column[]): Row[] {
  const records = result.records;
  if (typeof records === "string")
    throw new UpstreamFailure(502, "CKAN sent records as text where lists were asked for.");
  if (records.length === 0) return [];
  if (!Array.isArray(records[0])) {
    // Objects (asked for with q, or sent by an upstream that ignores records_format=lists): by name.
    return (records as Record<string, string>[]).map((r) => columns.map((c) => r[c.id]));
  }
  const index = projection(columns, result.fields);
  if (index === undefined) return records as Row[];
  return (records as Row[]).map((r) => index.map((i) => r[i]));
}
