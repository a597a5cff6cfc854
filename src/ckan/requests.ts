import { ckanSort, sortColumns } from "../query/sort.ts";
import type { TableQuery } from "../query/table-query.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

// The datastore_search requests of an export, and the `_id` read back from an answer.

/**
 * The user's order made total by `_id`, so offset paging neither repeats nor skips rows; without the
 * `nulls first|last` CKAN does not take (nulls-last.ts moves them).
 */
function pagingSort(sort: string | undefined): string {
  if (sort === undefined) return "_id";
  const ckan = ckanSort(sort);
  return sortColumns(sort).includes("_id") ? ckan : `${ckan}, _id`;
}

/** The request every call of an export starts from: table, search, filters and a total order. */
export function baseRequest(query: TableQuery): SearchRequest {
  const base: SearchRequest = {
    resource_id: query.resourceId,
    limit: 0,
    sort: pagingSort(query.sort),
    records_format: "lists",
  };
  if (query.q !== undefined) base.q = query.q;
  if (Object.keys(query.filters).length > 0) base.filters = query.filters;
  return base;
}

/** The largest `_id` an export's search matches: one row, one column, walked from the index's far end. */
export function largestIdRequest(base: SearchRequest): SearchRequest {
  return { ...base, sort: "_id desc", fields: ["_id"], limit: 1, records_format: "lists", include_total: false };
}

/** `fields` as asked of CKAN: keyset paging reads `_id` from each page, which the projection drops again. */
export function requestedFields(query: TableQuery, withId: boolean): { fields?: string[] } {
  if (query.fields === undefined) return {};
  return { fields: withId && !query.fields.includes("_id") ? [...query.fields, "_id"] : query.fields };
}

/**
 * CKAN 2.10 to 2.12 build invalid SQL for q's `rank` column in lists (a 409): a search with q that
 * names no fields (rank among them) or names `rank` asks for objects.
 */
export const rowsFormat = (q: string | undefined, fields: readonly string[] | undefined): "objects" | "lists" =>
  q !== undefined && (fields === undefined || fields.includes("rank")) ? "objects" : "lists";

/** The first page's records format (see rowsFormat). */
export const firstFormat = (query: TableQuery): "objects" | "lists" => rowsFormat(query.q, query.fields);

/** The last `_id` of a page read as records: the last cell of its last row (lists), or by name (objects). */
export function lastIdOf(result: SearchResult): number | undefined {
  // Pages copied from CSV bytes carry theirs in their copy's `lastId`: records here are lists or objects.
  const record = typeof result.records === "string" ? undefined : result.records.at(-1);
  if (Array.isArray(record)) return idOf(record[result.fields.findIndex((f) => f.id === "_id")]);
  return idOf(record?._id);
}

export function idOf(raw: string | undefined): number | undefined {
  const id = Number(raw);
  return raw !== undefined && raw !== "" && Number.isSafeInteger(id) ? id : undefined;
}
