import { UpstreamFailure } from "../errors.ts";
import { checkRowLimit, type RowLimit } from "../query/row-limit.ts";
import { movedNulls } from "../query/sort.ts";
import type { TableQuery } from "../query/table-query.ts";
import type { Batch, PassthroughFactory, RecordsReader, RecordsStream } from "../rows/batch.ts";
import type { Column } from "../rows/types.ts";
import { csvTextDiffers, outputColumns, rowsOf } from "./columns.ts";
import { idPagingOf, openFirstPage } from "./first-page.ts";
import { checkCount, checkSubrequests, laterPageRows, pageTarget } from "./limits.ts";
import { segmentsFrom, splitAtNulls, type Segment } from "./nulls-last.ts";
import { PageSizer } from "./page-budget.ts";
import type { FromEnd } from "./from-end.ts";
import { readPages, type Page, type Position } from "./paging.ts";
import { explainRefusal } from "./refusals.ts";
import { baseRequest, firstFormat, idOf, lastIdOf, requestedFields, rowsFormat } from "./requests.ts";
import type { CkanSite } from "./site.ts";
import { listIdCost, listsPay, STRATEGIES, type PagingStrategy } from "./strategies.ts";
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
 * and after the last one's `_id` when it pages by `_id` (otherwise by offset, which the total order
 * of every request's sort, ended by `_id`, makes exact). CKAN's count is the one the export's first page gave: later parts skip
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
  /**
   * The passthrough's batches are rows' output bytes, which may be held and handed on in another
   * order, or dropped unread (pages asked from the table's end: from-end.ts). Not an aggregate's,
   * whose reader folds rows as it reads them.
   */
  reorderable?: boolean;
  /** Upstream requests one export may make (the Workers plan's subrequest limit). */
  subrequestLimit: number;
  signal?: AbortSignal;
  /** Go on from where an earlier invocation stopped, instead of from the first row. */
  resume?: Resume;
}

/**
 * What an export would be, without its rows: one call with `limit: 0` for the columns and CKAN's
 * count, with the same checks as the export itself (columns, the row limit). For HEAD.
 */
export async function describeTable(
  site: CkanSite,
  query: TableQuery,
  options: Pick<PagingOptions, "rowLimit" | "pageSize" | "subrequestLimit">,
): Promise<Pick<Table, "columns" | "total">> {
  const body: SearchRequest = {
    ...baseRequest(query),
    ...requestedFields(query, false),
    records_format: firstFormat(query),
    include_total: true,
  };
  const result = await site.client.search(body).catch((error: unknown) => {
    throw explainRefusal(error, query, site.rangeFilters === false);
  });
  const columns = outputColumns(query, result.fields);
  const { available } = checkCount(query, result, options.rowLimit);
  // No row tells what a row costs: refused only when even full pages would need too many requests.
  const rows = Math.min(available ?? query.limit ?? 0, query.limit ?? Number.POSITIVE_INFINITY);
  checkSubrequests(result, 0, 0, rows, false, options);
  return { columns, total: typeof result.total === "number" ? result.total : undefined };
}

/**
 * Opens an export: fetches the first page (first-page.ts), judges its limits from it (limits.ts),
 * and plans the rest with a paging strategy chosen by name (strategies.ts), which `readPages`
 * fetches as it is read.
 */
export async function openTable(site: CkanSite, query: TableQuery, options: PagingOptions): Promise<Table> {
  const done = options.resume?.rows ?? 0;
  const stop = new AbortController();
  const opening: Opening = {
    site,
    query,
    options,
    done,
    // Without a limit, at most the row limit; one row more is fetched to tell "exactly the maximum" from "more".
    wanted: (query.limit ?? options.rowLimit.rows + 1) - done,
    stop,
    signal: options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal,
    sizer: new PageSizer(options.pageSize, pageTarget(options)),
  };
  const start = await openStart(
    site,
    query,
    options.resume,
    Math.min(opening.sizer.rows, opening.wanted),
    opening.signal,
  );
  // A column whose CSV text is not its JSON text (see csvTextDiffers): pages of rows throughout, sized,
  // budgeted and ordered as pages of rows are.
  if (options.passthrough !== undefined && start.first.fields.some((f) => csvTextDiffers(f.type))) {
    opening.options = { ...options, passthrough: undefined };
    opening.sizer = new PageSizer(options.pageSize, pageTarget(opening.options));
  }
  const judged = judgeFirstPage(opening, start);
  const position: Position = { rows: 0, lastId: undefined };
  const { total, estimated, available } = judged.count;
  return {
    columns: judged.columns,
    total,
    expectedRows: available === undefined ? query.limit : Math.min(available, opening.wanted),
    firstPageRows: Math.min(start.first.records.length, opening.wanted),
    pages: laterPagesRead(opening, start, judged, position),
    resumeAt: () => ({
      rows: done + position.rows,
      // Only a range filter can start after an `_id`: listed pages go on by offset (see laterPages).
      afterId: judged.later.byId === "ranges" ? position.lastId : undefined,
      total,
      estimated,
    }),
  };
}

/** One export being opened: what each step of `openTable` reads. */
interface Opening {
  site: CkanSite;
  query: TableQuery;
  options: PagingOptions;
  /** Rows an earlier invocation produced (0 from the start). */
  done: number;
  /** Rows still to produce, one more than the row limit allows when the link sets no limit. */
  wanted: number;
  stop: AbortController;
  signal: AbortSignal;
  sizer: PageSizer;
}

type Start = Awaited<ReturnType<typeof openStart>>;
type Judged = ReturnType<typeof judgeFirstPage>;

/**
 * What the first page tells: the columns, CKAN's count checked against the row limit, how later
 * pages are asked for, and how many the subrequest budget allows.
 */
function judgeFirstPage(
  { site, query, options, done, wanted }: Opening,
  { base, moved, firstLimit, first, byId }: Start,
) {
  const columns = outputColumns(query, first.fields);
  // The split counted the matching rows exactly: CKAN 2.12's cached count may lag behind.
  const count = countOf(
    query,
    moved !== undefined ? { total: moved.split.rows, total_was_estimated: false } : (options.resume ?? first),
    options.rowLimit,
    done,
  );
  const firstRows = rowsOf(first, columns);
  const full = firstRows.length >= Math.min(firstLimit, typeof first.limit === "number" ? first.limit : firstLimit);
  const rows = count.available === undefined ? wanted : Math.min(count.available, wanted);
  const costs = {
    from: fromOffset(query, options.resume, done),
    firstRows: firstRows.length,
    pageRows: laterPageRows(first, firstRows.length, firstLimit, options),
    listIdCost: listIdCost(site.facts.version),
  };
  // Without range filters, pages carry `_id` where lists could pay even if every `_id` were a row;
  // otherwise where offset pages past the middle may be asked from the table's end (from-end.ts),
  // which counts back from an exact count and streams pages (the CSV readers).
  const lists = byId === "lists" && count.exact && listsPay(costs, rows - firstRows.length, 1);
  const ends = byId === "lists" && !lists && fromEndPays(options, count, rows, costs);
  const pagedBy = byId === "ranges" ? "ranges" : lists ? "lists" : ends ? "ends" : undefined;
  const later = laterPages(base, first, columns, pagedBy, options.resume, options.passthrough);
  const after = later.byId && full ? lastIdOf(first) : undefined;
  // The split's requests come out of the same budget.
  const budget =
    moved === undefined ? options : { ...options, subrequestLimit: options.subrequestLimit - moved.split.requests };
  // Pages by `_id` may each end part-way: twice the requests (offset pages from the end do not).
  const pagesPlanned = full
    ? checkSubrequests(first, firstRows.length, firstLimit, rows, after !== undefined && pagedBy !== "ends", budget)
    : 0;
  // Without range filters CKAN counts exactly (a count(*)): counted again, it tells whether rows were added.
  const countTail = byId === "lists" && count.exact ? count.total : undefined;
  return { columns, count, later, firstRows, after, pagesPlanned, costs, countTail };
}

/** The offset of the first page's first row: resumed after an `_id`, 0 (the later pages' filters hold the bound). */
function fromOffset(query: TableQuery, resume: Resume | undefined, done: number): number {
  return resume === undefined ? query.offset : resume.afterId !== undefined ? 0 : query.offset + done;
}

/** The batches, the first page's first: the rest planned by the strategy its paging calls for. */
function laterPagesRead(opening: Opening, start: Start, judged: Judged, position: Position) {
  const { site, query, options, done, wanted, sizer, signal } = opening;
  const { moved, first, firstLimit } = start;
  const { later, after, firstRows } = judged;
  const strategy: PagingStrategy =
    moved !== undefined
      ? "nulls-last"
      : after === undefined || later.byId === "ends"
        ? "offset"
        : later.byId === "ranges"
          ? "id-ranges"
          : "id-lists";
  const plan = STRATEGIES[strategy]({
    client: site.client,
    base: start.base,
    signal,
    sizer,
    wanted,
    concurrency: options.concurrency,
    available: judged.count.available,
    exact: judged.count.exact,
    pagesPlanned: judged.pagesPlanned,
    ...judged.costs,
    countTail: judged.countTail,
    after: after ?? 0,
    ...(moved !== undefined ? { segments: moved.segments } : {}),
  });
  return readPages({
    client: site.client,
    base: later.base,
    filters: query.filters,
    ...plan,
    wanted,
    checkRows: query.limit === undefined ? (seen) => checkRowLimit(options.rowLimit, done + seen, "more") : undefined,
    sizer,
    signal,
    stop: opening.stop,
    first,
    firstRows,
    firstLimit,
    pageOf: later.pageOf,
    firstLastId: after,
    position,
    ...fromEndOf(opening, judged),
    ...(later.reader !== undefined ? { reader: later.reader } : {}),
    ...(later.stream !== undefined ? { stream: later.stream } : {}),
  });
}

/**
 * Whether offset pages past the table's middle may go from its end (from-end.ts), so that pages
 * carry `_id`: CKAN counted exactly, the pages stream as bytes that may be reordered, and the
 * export's `rows` go past the middle (one that ends before never asks from the end).
 */
function fromEndPays(
  options: PagingOptions,
  count: { total: number | undefined; available: number | undefined; exact: boolean },
  rows: number,
  costs: { firstRows: number; pageRows: number },
): boolean {
  const { total, available } = count;
  if (!count.exact || total === undefined || available === undefined) return false;
  if (options.passthrough === undefined || options.reorderable !== true) return false;
  if (options.pageSize <= 1 || costs.pageRows <= 1 || 2 * (total - available + rows) <= total) return false;
  // Within the subrequests one request may make (limits.ts), even with pages a row shorter and,
  // should a page not follow on, the window's pages asked again by offset.
  const pages = Math.ceil(Math.max(0, rows - costs.firstRows) / (costs.pageRows - 1));
  return 1 + pages + Math.max(1, options.concurrency) + 2 <= options.subrequestLimit;
}

/** An export whose pages go from the table's end past its middle (see `fromEndPays`). */
function fromEndOf({ sizer }: Opening, { later, after, count }: Judged): { fromEnd?: FromEnd } {
  if (later.byId !== "ends" || after === undefined || count.total === undefined) return {};
  // A page from the end carries the row before it too: pages a row short of the cap (CKAN's
  // rows_max) leave room for it.
  sizer.spareOneRow();
  return { fromEnd: { total: count.total, off: false, outputPerRow: undefined } };
}

/**
 * A sort whose first key wants its nulls where PostgreSQL does not put them: CKAN's order split
 * (nulls-last.ts), and the segments of it that give the rows from the link's offset and the rows done.
 */
async function movedRows(site: CkanSite, query: TableQuery, base: SearchRequest, done: number, signal: AbortSignal) {
  const key = movedNulls(query.sort);
  if (key === undefined) return undefined;
  const split = await splitAtNulls(site.client, base, key, signal).catch((error: unknown) => {
    throw explainRefusal(error, query, site.rangeFilters === false);
  });
  const segments: Segment[] = segmentsFrom(split, query.offset + done);
  return { split, segments };
}

/**
 * The export's first page, asked for `limit` rows: where the rows start, or, with nulls moved last,
 * at the first segment's start (its rows counted exactly, so the page is never cut short).
 */
async function openStart(
  site: CkanSite,
  query: TableQuery,
  resume: Resume | undefined,
  limit: number,
  signal: AbortSignal,
) {
  // Every request of the export starts from this one, built once from the query.
  const base = baseRequest(query);
  const moved = await movedRows(site, query, base, resume?.rows ?? 0, signal);
  const firstLimit = Math.min(limit, moved?.segments[0]?.count ?? Number.POSITIVE_INFINITY);
  const { result: first, keyset } =
    moved === undefined
      ? await openFirstPage(site, base, query, resume, firstLimit, signal)
      : await openFirstPage(
          site,
          base,
          { ...query, offset: moved.segments[0]?.offset ?? moved.split.rows },
          undefined,
          firstLimit,
          signal,
        );
  return { base, moved, firstLimit, first, byId: moved === undefined ? idPagingOf(site, query, keyset) : undefined };
}

/**
 * CKAN's count (the first page's, or the one a resumed export carries), checked against the row
 * limit, and the rows it leaves after those done.
 */
function countOf(
  query: TableQuery,
  counted: Pick<SearchResult, "total" | "total_was_estimated"> | Resume,
  rowLimit: RowLimit,
  done: number,
): { total: number | undefined; estimated: boolean; available: number | undefined; exact: boolean } {
  const given = "rows" in counted ? { total: counted.total, total_was_estimated: counted.estimated } : counted;
  const total = typeof given.total === "number" ? given.total : undefined;
  const checked = checkCount(query, given, rowLimit);
  const available = checked.available === undefined ? undefined : Math.max(0, checked.available - done);
  return { total, estimated: checked.estimated, available, exact: available !== undefined && !checked.estimated };
}

/**
 * How the pages after the first are asked for and read. The first page told the columns: later
 * pages are asked for exactly those, in output order (plus `_id` last for paging by `_id`), so their
 * rows need no rearranging, and CSV ones can be rewritten as text.
 */
function laterPages(
  request: SearchRequest,
  first: SearchResult,
  columns: Column[],
  byIdAsked: "ranges" | "lists" | "ends" | undefined,
  resume: Resume | undefined,
  passthroughFactory: PassthroughFactory | undefined,
): {
  base: SearchRequest;
  byId: "ranges" | "lists" | "ends" | undefined;
  pageOf: (result: SearchResult) => Page;
  reader: RecordsReader | undefined;
  stream: (() => RecordsStream) | undefined;
} {
  const idColumn = first.fields.find((f) => f.id === "_id");
  const incoming =
    byIdAsked !== undefined && idColumn !== undefined && !columns.some((c) => c.id === "_id")
      ? [...columns, idColumn]
      : columns;
  // `_id` ranges read each page's last `_id` from its last cell; with `_id` elsewhere (a user's
  // `fields` order), pages go by offset, which CKAN serves as well.
  const byId = incoming.at(-1)?.id === "_id" ? byIdAsked : undefined;
  const base = { ...request };
  base.fields = incoming.map((c) => c.id);
  // The count is known from the first page: later pages skip CKAN's count(*).
  base.include_total = false;
  if (resume?.afterId !== undefined) base.filters = { ...request.filters, _id: { gt: resume.afterId } };
  const passthrough = passthroughFactory?.(incoming, columns.length);
  base.records_format = passthrough?.recordsFormat ?? rowsFormat(base.q, base.fields);
  const pageOf = (result: SearchResult): Page => {
    if (result.copy !== undefined) {
      const copied = result.copy();
      return { batch: copied.page, lastId: byId ? idOf(copied.lastId) : undefined };
    }
    // The reader could not read the answer's records: rows, when they came as records.
    if (typeof result.records === "string") throw new UpstreamFailure(502, "CKAN's CSV records could not be read.");
    return { batch: rowsOf(result, columns), lastId: byId ? lastIdOf(result) : undefined };
  };
  return { base, byId, pageOf, reader: passthrough?.read, stream: passthrough?.stream };
}
