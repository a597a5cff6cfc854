import { HttpError } from "../errors.ts";
import { batchRows, type Batch } from "../format/batch.ts";
import type { CkanClient } from "./client.ts";
import type { PageSizer } from "./page-size.ts";
import type { Filters, SearchRequest, SearchResult } from "./types.ts";

/** How the rest of an export is fetched, decided once its first page is in. */
export interface PagePlan {
  client: CkanClient;
  /** The request every later page starts from (columns, order, records format). */
  base: SearchRequest;
  /** The user's filters, which keyset paging extends with `next_page`. */
  filters: Filters;
  /** The user's offset: offset pages count from it. */
  offset: number;
  /** Follow `next_page` (sequential) instead of offsets. */
  keyset: boolean;
  /** Offset pages in flight at once. */
  window: number;
  /** Rows wanted in all: the limit, or MAX_ROWS + 1 to tell "exactly the maximum" from "more". */
  wanted: number;
  /**
   * Rows to plan offset pages for at once: CKAN's count when it gave one, else `wanted`. Only a plan:
   * the count may be stale (CKAN 2.12 caches it), so a table that goes on past it is read to its end.
   */
  planned: number;
  /** MAX_ROWS when the link set no limit: passing it is an error, never a silent cut. */
  maxRows: number | undefined;
  tooMany: () => HttpError;
  sizer: PageSizer;
  signal: AbortSignal;
  /** Ends every upstream request still in flight once the loop stops, however it stops. */
  stop: AbortController;
  first: SearchResult;
  firstRows: Batch;
  /** The limit the first page was asked with. */
  firstLimit: number;
  /** A page's records as a batch for the encoder (rows, or rewritten CSV text). */
  batchOf: (result: SearchResult) => Batch;
}

/** Rows of one planned stretch of the table, and whether the table ended inside it. */
interface Fetched {
  rows: Batch;
  result: SearchResult;
  ended: boolean;
}

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

/** A stretch of the table by offset; a site cap below `count` costs extra requests, never rows. */
async function fetchStretch(plan: PagePlan, offset: number, count: number): Promise<Fetched> {
  const { client, base, sizer, signal } = plan;
  let rows: Batch | undefined;
  for (let at = offset, left = count; ; ) {
    const result = await client.search({ ...base, offset: at, limit: left }, signal);
    const got = plan.batchOf(result);
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

/** The page after `after`, by CKAN 2.12's `next_page` filter. */
async function fetchKeyset(plan: PagePlan, after: SearchResult, seen: number): Promise<Fetched> {
  if (after.next_page === undefined) throw new HttpError(502, "CKAN stopped handing out next pages before the end of the table.");
  const limit = Math.min(plan.sizer.rows, plan.wanted - seen);
  const body = { ...plan.base, limit, filters: { ...plan.filters, ...after.next_page }, include_next_page: true };
  const result = await plan.client.search(body, plan.signal);
  const rows = plan.batchOf(result);
  const n = batchRows(rows);
  const applied = typeof result.limit === "number" ? Math.min(result.limit, limit) : limit;
  if (applied < limit) plan.sizer.capAt(applied);
  plan.sizer.observe(result.responseBytes, n);
  return { rows, result, ended: n < applied };
}

/**
 * The one paging loop. Keyset paging (CKAN 2.12+) is sequential by nature, one page fetched ahead.
 * Offset paging with an exact total keeps `window` planned pages in flight, yielded strictly in
 * order. Without an exact total, one page ahead, and the end is found by counting rows, never by
 * trusting `_links` or a page's size.
 */
export async function* readPages(plan: PagePlan): AsyncGenerator<Batch, void, undefined> {
  const { first, firstRows, sizer, wanted } = plan;
  const firstCount = batchRows(firstRows);
  const firstApplied = typeof first.limit === "number" ? Math.min(first.limit, plan.firstLimit) : plan.firstLimit;
  if (firstApplied < plan.firstLimit) sizer.capAt(firstApplied);
  sizer.observe(first.responseBytes, firstCount);
  let current: Fetched = { rows: firstRows, result: first, ended: firstCount < firstApplied };
  const count = (): number => batchRows(current.rows);
  let planned = firstCount;
  let seen = 0;
  const inflight: Promise<Fetched>[] = [];
  const next = (): Promise<Fetched> | undefined => {
    if (plan.keyset) return inflight.length === 0 ? fetchKeyset(plan, current.result, seen + count()) : undefined;
    // Past the count, one page at a time, asked only once the page before came back full.
    const beyond = planned >= plan.planned;
    if (beyond && inflight.length > 0) return undefined;
    const size = Math.min(sizer.rows, (beyond ? wanted : plan.planned) - planned);
    if (size <= 0) return undefined;
    const stretch = fetchStretch(plan, plan.offset + planned, size);
    planned += size;
    return stretch;
  };
  try {
    for (;;) {
      if (plan.maxRows !== undefined && seen + count() > plan.maxRows) throw plan.tooMany();
      const last = current.ended || seen + count() >= wanted;
      while (!last && inflight.length < plan.window) {
        const fetching = next();
        if (fetching === undefined) break;
        // The consumer may stop before awaiting this; a rejection must not go unhandled meanwhile.
        fetching.catch(() => {});
        inflight.push(fetching);
      }
      const rows = seen + count() > wanted ? trim(current.rows, wanted - seen) : current.rows;
      seen += batchRows(rows);
      yield rows;
      const following = inflight.shift();
      if (last || following === undefined) return;
      current = await following;
    }
  } finally {
    inflight.length = 0;
    plan.stop.abort();
  }
}
