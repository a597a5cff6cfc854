import { HttpError } from "../errors.ts";
import type { Column, Row } from "../format/types.ts";
import { sortColumns, type ExportQuery } from "../query.ts";
import type { CkanClient } from "./client.ts";
import { CkanValidationError } from "./errors.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

/** Columns CKAN adds that are not data: kept out of an export unless `fields` names them. */
const isHiddenColumn = (id: string): boolean =>
  id === "_id" || id === "_full_text" || id === "rank" || id.startsWith("rank ");

/** An opened export: the first page is already fetched, so early failures get a real status. */
export interface Table {
  columns: Column[];
  /** CKAN's count of matching rows, before limit/offset, when it reports one. */
  total: number | undefined;
  /** Rows this export should produce, when known. */
  expectedRows: number | undefined;
  /** Rows in the first page: with the first page's encoded size, an estimate of the whole. */
  firstPageRows: number;
  /** Row batches in output column order, the first page first. */
  pages: AsyncGenerator<Row[], void, undefined>;
}

export interface PagingOptions {
  pageSize: number;
  maxRows: number;
  signal?: AbortSignal;
}

/**
 * Sites known (in this isolate) to reject `include_next_page`: CKAN before 2.12 answers an unknown
 * parameter with a 409, so the first export learns it and later ones do not ask again.
 */
const noKeyset = new Set<string>();

function rejectsKeyset(error: unknown): boolean {
  return error instanceof CkanValidationError && (error.fields.__extras ?? []).some((m) => m.includes("include_next_page"));
}

/** The user's order made total by `_id`, so offset paging neither repeats nor skips rows. */
function pagingSort(sort: string | undefined): string {
  if (sort === undefined) return "_id";
  return sortColumns(sort).includes("_id") ? sort : `${sort}, _id`;
}

/** Index of each output column in a page's field list, or undefined when they already line up. */
function projection(columns: Column[], pageFields: Column[]): number[] | undefined {
  const index = columns.map((c) => pageFields.findIndex((f) => f.id === c.id));
  if (index.some((i) => i < 0)) throw new HttpError(502, "CKAN changed the table's columns during the export.");
  const identity = index.length === pageFields.length && index.every((i, n) => i === n);
  return identity ? undefined : index;
}

function rowsOf(result: SearchResult, columns: Column[]): Row[] {
  const records = result.records;
  if (typeof records === "string") throw new HttpError(502, "CKAN sent records as text where lists were asked for.");
  if (records.length === 0) return [];
  if (!Array.isArray(records[0])) {
    // An upstream that ignores records_format=lists sends objects; pick values by name.
    return (records as Record<string, unknown>[]).map((r) => columns.map((c) => r[c.id]));
  }
  const index = projection(columns, result.fields);
  if (index === undefined) return records as Row[];
  return (records as Row[]).map((r) => index.map((i) => r[i]));
}

function outputColumns(query: ExportQuery, fields: Column[]): Column[] {
  if (query.fields === undefined) return fields.filter((f) => !isHiddenColumn(f.id));
  return query.fields.map((id) => {
    const field = fields.find((f) => f.id === id);
    if (field === undefined) throw new HttpError(400, `CKAN rejected fields: invalid value "${id}".`, { parameter: "fields" });
    return field;
  });
}

/**
 * Opens an export: fetches the first page, checks the row budget, and returns the rest as an async
 * generator that keeps exactly one page request in flight ahead of the consumer.
 */
export async function openTable(client: CkanClient, siteKey: string, query: ExportQuery, options: PagingOptions): Promise<Table> {
  // next_page is a filter on `_id`, so it only works in `_id` order and beside no `_id` filter of the user's.
  let keyset = query.sort === undefined && !("_id" in query.filters) && !noKeyset.has(siteKey);
  const base: SearchRequest = {
    resource_id: query.resourceId,
    limit: 0,
    sort: pagingSort(query.sort),
    records_format: "lists",
  };
  if (query.q !== undefined) base.q = query.q;
  if (query.fields !== undefined) {
    // Keyset paging reads `_id` from each page; it is dropped again by the projection.
    base.fields = keyset && !query.fields.includes("_id") ? [...query.fields, "_id"] : query.fields;
  }
  const wanted = query.limit ?? Number.POSITIVE_INFINITY;
  let pageSize = options.pageSize;
  const request = (overrides: Partial<SearchRequest>, seen: number): SearchRequest => {
    const body: SearchRequest = { ...base, limit: Math.min(pageSize, wanted - seen), ...overrides };
    if (Object.keys(query.filters).length > 0 && body.filters === undefined) body.filters = query.filters;
    return body;
  };

  const firstBody = (): SearchRequest =>
    request({ offset: query.offset, include_total: true, ...(keyset ? { include_next_page: true } : {}) }, 0);
  let first: SearchResult;
  try {
    first = await client.search(firstBody(), options.signal);
  } catch (error) {
    if (!keyset || !rejectsKeyset(error)) throw error;
    noKeyset.add(siteKey);
    keyset = false;
    if (base.fields !== undefined) base.fields = query.fields;
    first = await client.search(firstBody(), options.signal);
  }

  const columns = outputColumns(query, first.fields);
  const total = typeof first.total === "number" ? first.total : undefined;
  const available = total === undefined ? undefined : Math.max(0, total - query.offset);
  if (query.limit === undefined && available !== undefined && available > options.maxRows) {
    throw new HttpError(
      400,
      `${first.total_was_estimated ? "About " : ""}${available} rows match, more than this worker's maximum of ${options.maxRows} rows per export. Add limit=${options.maxRows} (or less), narrow with filters or q, or export in parts with offset.`,
      { parameter: "limit" },
    );
  }
  const expectedRows = available === undefined ? query.limit : Math.min(available, wanted);

  async function* pages(): AsyncGenerator<Row[], void, undefined> {
    let result = first;
    let requested = firstBody().limit;
    let seen = 0;
    for (;;) {
      const rows = rowsOf(result, columns);
      seen += rows.length;
      const applied = typeof result.limit === "number" ? Math.min(result.limit, requested) : requested;
      if (applied < pageSize) pageSize = Math.max(1, applied);
      const done = rows.length === 0 || rows.length < applied || seen >= wanted;
      let next: Promise<SearchResult> | undefined;
      if (!done) {
        let body: SearchRequest;
        if (keyset && result.next_page !== undefined) {
          body = request({ filters: { ...query.filters, ...result.next_page }, include_next_page: true }, seen);
        } else if (keyset) {
          throw new HttpError(502, "CKAN stopped handing out next pages before the end of the table.");
        } else {
          body = request({ offset: query.offset + seen }, seen);
        }
        requested = body.limit;
        next = client.search(body, options.signal);
        // The consumer may stop before awaiting this; a rejection must not go unhandled meanwhile.
        next.catch(() => {});
      }
      yield seen > wanted ? rows.slice(0, rows.length - (seen - wanted)) : rows;
      if (next === undefined) return;
      result = await next;
    }
  }

  return { columns, total, expectedRows, firstPageRows: Math.min(first.records.length, wanted), pages: pages() };
}
