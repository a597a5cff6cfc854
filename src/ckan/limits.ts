import { SubrequestBudgetExceeded } from "../errors.ts";
import type { PassthroughFactory } from "../rows/batch.ts";
import { checkRowLimit, type RowLimit } from "../query/row-limit.ts";
import type { TableQuery } from "../query/table-query.ts";
import { ROW_PAGE_BYTES, rowsPerPage, TARGET_PAGE_BYTES } from "./page-budget.ts";
import type { SearchResult } from "./types.ts";

// What an export may cost, judged from its first answer before the first byte: rows (the row
// limit) and upstream requests (the subrequest budget).

/** Answer bytes per page: pages copied as bytes are held as bytes, pages of rows cost heap. */
export const pageTarget = (options: { passthrough?: PassthroughFactory }): number =>
  options.passthrough === undefined ? ROW_PAGE_BYTES : TARGET_PAGE_BYTES;

/** The rows CKAN's count says match past the offset, checked against the row limit when the link set none. */
export function checkCount(
  query: TableQuery,
  first: Pick<SearchResult, "total" | "total_was_estimated">,
  rowLimit: RowLimit,
): { available: number | undefined; estimated: boolean } {
  const total = typeof first.total === "number" ? first.total : undefined;
  const estimated = first.total_was_estimated === true;
  const available = total === undefined ? undefined : Math.max(0, total - query.offset);
  if (query.limit === undefined && available !== undefined)
    checkRowLimit(rowLimit, available, estimated ? "about" : "exact");
  return { available, estimated };
}

/** Rows each page after the first will hold, as the first page's bytes and CKAN's cap tell. */
export function laterPageRows(
  first: SearchResult,
  firstCount: number,
  firstLimit: number,
  options: { pageSize: number; passthrough?: PassthroughFactory },
): number {
  // CKAN echoes the limit it applied: below what was asked, it is the site's cap.
  const cap = Math.max(1, typeof first.limit === "number" && first.limit < firstLimit ? first.limit : options.pageSize);
  return rowsPerPage(cap, first.responseBytes, firstCount, pageTarget(options));
}

/**
 * An export that would need more upstream requests than a Workers request may make would fail
 * half-way: it is refused before the first byte, with what fits. Counted: the first page, the
 * pages at the size the first one suggests, the probe and the check after the last page.
 * Returns the pages planned after the first.
 */
export function checkSubrequests(
  first: SearchResult,
  firstCount: number,
  firstLimit: number,
  rows: number,
  byId: boolean,
  options: { pageSize: number; subrequestLimit: number; passthrough?: PassthroughFactory },
): number {
  const perPage = laterPageRows(first, firstCount, firstLimit, options);
  const pages = Math.ceil(Math.max(0, rows - firstCount) / perPage);
  if (pages === 0) return 0;
  // `_id` ranges may each end on a part page: at most as many ranges as pages, so twice the pages.
  const perRow = byId ? 2 : 1;
  const needed = 1 + perRow * pages + 2;
  if (needed <= options.subrequestLimit) return pages;
  const fits = firstCount + Math.floor((options.subrequestLimit - 3) / perRow) * perPage;
  throw new SubrequestBudgetExceeded(
    `This export needs about ${needed} requests to CKAN (${perPage} rows each), more than the ${options.subrequestLimit} one request to this worker may make (SUBREQUEST_LIMIT). Add limit=${Math.max(1, fits)} or less, narrow with filters or q, or export in parts with offset.`,
  );
}
