import { HttpError } from "../errors.ts";
import { batchRows, type Batch, type Column, type PassthroughFactory } from "../format/types.ts";
import { sortColumns, type ExportQuery } from "../query.ts";
import type { CkanClient } from "./client.ts";
import { outputColumns, rowsOf } from "./columns.ts";
import { CkanValidationError } from "./errors.ts";
import { PageSizer } from "./page-size.ts";
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
}

export interface PagingOptions {
  pageSize: number;
  maxRows: number;
  /** Pages fetched at once when the total is known and paging is by offset. */
  concurrency: number;
  /** Ask later pages as CSV text and rewrite them with this instead of encoding rows. */
  passthrough?: PassthroughFactory;
  signal?: AbortSignal;
}

/** Rows of one planned stretch of the table, and whether the table ended inside it. */
interface Fetched {
  rows: Batch;
  result: SearchResult;
  ended: boolean;
}

/**
 * What each site (in this isolate) answered to `include_next_page`: CKAN before 2.12 rejects an
 * unknown parameter with a 409, so the first export learns it and later ones do not ask again.
 */
const keysetSupport = new Map<string, boolean>();

function rejectsKeyset(error: unknown): boolean {
  return error instanceof CkanValidationError && (error.fields.__extras ?? []).some((m) => m.includes("include_next_page"));
}

/** The user's order made total by `_id`, so offset paging neither repeats nor skips rows. */
function pagingSort(sort: string | undefined): string {
  if (sort === undefined) return "_id";
  return sortColumns(sort).includes("_id") ? sort : `${sort}, _id`;
}

/** `available` undefined: CKAN gave no exact count, and counting passed the maximum. */
const tooMany = (available: number | undefined, estimated: boolean, maxRows: number): HttpError =>
  new HttpError(
    400,
    `${available === undefined ? "More than" : estimated ? "About" : ""} ${available ?? maxRows} rows match, more than this worker's maximum of ${maxRows} rows per export. Add limit=${maxRows} (or less), narrow with filters or q, or export in parts with offset.`.trimStart(),
    { parameter: "limit" },
  );

/** Two parts of one planned stretch (a site cap split it), in order. */
function join(a: Batch, b: Batch): Batch {
  if (Array.isArray(a) && Array.isArray(b)) return a.concat(b);
  if (!Array.isArray(a) && !Array.isArray(b)) return { text: a.text + b.text, rows: a.rows + b.rows };
  throw new HttpError(502, "CKAN answered one stretch of the table in two record formats.");
}

/** CKAN never sends more rows than asked; if it did, rows can be cut, CSV text cannot. */
function trim(batch: Batch, rows: number): Batch {
  if (Array.isArray(batch)) return batch.slice(0, rows);
  throw new HttpError(502, "CKAN answered with more rows than asked for.");
}

/**
 * Opens an export and returns the rest as the one paging loop. Keyset paging (CKAN 2.12+) is
 * sequential by nature, one page fetched ahead. Offset paging with an exact total plans the pages
 * up front and keeps `concurrency` of them in flight, yielded strictly in order; that is where an
 * export beats a portal's own one-stream dump. Without an exact total, one page ahead, and the
 * end is found by counting rows, never by trusting `_links` or a page's size.
 */
export async function openTable(client: CkanClient, siteKey: string, query: ExportQuery, options: PagingOptions): Promise<Table> {
  // next_page is a filter on `_id`, so it only works in `_id` order and beside no `_id` filter of the user's.
  let keyset = query.sort === undefined && !("_id" in query.filters) && keysetSupport.get(siteKey) !== false;
  const base: SearchRequest = { resource_id: query.resourceId, limit: 0, sort: pagingSort(query.sort), records_format: "lists" };
  if (query.q !== undefined) base.q = query.q;
  if (Object.keys(query.filters).length > 0) base.filters = query.filters;
  const fieldsFor = (withId: boolean): string[] | undefined =>
    query.fields === undefined ? undefined : withId && !query.fields.includes("_id") ? [...query.fields, "_id"] : query.fields;
  // Keyset paging reads `_id` from each page; the projection drops it again.
  const setFields = (): void => {
    const fields = fieldsFor(keyset);
    if (fields === undefined) delete base.fields;
    else base.fields = fields;
  };
  setFields();
  // Without a limit, at most MAX_ROWS; one row more is fetched to tell "exactly the maximum" from "more".
  const wanted = query.limit ?? options.maxRows + 1;
  // Ends every upstream request still in flight when the export stops, however it stops.
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  const sizer = new PageSizer(options.pageSize);
  const firstLimit = Math.min(sizer.rows, wanted);
  const firstBody = (): SearchRequest => ({
    ...base,
    limit: firstLimit,
    offset: query.offset,
    include_total: true,
    ...(keyset ? { include_next_page: true } : {}),
  });

  let first: SearchResult;
  if (keyset && keysetSupport.get(siteKey) === undefined) {
    // A site not asked yet: ask both ways at once, so learning costs no round trip before the first byte.
    const { include_next_page: _, ...plainBody } = { ...firstBody(), fields: fieldsFor(false) };
    if (plainBody.fields === undefined) delete plainBody.fields;
    const giveUp = new AbortController();
    const asked = client.search(firstBody(), signal);
    const plain = client.search(plainBody, AbortSignal.any([signal, giveUp.signal]));
    plain.catch(() => {});
    try {
      first = await asked;
      keysetSupport.set(siteKey, true);
      giveUp.abort();
    } catch (error) {
      if (!rejectsKeyset(error)) {
        giveUp.abort();
        throw error;
      }
      keysetSupport.set(siteKey, false);
      keyset = false;
      setFields();
      first = await plain;
    }
  } else {
    first = await client.search(firstBody(), signal);
  }

  const columns = outputColumns(query, first.fields);
  const total = typeof first.total === "number" ? first.total : undefined;
  const estimated = first.total_was_estimated === true;
  const available = total === undefined ? undefined : Math.max(0, total - query.offset);
  if (query.limit === undefined && available !== undefined && available > options.maxRows) throw tooMany(available, estimated, options.maxRows);
  const expectedRows = available === undefined ? query.limit : Math.min(available, wanted);
  // An estimated total may be short: planning by it could stop early, so count instead.
  const exact = available !== undefined && !estimated;
  const window = !keyset && exact ? Math.max(1, options.concurrency) : 1;
  const target = exact ? Math.min(available, wanted) : wanted;

  // The first page told us the columns: later pages are asked for exactly those, in output order (plus
  // `_id` last for keyset paging), so their rows need no rearranging, and CSV ones can be rewritten as text.
  const idColumn = first.fields.find((f) => f.id === "_id");
  const incoming = keyset && idColumn !== undefined && !columns.includes(idColumn) ? [...columns, idColumn] : columns;
  base.fields = incoming.map((c) => c.id);
  let rewrite: ((page: string) => { text: string; rows: number }) | undefined;
  if (options.passthrough !== undefined) {
    rewrite = options.passthrough(incoming, columns.length);
    base.records_format = "csv";
  }
  const batchOf = (result: SearchResult): Batch =>
    typeof result.records === "string" && rewrite !== undefined ? rewrite(result.records) : rowsOf(result, columns);

  /** A stretch of the table by offset; a site cap below `count` costs extra requests, never rows. */
  async function fetchStretch(offset: number, count: number): Promise<Fetched> {
    let rows: Batch | undefined;
    for (let at = offset, left = count; ; ) {
      const result = await client.search({ ...base, offset: at, limit: left }, signal);
      const got = batchOf(result);
      const n = batchRows(got);
      rows = rows === undefined ? got : join(rows, got);
      const capped = typeof result.limit === "number" && result.limit < left;
      if (capped) sizer.capAt(result.limit as number);
      sizer.observe(result.responseBytes, n);
      if (n >= left) return { rows, result, ended: false };
      if (n === 0 || !capped) return { rows, result, ended: true };
      at += n;
      left -= n;
    }
  }

  async function fetchKeyset(after: SearchResult, seen: number): Promise<Fetched> {
    if (after.next_page === undefined) throw new HttpError(502, "CKAN stopped handing out next pages before the end of the table.");
    const limit = Math.min(sizer.rows, wanted - seen);
    const body = { ...base, limit, filters: { ...query.filters, ...after.next_page }, include_next_page: true };
    const result = await client.search(body, signal);
    const rows = batchOf(result);
    const n = batchRows(rows);
    const applied = typeof result.limit === "number" ? Math.min(result.limit, limit) : limit;
    if (applied < limit) sizer.capAt(applied);
    sizer.observe(result.responseBytes, n);
    return { rows, result, ended: n < applied };
  }

  async function* pages(): AsyncGenerator<Batch, void, undefined> {
    const firstRows = rowsOf(first, columns);
    const firstApplied = typeof first.limit === "number" ? Math.min(first.limit, firstLimit) : firstLimit;
    if (firstApplied < firstLimit) sizer.capAt(firstApplied);
    sizer.observe(first.responseBytes, firstRows.length);
    let current: Fetched = { rows: firstRows, result: first, ended: firstRows.length < firstApplied };
    const count = (): number => batchRows(current.rows);
    let planned = firstRows.length;
    let seen = 0;
    const inflight: Promise<Fetched>[] = [];
    const plan = (): Promise<Fetched> | undefined => {
      if (keyset) return inflight.length === 0 ? fetchKeyset(current.result, seen + count()) : undefined;
      const size = Math.min(sizer.rows, target - planned);
      if (size <= 0) return undefined;
      const stretch = fetchStretch(query.offset + planned, size);
      planned += size;
      return stretch;
    };
    try {
      for (;;) {
        if (query.limit === undefined && seen + count() > options.maxRows) throw tooMany(undefined, false, options.maxRows);
        const last = current.ended || seen + count() >= wanted;
        while (!last && inflight.length < window) {
          const next = plan();
          if (next === undefined) break;
          // The consumer may stop before awaiting this; a rejection must not go unhandled meanwhile.
          next.catch(() => {});
          inflight.push(next);
        }
        const rows = seen + count() > wanted ? trim(current.rows, wanted - seen) : current.rows;
        seen += batchRows(rows);
        yield rows;
        const next = inflight.shift();
        if (last || next === undefined) return;
        current = await next;
      }
    } finally {
      inflight.length = 0;
      stop.abort();
    }
  }

  return { columns, total, expectedRows, firstPageRows: Math.min(first.records.length, wanted), pages: pages() };
}
