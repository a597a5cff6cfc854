import type { CkanClient } from "./client.ts";
import type { PageSizer } from "./page-budget.ts";
import { segmentStretches, type Segment } from "./nulls-last.ts";
import { idListStretches, idStretches, offsetStretches, type StretchPlanner, type TailCheck } from "./paging.ts";
import { largestIdRequest, lastIdOf } from "./requests.ts";
import type { SearchRequest } from "./types.ts";

/**
 * How the pages after the first are asked for, chosen by name once the first page is in:
 * - `offset`: rows from an offset (CKAN before 2.12, a user's sort, or an `_id` among the user's
 *   fields), side by side when CKAN's count is exact, one at a time when it is an estimate;
 * - `id-ranges`: rows in `_id` ranges after the first page's last `_id` (CKAN 2.12's range filters:
 *   no deep offsets), side by side, sized by the table's density between there and its largest `_id`;
 * - `id-lists`: the same ranges for CKAN before 2.12, each asked as the list of its `_id`s (an SQL
 *   `IN`: no deep offsets either), where that costs CKAN less than offsets would (`listsPay`); offsets
 *   otherwise;
 * - `nulls-last`: offset stretches through segments of CKAN's order (nulls-last.ts: the rows that
 *   stay, then the nulls moved after them), side by side, their counts exact.
 */
export type PagingStrategy = "offset" | "id-ranges" | "id-lists" | "nulls-last";

/** What a strategy plans from: the export, its first page, and the counts judged from it. */
export interface PlanInput {
  client: CkanClient;
  /** The export's request (requests.ts's baseRequest), built once from its query. */
  base: SearchRequest;
  signal: AbortSignal;
  sizer: PageSizer;
  /** Rows wanted in all (the limit, or the row limit and one more). */
  wanted: number;
  /** Stretches the export may have in flight at once. */
  concurrency: number;
  /** Rows CKAN's count says are left after the rows done, when it counted. */
  available: number | undefined;
  /** CKAN's count is exact (not an estimate). */
  exact: boolean;
  /** Rows of the first page. */
  firstRows: number;
  /** Pages the subrequest check planned after the first. */
  pagesPlanned: number;
  /** `offset`: the offset of the first page's first row (0 after an `_id`: the filter holds the bound). */
  from: number;
  /** `id-ranges`: the first page's last `_id`. */
  after: number;
  /** `id-lists`: what CKAN charges per listed `_id`, in rows an offset re-reads (`listIdCost`). */
  listIdCost: number;
  /** Rows each page after the first will hold (limits.ts's `laterPageRows`). */
  pageRows: number;
  /**
   * CKAN's exact count (a site without range filters): past it, whether rows were added is asked by
   * counting again, beside the last pages, instead of asking one more page at the deepest offset.
   */
  countTail: number | undefined;
  /** `nulls-last`: the stretches of CKAN's order in the user's order, the first page at the first one's start. */
  segments?: Segment[];
}

/** The stretches to fetch after the first page, and how many in flight at once. */
export interface Plan {
  stretches: StretchPlanner | Promise<StretchPlanner>;
  window: number;
}

/** The first `_id` range's share of a page (see `id-ranges`). */
const FIRST_RANGE_SHARE = 0.5;

/** Below this share of `_id`s being rows, lists would ask mostly for `_id`s that are not there. */
const MIN_LIST_DENSITY = 0.5;

/**
 * What CKAN before 2.12 charges per `_id` a list names, in rows an offset re-reads: before it runs a
 * page, its Python checks the SQL text, one placeholder per `_id` (sqlparse), and 2.11 also renders
 * each `_id` as a literal (SQLAlchemy). Measured against the offset skip on one machine (PostgreSQL
 * 15 and CKAN's Python steps; bench/ckan/LIST-FILTER.md): 34 on 2.10, 87 on 2.11, which also stands
 * for a site whose version is not known.
 */
export function listIdCost(version: string | undefined): number {
  return version !== undefined && /^2\.10\b/.test(version) ? 34 : 87;
}

/**
 * Whether `_id` lists cost CKAN less than offsets for the rows after the first page: offset pages
 * re-read every row before them (in all, about the rows times their mean offset, over the page
 * size), lists pay per `_id` named (the rows over the density). So lists pay only for deep offsets:
 * past about 2 million rows on 2.10, 5.5 million on 2.11, in pages of 32,000.
 */
export function listsPay(
  input: Pick<PlanInput, "from" | "firstRows" | "listIdCost" | "pageRows">,
  rows: number,
  density: number,
): boolean {
  const meanOffset = input.from + input.firstRows + rows / 2;
  return density >= MIN_LIST_DENSITY && (rows * meanOffset) / input.pageRows > (rows / density) * input.listIdCost;
}

/** Offset stretches (see `offset`), with CKAN's count asked again past its end where it is exact (`countTail`). */
function offsetPlan(input: PlanInput): Plan {
  const { exact, available, wanted, sizer, countTail } = input;
  const tail: TailCheck | undefined =
    countTail === undefined ? undefined : { tail: { by: "count", total: countTail }, count: 0 };
  // An estimated total may be short: planning by it could stop early, so count instead.
  return {
    window: exact ? Math.max(1, input.concurrency) : 1,
    stretches: offsetStretches(input.from, exact ? Math.min(available!, wanted) : wanted, wanted, sizer, tail, exact),
  };
}

export const STRATEGIES: Record<PagingStrategy, (input: PlanInput) => Plan> = {
  offset: (input) => offsetPlan(input),
  "id-ranges": (input) => {
    const { after, wanted, sizer, pagesPlanned } = input;
    const window = Math.max(1, input.concurrency);
    // With one page left to fetch (or one in flight at a time), ranges side by side gain nothing: no probe.
    if (window === 1 || pagesPlanned <= 1)
      return { window, stretches: idStretches(after, undefined, 1, wanted, sizer, 0) };
    const rowsAfter = input.available === undefined ? undefined : Math.max(0, input.available - input.firstRows);
    const stretches = largestId(input.client, input.base, input.signal).then((largest) => {
      const density =
        largest === undefined || rowsAfter === undefined || largest <= after ? 1 : rowsAfter / (largest - after);
      // Ranges asked together share CKAN's cores and would come back together, CKAN then idle while
      // the worker writes the first: a first range of half a page comes back first, the others meanwhile.
      return idStretches(after, largest, density, wanted, sizer, Math.max(1, pagesPlanned), FIRST_RANGE_SHARE);
    });
    return { window, stretches };
  },
  "id-lists": (input) => {
    // Chosen (table.ts) where CKAN's count is exact and lists would pay were every `_id` a row; the
    // probe then tells how many are.
    const { after, wanted, sizer, available, firstRows } = input;
    if (input.pagesPlanned <= 1 || available === undefined) return offsetPlan(input);
    const rows = Math.max(0, Math.min(available, wanted) - firstRows);
    const rowsAfter = Math.max(0, available - firstRows);
    const stretches = largestId(input.client, input.base, input.signal).then((largest) => {
      const density = largest === undefined || largest <= after ? 0 : Math.min(1, rowsAfter / (largest - after));
      if (largest === undefined || !listsPay(input, rows, density)) return offsetPlan(input).stretches;
      return idListStretches(after, largest, density, wanted, sizer, FIRST_RANGE_SHARE, {
        tail: { by: "largest" },
        count: 0,
      });
    });
    return { window: Math.max(1, input.concurrency), stretches };
  },
  "nulls-last": (input) => ({
    window: Math.max(1, input.concurrency),
    stretches: segmentStretches(input.segments ?? [], input.wanted, input.sizer),
  }),
};

/** The largest `_id` the export's search matches: one cheap request, the far end of the `_id` ranges. */
async function largestId(client: CkanClient, base: SearchRequest, signal: AbortSignal): Promise<number | undefined> {
  try {
    return lastIdOf(await client.search(largestIdRequest(base), signal));
  } catch {
    // Without it (or once the export has stopped), one open-ended range: sequential, and still every row.
    return undefined;
  }
}
