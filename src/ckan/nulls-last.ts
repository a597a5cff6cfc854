import type { SortKey } from "../query/sort.ts";
import type { CkanClient } from "./client.ts";
import { CkanValidationError } from "./error-answers.ts";
import type { PageSizer } from "./page-budget.ts";
import type { StretchPlanner } from "./paging.ts";
import type { SearchRequest, SearchResult } from "./types.ts";

// `sort=amount desc nulls last` (or `amount nulls first`): CKAN takes no NULLS clause, and PostgreSQL
// puts nulls first descending, last ascending. CKAN's order (its sort, ended by `_id`) is therefore
// the moved rows first (nulls, for `desc nulls last`), then the rest; the export reads the rest,
// then the moved rows, both by offset in that one order. Neither needs a filter for nulls (CKAN has
// none: `{"amount": null}` is `= NULL`, true of no row), so every version from 2.10 on serves it,
// every row exactly once, in the user's order, with limit and offset counted over the whole.

/** Rows `[offset, offset + count)` of CKAN's order. */
export interface Segment {
  offset: number;
  count: number;
}

/** CKAN's order split in two: how many rows lead it that go last, of how many matching in all. */
export interface NullSplit {
  moved: number;
  rows: number;
  /** Requests the split took: they count against the export's subrequest budget. */
  requests: number;
}

/** Cells per probe: one column's, so a probe stays small while most tables show their split in the first. */
const PROBE_ROWS = 2000;

/**
 * Finds the split by asking only the sort column, a page of cells at a time: from the start first,
 * then by halving when that page does not show where the moved rows end. The row count is CKAN's
 * when exact (`total_was_estimated: false` before 2.12; a filtered or searched count on 2.12), and
 * otherwise checked around the count CKAN gives (2.12 counts an unfiltered table from a cache that
 * can lag behind).
 */
export async function splitAtNulls(
  client: CkanClient,
  request: SearchRequest,
  key: SortKey,
  signal: AbortSignal,
): Promise<NullSplit> {
  let requests = 0;
  // Rows a probe holds: fewer when the site caps pages lower (rows_max); a shorter probe is the table's end.
  let page = PROBE_ROWS;
  const base = { ...request, fields: [key.column], records_format: "lists" as const };
  const cells = async (offset: number, withTotal = false): Promise<{ result: SearchResult; values: string[] }> => {
    requests++;
    const result = await client
      .search({ ...base, offset, limit: PROBE_ROWS, include_total: withTotal }, signal)
      .catch((error: unknown) => {
        // The probe's `fields` is the sort column: CKAN refusing it refuses the link's `sort`.
        if (error instanceof CkanValidationError && error.parameter === "fields")
          throw new CkanValidationError(error.status, error.message, error.fields, "sort");
        throw error;
      });
    const records = typeof result.records === "string" ? [] : result.records;
    return {
      result,
      values: records.map((record) => (Array.isArray(record) ? record[0] : record[key.column]) ?? "null"),
    };
  };
  // The moved rows: nulls when they go last (CKAN puts them first descending), values when nulls go first.
  const isMoved = (raw: string): boolean => (raw === "null") === (key.nulls === "last");
  /** Where in a page of cells from `offset` the moved rows end (the table's end counts): undefined, past it. */
  const movedEnd = (values: string[]): number | undefined => {
    const stays = values.findIndex((value) => !isMoved(value));
    return stays >= 0 ? stays : values.length < page ? values.length : undefined;
  };

  const first = await cells(0, true);
  if (typeof first.result.limit === "number" && first.result.limit > 0) page = Math.min(page, first.result.limit);
  if (first.values.length < page) return { moved: movedEnd(first.values)!, rows: first.values.length, requests };
  const total = typeof first.result.total === "number" ? first.result.total : page;
  const counted =
    first.result.total_was_estimated === false || request.filters !== undefined || request.q !== undefined;
  const rowsEnd = async (offset: number): Promise<number | undefined> => {
    const { values } = await cells(offset);
    return values.length < page ? values.length : undefined;
  };
  const rows = counted
    ? Math.max(total, page)
    : await boundary(page, page, Number.POSITIVE_INFINITY, total - 1, rowsEnd);
  const moved =
    movedEnd(first.values) ??
    (await boundary(page, page, rows, undefined, async (offset) => movedEnd((await cells(offset)).values)));
  return { moved, rows, requests };
}

/**
 * The offset in [low, high] where a property that holds up to it stops holding, found `page` rows at a
 * time: `look(offset)` says where in the page from `offset` it stops (0: at or before `offset`),
 * undefined when it holds on the whole page. Tried first at `guess`, then by doubling past `low`
 * while there is no upper end, then by halving.
 */
async function boundary(
  page: number,
  low: number,
  high: number,
  guess: number | undefined,
  look: (offset: number) => Promise<number | undefined>,
): Promise<number> {
  let offset = Math.max(low, guess ?? Math.floor((low + high - page) / 2));
  let step = page;
  for (;;) {
    const stops = await look(offset);
    if (stops !== undefined && stops > 0) return offset + stops;
    if (stops === 0) high = offset;
    else low = offset + page;
    if (low >= high) return high;
    if (high === Number.POSITIVE_INFINITY) {
      offset = low + step;
      step *= 2;
    } else {
      offset = Math.max(low, Math.floor((low + high - page) / 2));
    }
  }
}

/**
 * The stretches of CKAN's order that give the user's rows from `offset` on: the rows that stay
 * (after the moved ones), then the moved ones, skipping `offset` rows across both.
 */
export function segmentsFrom(split: NullSplit, offset: number): Segment[] {
  const stays = split.rows - split.moved;
  const segments =
    offset < stays
      ? [
          { offset: split.moved + offset, count: stays - offset },
          { offset: 0, count: split.moved },
        ]
      : [{ offset: offset - stays, count: split.moved - (offset - stays) }];
  return segments.filter((segment) => segment.count > 0);
}

/**
 * Offset stretches through the segments in turn, `planned` rows counted from the first segment's
 * start (the first page included); never across a segment's end. The counts are exact, so stretches
 * go side by side.
 */
export function segmentStretches(segments: Segment[], wanted: number, sizer: PageSizer): StretchPlanner {
  return (planned) => {
    let into = planned;
    for (const segment of segments) {
      if (into < segment.count) {
        const count = Math.min(sizer.rows, segment.count - into, wanted - planned);
        return count > 0 ? { offset: segment.offset + into, count } : undefined;
      }
      into -= segment.count;
    }
    return undefined;
  };
}
