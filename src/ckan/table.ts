import { SubrequestBudgetExceeded, UpstreamFailure } from "../errors.ts";
import type { Batch, PassthroughFactory } from "../rows/batch.ts";
import type { Column } from "../rows/types.ts";
import type { CkanClient } from "./client.ts";
import { outputColumns, rowsOf } from "./columns.ts";
import { fetchFirstPage, isBefore212, mayUseKeyset, type FirstPage } from "./keyset-probe.ts";
import { idStretches, offsetStretches, readPages, type Page, type Position, type StretchPlanner } from "./paging.ts";
import { PageSizer, ROW_PAGE_BYTES, rowsPerPage, TARGET_PAGE_BYTES } from "./page-budget.ts";
import { checkRowLimit, type RowLimit } from "../query/row-limit.ts";
import { sortColumns } from "../query/sort.ts";
import type { TableQuery } from "../query/table-query.ts";
import { explainRefusal } from "./refusals.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

/** An opened export: the first page is already fetched, so early failures get a real status. */
export interface Table {
  columns: Column[];
  /** CKAN's count of matching rows, before limit/offset, when it reports one. */
  total: number | undefined;
  /** Rows this export should produce, when known. */
  expectedRows: number | undefined;
  /** Rows in the first page: with the first page's encoded size, an estimate of the whole. */
  firstPageRows: number;
  /** Batches in output column order, strictly in table order, the first page first. */
  pages: AsyncGenerator<Batch, void, undefined>;
  /** Where another invocation would go on after the batches yielded so far (see `PagingOptions.resume`). */
  resumeAt(): Resume;
}

/**
 * Where an export that spans invocations (a snapshot run's steps) picks up again: after `rows` rows,
 * and after the last one's `_id` when it pages by `_id` (otherwise by offset, which the total order of
 * `pagingSort` makes exact). CKAN's count is the one the export's first page gave: later parts skip
 * `count(*)`, and judge MAX_ROWS and the page plan by the same number.
 */
export interface Resume {
  rows: number;
  afterId: number | undefined;
  total: number | undefined;
  estimated: boolean;
}

export interface PagingOptions {
  pageSize: number;
  /** The query's row limit, which an export without `limit` must not pass. */
  rowLimit: RowLimit;
  /** Pages fetched at once when the total is known and paging is by offset. */
  concurrency: number;
  /** Ask later pages as CSV text and rewrite them with this instead of encoding rows. */
  passthrough?: PassthroughFactory;
  /** Upstream requests one export may make (the Workers plan's subrequest limit). */
  subrequestLimit: number;
  signal?: AbortSignal;
  /** Go on from where an earlier invocation stopped, instead of from the first row. */
  resume?: Resume;
}

/** The user's order made total by `_id`, so offset paging neither repeats nor skips rows. */
function pagingSort(sort: string | undefined): string {
  if (sort === undefined) return "_id";
  return sortColumns(sort).includes("_id") ? sort : `${sort}, _id`;
}

/**
 * An export that would need more upstream requests than a Workers request may make would fail
 * half-way: it is refused before the first byte, with what fits. Counted: the first page, the
 * pages at the size the first one suggests, the probe and the check after the last page.
 */
function checkSubrequests(
  first: SearchResult,
  firstCount: number,
  firstLimit: number,
  rows: number,
  byId: boolean,
  options: Pick<PagingOptions, "pageSize" | "subrequestLimit" | "passthrough">,
): number {
  // CKAN echoes the limit it applied: below what was asked, it is the site's cap.
  const cap = Math.max(1, typeof first.limit === "number" && first.limit < firstLimit ? first.limit : options.pageSize);
  const perPage = rowsPerPage(cap, first.responseBytes, firstCount, pageTarget(options));
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

/** The last `_id` of a page read as records: the last cell of its last row (lists), or by name (objects). */
function lastIdOf(result: SearchResult): number | undefined {
  // Pages copied from CSV bytes carry theirs in their copy's `lastId`: records here are lists or objects.
  const record = typeof result.records === "string" ? undefined : result.records.at(-1);
  if (Array.isArray(record)) return idOf(record[result.fields.findIndex((f) => f.id === "_id")]);
  return idOf(record?._id);
}

function idOf(raw: string | undefined): number | undefined {
  const id = Number(raw);
  return raw !== undefined && raw !== "" && Number.isSafeInteger(id) ? id : undefined;
}

/** The largest `_id` the export's search matches: one cheap request, the far end of the `_id` ranges. */
async function largestId(client: CkanClient, query: TableQuery, signal: AbortSignal): Promise<number | undefined> {
  const probe: SearchRequest = { ...baseRequest(query), sort: "_id desc", fields: ["_id"], limit: 1, include_total: false };
  try {
    return lastIdOf(await client.search(probe, signal));
  } catch {
    // Without it (or once the export has stopped), one open-ended range: sequential, and still every row.
    return undefined;
  }
}

/** Answer bytes per page: pages copied as bytes are held as bytes, pages of rows cost heap. */
const pageTarget = (options: Pick<PagingOptions, "passthrough">): number => (options.passthrough === undefined ? ROW_PAGE_BYTES : TARGET_PAGE_BYTES);

/** `fields` as asked of CKAN: keyset paging reads `_id` from each page, which the projection drops again. */
function requestedFields(query: TableQuery, withId: boolean): { fields?: string[] } {
  if (query.fields === undefined) return {};
  return { fields: withId && !query.fields.includes("_id") ? [...query.fields, "_id"] : query.fields };
}

/** The request every call of an export starts from: table, search, filters and a total order. */
function baseRequest(query: TableQuery): SearchRequest {
  const base: SearchRequest = { resource_id: query.resourceId, limit: 0, sort: pagingSort(query.sort), records_format: "lists" };
  if (query.q !== undefined) base.q = query.q;
  if (Object.keys(query.filters).length > 0) base.filters = query.filters;
  return base;
}

/**
 * CKAN 2.10 to 2.12 build invalid SQL for q with lists and no fields (a 409): until the columns are
 * known, such a search asks for objects.
 */
const firstFormat = (query: TableQuery): "objects" | "lists" => (query.q !== undefined && query.fields === undefined ? "objects" : "lists");

/** The rows CKAN's count says match past the offset, checked against the row limit when the link set none. */
function checkCount(
  query: TableQuery,
  first: Pick<SearchResult, "total" | "total_was_estimated">,
  rowLimit: RowLimit,
): { available: number | undefined; estimated: boolean } {
  const total = typeof first.total === "number" ? first.total : undefined;
  const estimated = first.total_was_estimated === true;
  const available = total === undefined ? undefined : Math.max(0, total - query.offset);
  if (query.limit === undefined && available !== undefined) checkRowLimit(rowLimit, available, estimated ? "about" : "exact");
  return { available, estimated };
}

/**
 * What an export would be, without its rows: one call with `limit: 0` for the columns and CKAN's
 * count, with the same checks as the export itself (columns, MAX_ROWS). For HEAD.
 */
export async function describeTable(
  client: CkanClient,
  siteKey: string,
  query: TableQuery,
  options: Pick<PagingOptions, "rowLimit" | "pageSize" | "subrequestLimit">,
): Promise<Pick<Table, "columns" | "total">> {
  const body: SearchRequest = { ...baseRequest(query), ...requestedFields(query, false), records_format: firstFormat(query), include_total: true };
  const result = await client.search(body).catch((error: unknown) => {
    throw explainRefusal(error, query, isBefore212(siteKey));
  });
  const columns = outputColumns(query, result.fields);
  const { available } = checkCount(query, result, options.rowLimit);
  // No row tells what a row costs: refused only when even full pages would need too many requests.
  const rows = Math.min(available ?? query.limit ?? 0, query.limit ?? Number.POSITIVE_INFINITY);
  checkSubrequests(result, 0, 0, rows, false, options);
  return { columns, total: typeof result.total === "number" ? result.total : undefined };
}

/**
 * Opens an export: fetches the first page (learning on the way whether the site pages by keyset),
 * checks the count against MAX_ROWS, and plans the rest, which `readPages` fetches as it is read.
 */
export async function openTable(client: CkanClient, siteKey: string, query: TableQuery, options: PagingOptions): Promise<Table> {
  const base = baseRequest(query);
  const resume = options.resume;
  const done = resume?.rows ?? 0;
  // next_page is a filter on `_id`, so it only works in `_id` order and beside no `_id` filter of the user's.
  const keysetPossible = resume === undefined && query.sort === undefined && !("_id" in query.filters) && mayUseKeyset(siteKey);
  // Without a limit, at most MAX_ROWS; one row more is fetched to tell "exactly the maximum" from "more".
  const wanted = (query.limit ?? options.rowLimit.rows + 1) - done;
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const sizer = new PageSizer(options.pageSize, pageTarget(options));
  const firstLimit = Math.min(sizer.rows, wanted);
  const firstBody = (keyset: boolean): SearchRequest => ({
    ...base,
    ...requestedFields(query, keyset),
    records_format: firstFormat(query),
    limit: firstLimit,
    offset: query.offset,
    include_total: true,
    ...(keyset ? { include_next_page: true } : {}),
  });
  const { result: first, keyset } = await (resume === undefined
    ? fetchFirstPage(client, siteKey, keysetPossible ? firstBody(true) : undefined, firstBody(false), signal)
    : resumedPage(client, query, resume, firstBody, signal)
  ).catch((error: unknown) => {
    throw explainRefusal(error, query, isBefore212(siteKey));
  });

  const columns = outputColumns(query, first.fields);
  const counted = resume === undefined ? first : { total: resume.total, total_was_estimated: resume.estimated };
  const total = typeof counted.total === "number" ? counted.total : undefined;
  const checked = checkCount(query, counted, options.rowLimit);
  const estimated = checked.estimated;
  const available = checked.available === undefined ? undefined : Math.max(0, checked.available - done);
  const exact = available !== undefined && !estimated;

  // The first page told us the columns: later pages are asked for exactly those, in output order (plus
  // `_id` last for keyset paging), so their rows need no rearranging, and CSV ones can be rewritten as text.
  const idColumn = first.fields.find((f) => f.id === "_id");
  const incoming = keyset && idColumn !== undefined && !columns.some((c) => c.id === "_id") ? [...columns, idColumn] : columns;
  // `_id` ranges read each page's last `_id` from its last cell; with `_id` elsewhere (a user's
  // `fields` order), pages go by offset, which CKAN 2.12 serves as well.
  const byId = keyset && incoming.at(-1)?.id === "_id";
  base.fields = incoming.map((c) => c.id);
  // The count is known from the first page: later pages skip CKAN's count(*).
  base.include_total = false;
  if (resume?.afterId !== undefined) base.filters = { ...query.filters, _id: { gt: resume.afterId } };
  const passthrough = options.passthrough?.(incoming, columns.length);
  if (passthrough !== undefined) base.records_format = passthrough.recordsFormat;
  const pageOf = (result: SearchResult): Page => {
    if (result.copy !== undefined) {
      const copied = result.copy();
      return { batch: copied.page, lastId: byId ? idOf(copied.lastId) : undefined };
    }
    // The reader could not read the answer's records: rows, when they came as records.
    if (typeof result.records === "string") throw new UpstreamFailure(502, "CKAN's CSV records could not be read.");
    return { batch: rowsOf(result, columns), lastId: byId ? lastIdOf(result) : undefined };
  };
  const firstRows = rowsOf(first, columns);
  const full = firstRows.length >= Math.min(firstLimit, typeof first.limit === "number" ? first.limit : firstLimit);

  const after = byId && full ? lastIdOf(first) : undefined;
  const pagesPlanned = full ? checkSubrequests(first, firstRows.length, firstLimit, available === undefined ? wanted : Math.min(available, wanted), after !== undefined, options) : 0;

  const position: Position = { rows: 0, lastId: undefined };
  let stretches: StretchPlanner | Promise<StretchPlanner>;
  let window: number;
  if (after !== undefined) {
    // In `_id` order on CKAN 2.12: ranges of `_id`, side by side, sized by the table's density.
    window = Math.max(1, options.concurrency);
    const rowsAfter = available === undefined ? undefined : Math.max(0, available - firstRows.length);
    // With one page left to fetch (or one in flight at a time), ranges side by side gain nothing: no probe.
    stretches =
      window === 1 || pagesPlanned <= 1
        ? idStretches(after, undefined, 1, wanted, sizer, 0)
        : largestId(client, query, signal).then((largest) => {
            const density = largest === undefined || rowsAfter === undefined || largest <= after ? 1 : rowsAfter / (largest - after);
            return idStretches(after, largest, density, wanted, sizer, Math.max(1, pagesPlanned));
          });
  } else {
    // An estimated total may be short: planning by it could stop early, so count instead.
    window = exact ? Math.max(1, options.concurrency) : 1;
    // Resumed after an `_id`, offsets count from there (base.filters holds the bound).
    const from = resume === undefined ? query.offset : resume.afterId !== undefined ? 0 : query.offset + done;
    stretches = offsetStretches(from, exact ? Math.min(available, wanted) : wanted, wanted, sizer);
  }

  const pages = readPages({
    client,
    base,
    filters: query.filters,
    stretches,
    window,
    wanted,
    checkRows: query.limit === undefined ? (seen) => checkRowLimit(options.rowLimit, done + seen, "more") : undefined,
    sizer,
    signal,
    stop,
    first,
    firstRows,
    firstLimit,
    pageOf,
    firstLastId: after,
    position,
    ...(passthrough !== undefined ? { reader: passthrough.read } : {}),
  });
  return {
    columns,
    total,
    expectedRows: available === undefined ? query.limit : Math.min(available, wanted),
    firstPageRows: Math.min(first.records.length, wanted),
    pages,
    resumeAt: () => ({ rows: done + position.rows, afterId: byId ? position.lastId : undefined, total, estimated }),
  };
}

/**
 * The first page of an export that goes on from `resume`: after its last `_id` (a range filter, so
 * CKAN 2.12, which the run's first page already found), or at its offset; never counted again.
 */
async function resumedPage(
  client: CkanClient,
  query: TableQuery,
  resume: Resume,
  firstBody: (keyset: boolean) => SearchRequest,
  signal: AbortSignal,
): Promise<FirstPage> {
  const keyset = resume.afterId !== undefined;
  const body = { ...firstBody(false), include_total: false };
  if (keyset) {
    Object.assign(body, requestedFields(query, true), { offset: 0, filters: { ...query.filters, _id: { gt: resume.afterId } } });
  } else {
    body.offset = query.offset + resume.rows;
  }
  return { result: await client.search(body, signal), keyset };
}
