import { UpstreamFailure } from "../errors.ts";
import {
  batchRows,
  leadingRows,
  type Batch,
  type CopiedRecords,
  type RecordsReader,
  type RecordsStream,
} from "../rows/batch.ts";
import type { CkanClient } from "./client.ts";
import { asksFromEnd, fromEndRequest, HeldPage, type FromEnd } from "./from-end.ts";
import {
  ISOLATE_HELD_BUDGET,
  ISOLATE_PAGE_BUDGET,
  STREAMED_PAGE_COST,
  WHOLE_PAGE_COST,
  type PageSizer,
} from "./page-budget.ts";
import { streamedPage } from "./streamed-page.ts";
import { largestIdRequest, lastIdOf } from "./requests.ts";
import type { Filters } from "../query/table-query.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

/**
 * A stretch of the table one request asks for: rows from an offset (a user's sort), or rows in an
 * `_id` range, which has no deep offsets to re-scan and can be fetched side by side. A range is a
 * range filter (CKAN 2.12), or, `listed`, the list of every `_id` in it: CKAN before 2.12 has no
 * range filters but takes a list as SQL's `IN`. `upTo` undefined: to the end of the table (never
 * listed: a list ends).
 */
export type Stretch =
  | { offset: number; count: number; beside?: TailCheck }
  | { after: number; upTo: number | undefined; count: number; listed?: true; beside?: TailCheck }
  | TailCheck;

/**
 * After the last page planned (CKAN before 2.12): whether rows were added past it, asked beside the
 * last page (its `beside`, outside the window: a cheap request that would otherwise wait for a slot
 * and end the export alone) instead of by one more page after them: CKAN's count again (offset pages, against the
 * count they were planned by), or the largest `_id` (`_id` lists, which then go on up to it). `more`
 * (and `largest`) once answered.
 */
export interface TailCheck {
  tail: { by: "count"; total: number; more?: boolean } | { by: "largest"; more?: boolean; largest?: number };
  count: 0;
}

/** A stretch that asks for rows. */
type PageStretch = Exclude<Stretch, TailCheck>;

/** A page as the loop reads it: the batch for the encoder and the last `_id` in it (for `_id` ranges). */
export interface Page {
  batch: Batch;
  lastId: number | undefined;
}

/** How the rest of an export is fetched, decided once its first page is in. */
export interface PagePlan {
  client: CkanClient;
  /** The request every later page starts from (columns, order, records format). */
  base: SearchRequest;
  /** The user's filters, which `_id` ranges extend. */
  filters: Filters;
  /** Rows wanted in all: the limit, or MAX_ROWS + 1 to tell "exactly the maximum" from "more". */
  wanted: number;
  /** When the link set no limit: throws once the rows seen pass the row limit, never a silent cut. */
  checkRows: ((seen: number) => void) | undefined;
  sizer: PageSizer;
  signal: AbortSignal;
  /** Ends every upstream request still in flight once the loop stops, however it stops. */
  stop: AbortController;
  first: SearchResult;
  firstRows: Batch;
  /** The limit the first page was asked with. */
  firstLimit: number;
  /** A page's records as a batch for the encoder, with its last `_id` when the page carries it. */
  pageOf: (result: SearchResult) => Page;
  /** Reads later pages' records straight from the answers' bytes (see CkanClient.search). */
  reader?: RecordsReader;
  /** With `reader`: reads them as each answer arrives instead (see streamed-page.ts). */
  stream?: () => RecordsStream;
  /**
   * Stretches to fetch after the first page, planned as they are needed (see `offsetStretches` and
   * `idStretches`); a promise while a probe runs, awaited only after the first page is yielded.
   */
  stretches: StretchPlanner | Promise<StretchPlanner>;
  /** Stretches in flight at once (at least 1). */
  window: number;
  /** The first page's last `_id` when later pages go by `_id` ranges. */
  firstLastId: number | undefined;
  /** Rows yielded so far and the last one's `_id` (see `Table.resumeAt`), written before each yield. */
  position: Position;
  /** Offset pages past the table's middle asked from its end (from-end.ts), where pages carry `_id`. */
  fromEnd?: FromEnd;
}

/** How far the loop has handed rows on: a later invocation can go on from there. */
export interface Position {
  rows: number;
  /** The last row's `_id`, when pages go by `_id` ranges. */
  lastId: number | undefined;
}

/**
 * Plans the next stretch: `rowsPlanned` rows are already asked for (the first page included).
 * Undefined: nothing more to plan until the stretches in flight come back (or ever).
 */
export type StretchPlanner = (rowsPlanned: number, inflight: number) => Stretch | undefined;

/** One fetched stretch: its page, whether the table ended inside it, and what is left of it. */
interface Fetched {
  page: Page;
  result: SearchResult;
  ended: boolean;
  /** The rest of the stretch when a page could not hold it (a site cap, or a dense `_id` range). */
  rest: Stretch | undefined;
}

/**
 * A page whose answer is read as it arrives, once its turn comes: until then CKAN's answer waits
 * unread (in the connection, not in this isolate), then its rows are handed on batch by batch.
 */
interface Streaming {
  stretch: PageStretch;
  pages: AsyncGenerator<CopiedRecords, SearchResult, undefined>;
  /** The request's response, whose body `pages` reads once it starts. */
  opened: Promise<Response>;
  /** Asked from the table's end: held here until it has all arrived, then handed on reversed. */
  fromEnd?: HeldPage;
}

/** A stretch asked for, its answer to read when its turn comes: whole (a function) or as it arrives. */
type Pending = (() => Fetched) | Streaming;

/**
 * Fetches a stretch's page; what the page holds is read only when the page's turn comes: pages
 * waiting in flight keep their answers (or, read as they arrive, not even those), not what is made
 * from them.
 */
async function fetchStretch(plan: PagePlan, stretch: Stretch, fromEnd = false): Promise<Pending> {
  if ("tail" in stretch) {
    const asked =
      stretch.tail.by === "count"
        ? { ...plan.base, limit: 0, records_format: "lists" as const, include_total: true }
        : largestIdRequest(plan.base);
    const result = await plan.client.search(asked, plan.signal);
    return () => tailChecked(plan, stretch, result);
  }
  const body: SearchRequest =
    "offset" in stretch
      ? fromEnd
        ? fromEndRequest(plan.base, stretch, plan.fromEnd!.total)
        : { ...plan.base, offset: stretch.offset, limit: stretch.count }
      : { ...plan.base, limit: stretch.count, filters: { ...plan.filters, _id: idFilter(stretch) } };
  if (plan.stream !== undefined && plan.reader !== undefined) {
    const opened = plan.client.open(body, plan.signal);
    // In flight until CKAN starts answering: its errors and retries happen here, as for a whole page.
    await opened;
    // A page from the end is held whole: an answer asked again after one broke off is taken whole.
    const held = fromEnd ? new HeldPage() : undefined;
    const restart = held === undefined ? {} : { restart: () => held.restart() };
    return {
      stretch,
      pages: streamedPage(
        { client: plan.client, body, signal: plan.signal, stream: plan.stream, reader: plan.reader, ...restart },
        opened,
      ),
      opened,
      ...(held === undefined ? {} : { fromEnd: held }),
    };
  }
  const result = await plan.client.search(body, plan.signal, plan.reader);
  return () => fetched(plan, stretch, result);
}

/** A range's `_id` filter: bounds, or every `_id` between them (see `Stretch`). */
function idFilter(range: Extract<PageStretch, { after: number }>): Filters[string] {
  if (range.upTo === undefined) return { gt: range.after };
  if (range.listed !== true) return { gt: range.after, lte: range.upTo };
  const ids = new Array<number>(range.upTo - range.after);
  for (let i = 0; i < ids.length; i++) ids[i] = range.after + 1 + i;
  return ids;
}

/** The tail check's answer, at its turn (every row before it handed on): rows past the last `_id` handed on, or the end. */
function tailChecked(plan: PagePlan, { tail }: TailCheck, result: SearchResult): Fetched {
  const last = plan.position.lastId;
  if (tail.by === "count") tail.more = typeof result.total === "number" && result.total > tail.total;
  else {
    tail.largest = lastIdOf(result);
    tail.more = tail.largest !== undefined && (last === undefined || tail.largest > last);
  }
  return { page: { batch: [], lastId: last }, result, ended: !tail.more, rest: undefined };
}

function fetched(
  plan: PagePlan,
  stretch: PageStretch,
  result: SearchResult,
  streamed?: { rows: number; lastId: number | undefined },
): Fetched {
  const { sizer } = plan;
  // A streamed page's rows were handed on already: only how many, and the last `_id`, are left.
  const page = streamed === undefined ? plan.pageOf(result) : { batch: [], lastId: streamed.lastId };
  const n = streamed === undefined ? batchRows(page.batch) : streamed.rows;
  const applied = typeof result.limit === "number" ? Math.min(result.limit, stretch.count) : stretch.count;
  if (applied < stretch.count) sizer.capAt(applied);
  sizer.observe(result.responseBytes, n);
  if ("offset" in stretch) {
    if (n >= stretch.count) return { page, result, ended: false, rest: undefined };
    // Short because the site capped the page: the rest is fetched, never skipped.
    if (n > 0 && applied < stretch.count)
      return { page, result, ended: false, rest: { offset: stretch.offset + n, count: stretch.count - n } };
    return { page, result, ended: true, rest: undefined };
  }
  if (n < applied) return { page, result, ended: stretch.upTo === undefined, rest: undefined };
  if (page.lastId === undefined) throw new UpstreamFailure(502, "CKAN's page carries no _id to continue from.");
  const done = stretch.upTo !== undefined && page.lastId >= stretch.upTo;
  // The rest is a range of its own: the check (if any) went out with the stretch already.
  const { beside: _sent, ...range } = stretch;
  return {
    page,
    result,
    ended: false,
    rest: done ? undefined : { ...range, after: page.lastId, count: sizer.rows },
  };
}

/**
 * Offset stretches: with CKAN's count, up to the count at once; past it (a stale count), one at a
 * time, each asked only once the one before came back full. The short page the count leaves goes
 * right after the first, not at the deepest offset: CKAN re-reads every row before a page, and the
 * full pages move down by the short page's rows while the short page moves up by all of theirs
 * (200,000 rows in pages of 32,000: 150,000 fewer rows re-read). It also comes back before the full
 * pages asked beside it, so the worker writes while CKAN computes them. Only by an exact count:
 * planned by the rows wanted, the short page would guess at the table's end.
 */
export function offsetStretches(
  offset: number,
  counted: number,
  wanted: number,
  sizer: PageSizer,
  check: TailCheck | undefined,
  exact: boolean,
): StretchPlanner {
  let checking = false;
  let first = exact;
  return (planned, inflight) => {
    const beyond = planned >= counted;
    if (beyond && check !== undefined && planned < wanted) {
      if (!checking) {
        checking = true;
        return check;
      }
      // Past the count only once the check found rows there; then as below, one page at a time.
      if (check.tail.more !== true) return undefined;
    }
    if (beyond && inflight > 0) return undefined;
    const left = (beyond ? wanted : counted) - planned;
    const short = first && !beyond ? left % sizer.rows : 0;
    first = false;
    const count = short > 0 ? short : Math.min(sizer.rows, left);
    if (count <= 0) return undefined;
    const stretch = { offset: offset + planned, count };
    // The page that reaches the count takes the check along.
    if (beyond || check === undefined || checking || planned + count < counted || counted >= wanted) return stretch;
    checking = true;
    return { ...stretch, beside: check };
  };
}

/**
 * Pages of fewer rows than this are written faster than CKAN's fixed cost of one more request
 * (7-16 ms measured): staggering the first ranges is worth a request only for pages this large.
 */
export const STAGGER_MIN_ROWS = 10_000;

/**
 * `_id` ranges after `after` (the first page's last `_id`) up to `largest` (the largest `_id`
 * matching, from one probe), each sized to hold about a page at the table's `_id` density, the last
 * one open-ended so rows past the probe (or past CKAN's count) are still read. Correctness never
 * depends on the density: a range with more rows than a page continues, one with fewer costs a
 * short request. `firstShare`: the first range's share of a page, when pages are large enough
 * (STAGGER_MIN_ROWS) for the time the worker takes to write one to matter.
 */
export function idStretches(
  after: number,
  largest: number | undefined,
  density: number,
  wanted: number,
  sizer: PageSizer,
  maxRanges: number,
  firstShare = 1,
): StretchPlanner {
  let next = after;
  let open = false;
  let ranges = 0;
  return (planned, inflight) => {
    if (open) return undefined;
    const page = ranges === 0 && sizer.rows >= STAGGER_MIN_ROWS ? Math.ceil(sizer.rows * firstShare) : sizer.rows;
    const rows = Math.min(page, wanted - planned);
    // Ranges enough for the rows wanted are out: more only if they come back emptier than foreseen.
    if (rows <= 0 && inflight > 0) return undefined;
    const span = Math.max(1, Math.ceil(rows / Math.max(density, 1e-9)));
    // The open-ended range always comes last: ranges emptier than foreseen must never end the export,
    // nor multiply requests past what the export was allowed (its full pages read the rest).
    if (rows <= 0 || largest === undefined || next + span >= largest || ranges >= maxRanges) {
      open = true;
      return { after: next, upTo: undefined, count: rows > 0 ? rows : sizer.rows };
    }
    const stretch = { after: next, upTo: next + span, count: rows };
    next += span;
    ranges++;
    return stretch;
  };
}

/** Ids a list may hold per row it asks for: lists are used only where at least half the ids are rows. */
const LIST_IDS_PER_ROW = 2;

/**
 * `_id` lists after `after` (the first page's last `_id`) up to `largest` (the largest `_id`
 * matching, from one probe), for CKAN before 2.12 (see `Stretch`): each lists about a page's rows
 * at the table's `_id` density. Beside the last ones, `check` asks the largest `_id` again and the
 * lists go on to it: rows added since the probe are read too. A list holding more rows than its
 * page continues, one holding fewer costs a short request; `firstShare` as for `idStretches`.
 */
export function idListStretches(
  after: number,
  largest: number,
  density: number,
  wanted: number,
  sizer: PageSizer,
  firstShare = 1,
  check?: TailCheck,
): StretchPlanner {
  let next = after;
  let lists = 0;
  let checking = false;
  return (planned, inflight) => {
    if (next >= largest) {
      // With the last list (or here, if none carried it), the largest `_id` again: rows added since the probe are listed too (once).
      if (check === undefined || check.tail.by !== "largest") return undefined;
      if (!checking) {
        checking = true;
        return check;
      }
      if (check.tail.more !== true || (check.tail.largest ?? 0) <= largest) return undefined;
      largest = check.tail.largest!;
    }
    const page = lists === 0 && sizer.rows >= STAGGER_MIN_ROWS ? Math.ceil(sizer.rows * firstShare) : sizer.rows;
    const rows = Math.min(page, wanted - planned);
    // Lists enough for the rows wanted are out: more only if they come back emptier than foreseen.
    if (rows <= 0 && inflight > 0) return undefined;
    const count = rows > 0 ? rows : page;
    const span = Math.min(largest - next, Math.ceil(count / Math.max(density, 1 / LIST_IDS_PER_ROW)));
    const stretch = { after: next, upTo: next + span, count: Math.min(count, span), listed: true as const };
    next += span;
    lists++;
    // The list that reaches the largest `_id` takes the check along.
    if (next < largest || checking || check === undefined || check.tail.by !== "largest") return stretch;
    checking = true;
    return { ...stretch, beside: check };
  };
}

/**
 * Exports paging in this isolate, with when each last moved: they share ISOLATE_PAGE_BUDGET. One
 * that has not moved for a while (its request torn down without its stream being cancelled) no
 * longer counts, so it cannot shrink everyone's windows for good.
 */
const paging = new Map<object, number>();
const IDLE_MS = 30_000;

/** Exports paging in this isolate now (at least 1: the one asking). */
function movingExports(): number {
  const now = Date.now();
  let moving = 0;
  for (const [export_, moved] of paging) {
    if (now - moved < IDLE_MS) moving++;
    else paging.delete(export_);
  }
  return Math.max(1, moving);
}

/** Pages one export may have in flight: its own window, shrunk while other exports share the isolate. */
const windowNow = (own: number, pageCost: number): number =>
  Math.max(1, Math.min(own, Math.floor(ISOLATE_PAGE_BUDGET / (movingExports() * pageCost))));

/** Output bytes one export may hold to hand a page asked from the table's end on reversed. */
const heldRoom = (): number => ISOLATE_HELD_BUDGET / movingExports();

/**
 * The one paging loop's state: stretches planned ahead, `window` of them in flight, the rows handed
 * on so far. `readPages` drives it page by page.
 */
class Pager {
  readonly plan: PagePlan;
  /** Rows asked for so far (the first page's included). */
  planned: number;
  /** Rows handed on so far. */
  seen = 0;
  readonly inflight: Promise<Pending>[] = [];
  planner: StretchPlanner | undefined;
  /** A page read as it arrives holds a batch of rows at a time, not its answer. */
  readonly pageCost: number;

  /** Requests started since the isolate last turned to its event loop (see `send`). */
  #unsent: boolean;

  /** The count beside a last page from the table's end, not asked unless that page does not follow on (`beside`). */
  readonly #unasked = new Map<Promise<Pending>, TailCheck>();
  /** Stretches in flight asked from the table's end, to ask by offset instead if that stops (`turnAround`). */
  readonly #fromEnd = new Map<Promise<Pending>, PageStretch>();
  /** Output bytes and rows of the streamed pages handed on, for `FromEnd.outputPerRow`. */
  #outputBytes = 0;
  #outputRows = 0;

  constructor(plan: PagePlan, firstCount: number) {
    this.plan = plan;
    this.planned = firstCount;
    this.planner = typeof plan.stretches === "function" ? plan.stretches : undefined;
    // A probe planning the stretches was just asked (strategies.ts): it too must leave before the first page is written.
    this.#unsent = this.planner === undefined;
    this.pageCost = plan.stream !== undefined && plan.reader !== undefined ? STREAMED_PAGE_COST : WHOLE_PAGE_COST;
  }

  start(stretch: Stretch): Promise<Pending> {
    this.#unsent = true;
    const { plan } = this;
    // A page from the end asks one row more than its own (see table.ts): within the cap, or not at all.
    const fromEnd = this.fromEnd(stretch) && stretch.count < plan.sizer.cap;
    const fetching = fetchStretch(plan, stretch, fromEnd);
    // The consumer may stop before awaiting this; a rejection must not go unhandled meanwhile.
    fetching.catch(() => {});
    if (fromEnd) this.#fromEnd.set(fetching, stretch as PageStretch);
    return fetching;
  }

  /** Whether a stretch is to be asked from the table's end (from-end.ts), its rows read as they arrive. */
  fromEnd(stretch: Stretch): stretch is { offset: number; count: number } {
    const { plan } = this;
    return (
      "offset" in stretch &&
      plan.stream !== undefined &&
      plan.reader !== undefined &&
      asksFromEnd(plan.fromEnd, stretch, heldRoom())
    );
  }

  /** The next stretch in table order, no longer in flight. */
  next(): Promise<Pending> | undefined {
    const next = this.inflight.shift();
    if (next !== undefined) {
      this.#fromEnd.delete(next);
      this.#unasked.delete(next);
    }
    return next;
  }

  /** A streamed page's batch handed on: what a row costs to hold, before a page is asked from the end. */
  measured(batch: Batch): void {
    if (Array.isArray(batch) || this.plan.fromEnd === undefined) return;
    this.#outputBytes += batch.bytes.length;
    this.#outputRows += batch.rows;
    if (this.#outputRows >= 1000) this.plan.fromEnd.outputPerRow = this.#outputBytes / this.#outputRows;
  }

  /**
   * A page asked from the table's end did not follow on, or outgrew its room: it and every page
   * still in flight from the end are asked by offset instead, and no more from the end. `stretch`
   * (the page's) is fetched next.
   */
  turnAround(stretch: PageStretch): void {
    this.plan.fromEnd!.off = true;
    for (let k = 0; k < this.inflight.length; k++) {
      const asked = this.inflight[k]!;
      const unasked = this.#unasked.get(asked);
      if (unasked !== undefined) {
        this.inflight[k] = this.start(unasked);
        continue;
      }
      const again = this.#fromEnd.get(asked);
      if (again === undefined) continue;
      this.inflight[k] = this.start(again);
      // Its answer is not wanted: let the connection go.
      asked.then((pending) => (typeof pending === "function" ? undefined : letGo(pending))).catch(() => {});
    }
    this.#fromEnd.clear();
    this.#unasked.clear();
    this.inflight.unshift(this.start(stretch));
  }

  /**
   * `check`, the count asked again beside the last page `stretch` (see `TailCheck`), unless that page
   * goes from the table's end and ends at its last row: it is then handed on only if it follows on
   * from the rows before it (`HeldPage.follows`), so only if the rows after the last one handed on
   * are exactly the page's as CKAN answers it, which tells what the count would, one request (a fixed
   * cost and a count(*)) later. Should a page from the end not follow on, the count is asked after
   * all (`turnAround`).
   */
  beside(check: TailCheck, stretch: PageStretch, page: Promise<Pending>): Promise<Pending> {
    const ends = this.plan.fromEnd;
    const last = ends !== undefined && "offset" in stretch && stretch.offset + stretch.count === ends.total;
    if (!last || check.tail.by !== "count" || !this.#fromEnd.has(page)) return this.start(check);
    const counted = { fields: [], records: [], total: check.tail.total };
    const confirmed = Promise.resolve<Pending>(() => tailChecked(this.plan, check, counted));
    this.#unasked.set(confirmed, check);
    return confirmed;
  }

  /**
   * `arriving`: the page being written is still arriving. Its request counts as one of the window (a
   * window of one still asks for the next page meanwhile, as it would for a page read whole), and
   * to the planner as one in flight (a page past CKAN's count waits until this one came back full).
   */
  fill(arriving = 0): void {
    for (;;) {
      const window = windowNow(this.plan.window, this.pageCost);
      if (this.planner === undefined || this.inflight.length + (window > 1 ? arriving : 0) >= window) break;
      const stretch = this.planner(this.planned, this.inflight.length + arriving);
      if (stretch === undefined) break;
      const page = this.start(stretch);
      this.inflight.push(page);
      this.planned += stretch.count;
      if ("beside" in stretch && stretch.beside !== undefined)
        this.inflight.push(this.beside(stretch.beside, stretch, page));
    }
  }

  /**
   * Lets the requests just started leave. workerd sends a `fetch` only once the isolate turns to its
   * event loop, and writing a page that has already arrived never does: without this, the next
   * pages left only after the page before them was written (measured: 30-40 ms of CKAN idle at an
   * export's start, 10-30 ms at each page after).
   */
  async send(): Promise<void> {
    if (!this.#unsent) return;
    this.#unsent = false;
    await new Promise((resolve) => setTimeout(resolve, 0));
  }

  /** What the loop does once a page's size is known: the rest of its stretch next, more pages asked for. */
  following(page: Fetched, count: number): boolean {
    const last = page.ended || this.seen + count >= this.plan.wanted;
    if (!last && page.rest !== undefined) {
      // The rest of this stretch comes right after it, ahead of the stretches already in flight.
      this.inflight.unshift(this.start(page.rest));
      // An offset stretch's rest was planned with it; an `_id` range held more rows than foreseen.
      if ("after" in page.rest) this.planned += page.rest.count;
    }
    if (!last) this.fill();
    return last;
  }

  /** Hands on a batch of rows: counted against the limits, the last one cut to the rows wanted. */
  handOn(batch: Batch, lastId: number | undefined): Batch {
    const { plan, seen } = this;
    const count = batchRows(batch);
    plan.checkRows?.(seen + count);
    // `_id` ranges side by side may bring more rows than the limit: the last page is cut.
    const rows = seen + count > plan.wanted ? leadingRows(batch, plan.wanted - seen) : batch;
    this.seen += batchRows(rows);
    plan.position.rows = this.seen;
    plan.position.lastId = lastId;
    return rows;
  }
}

/** The first page, in before the loop starts: what it tells of the site's cap and of a row's size. */
function firstFetched(plan: PagePlan): Fetched {
  const { first, firstRows, sizer } = plan;
  const firstCount = batchRows(firstRows);
  const firstApplied = typeof first.limit === "number" ? Math.min(first.limit, plan.firstLimit) : plan.firstLimit;
  if (firstApplied < plan.firstLimit) sizer.capAt(firstApplied);
  sizer.observe(first.responseBytes, firstCount);
  return {
    page: { batch: firstRows, lastId: plan.firstLastId },
    result: first,
    ended: firstCount < firstApplied,
    rest: undefined,
  };
}

/** A page read whole: checked, the next pages asked for, then handed on. Returns whether it was the last. */
async function* wholePage(pager: Pager, current: Fetched): AsyncGenerator<Batch, boolean, undefined> {
  const count = batchRows(current.page.batch);
  pager.plan.checkRows?.(pager.seen + count);
  const last = pager.following(current, count);
  await pager.send();
  yield pager.handOn(current.page.batch, current.page.lastId);
  return last;
}

/**
 * A page read as it arrives: its rows handed on batch by batch, then what the page says of the rest
 * once it ends. The window is kept full meanwhile (this page's request among them): CKAN computes
 * the next pages while this one is written. Returns whether it was the last, undefined once the
 * rows wanted are all out.
 */
async function* streamingPage(pager: Pager, current: Streaming): AsyncGenerator<Batch, boolean | undefined, undefined> {
  const { plan } = pager;
  pager.fill(1);
  await pager.send();
  if (current.fromEnd !== undefined) return yield* fromEndPage(pager, current, current.fromEnd);
  const from = pager.seen;
  let lastId: number | undefined;
  let result: SearchResult | undefined;
  for (;;) {
    const next = await current.pages.next();
    if (next.done) {
      result = next.value;
      break;
    }
    lastId = plan.pageOf({ fields: [], records: [], copy: () => next.value }).lastId;
    paging.set(plan, Date.now());
    pager.measured(next.value.page);
    yield pager.handOn(next.value.page, lastId);
    if (pager.seen >= plan.wanted) break;
  }
  if (result === undefined) return undefined;
  // An answer that could not be read as it arrived was read whole: its rows go out now.
  if (result.copy !== undefined || result.records.length > 0) {
    const page = plan.pageOf(result);
    lastId = page.lastId;
    yield pager.handOn(page.batch, lastId);
  }
  return pager.following(fetched(plan, current.stretch, result, { rows: pager.seen - from, lastId }), 0);
}

/** Stops reading a streamed page whose rows are not wanted, its answer's connection let go. */
async function letGo(page: Streaming): Promise<void> {
  await page.pages.return(undefined as unknown as SearchResult);
  // A page never started never read its body, which would hold the connection (and CKAN writing
  // to it) until the export ends; a started one's reader was cancelled by `return` (and locks it).
  const response = await page.opened.catch(() => undefined);
  if (response?.body?.locked === false) await response.body.cancel().catch(() => {});
}

/**
 * A page asked from the table's end (from-end.ts): held as it arrives, then, if it follows on from
 * the last row handed on, handed on reversed; otherwise asked again by offset (`turnAround`).
 * Returns as `streamingPage` does.
 */
async function* fromEndPage(
  pager: Pager,
  current: Streaming,
  held: HeldPage,
): AsyncGenerator<Batch, boolean | undefined, undefined> {
  const { plan } = pager;
  // Estimated before it was asked: rows wider than the pages before them may pass that.
  const room = 1.5 * heldRoom();
  let result: SearchResult | undefined;
  let largest: number | undefined;
  try {
    for (;;) {
      const next = await current.pages.next();
      if (next.done) {
        result = next.value;
        break;
      }
      held.hold(next.value);
      paging.set(plan, Date.now());
      if (held.bytes > room) break;
    }
    // An answer that could not be read as it arrived was read whole.
    if (result?.copy !== undefined) held.hold(result.copy());
    largest = result === undefined ? undefined : held.follows(plan.position.lastId, current.stretch.count);
    if (result === undefined || largest === undefined) {
      if (result === undefined) await letGo(current);
      held.drop();
      pager.turnAround(current.stretch);
      return false;
    }
    for (const { batch, lastId } of held.inOrder()) {
      yield pager.handOn(batch, lastId);
      if (pager.seen >= plan.wanted) return undefined;
    }
  } finally {
    held.drop();
  }
  return pager.following(fetched(plan, current.stretch, result, { rows: current.stretch.count, lastId: largest }), 0);
}

/**
 * The one paging loop: stretches planned ahead, `window` of them in flight, yielded strictly in
 * table order; what is left of a stretch is fetched next, ahead of the others. The end is found by
 * counting rows, never by trusting `_links`, a page's size or CKAN's count.
 */
export async function* readPages(plan: PagePlan): AsyncGenerator<Batch, void, undefined> {
  let current: Fetched | Streaming = firstFetched(plan);
  const pager = new Pager(plan, batchRows(plan.firstRows));
  try {
    for (;;) {
      paging.set(plan, Date.now());
      const last = "pages" in current ? yield* streamingPage(pager, current) : yield* wholePage(pager, current);
      if (last === undefined) return;
      if (!last && pager.planner === undefined) {
        pager.planner = await plan.stretches;
        pager.fill();
      }
      const next = pager.next();
      if (last || next === undefined) return;
      await pager.send();
      const pending = await next;
      current = typeof pending === "function" ? pending() : pending;
    }
  } finally {
    paging.delete(plan);
    pager.inflight.length = 0;
    plan.stop.abort();
  }
}
