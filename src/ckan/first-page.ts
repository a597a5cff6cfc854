import type { TableQuery } from "../query/table-query.ts";
import { fetchFirstPage, keysetByVersion, type FirstPage } from "./keyset-probe.ts";
import { explainRefusal } from "./refusals.ts";
import { firstFormat, requestedFields } from "./requests.ts";
import type { CkanSite } from "./site.ts";
import type { SearchRequest } from "./types.ts";

/** Where an export picks up again (see table.ts's Resume): the rows done, and the last one's `_id`. */
interface Resumed {
  rows: number;
  afterId: number | undefined;
}

/**
 * An export's first page, asked for `limit` rows with CKAN's count: on a site that may page by
 * keyset, asked that way too (keyset-probe.ts); going on from `resume`, after its last `_id` or at
 * its offset, never counted again. CKAN's refusal is said in the link's terms (refusals.ts).
 */
export async function openFirstPage(
  site: CkanSite,
  base: SearchRequest,
  query: TableQuery,
  resume: Resumed | undefined,
  limit: number,
  signal: AbortSignal,
): Promise<FirstPage> {
  const fields = { plain: requestedFields(query, false), withId: requestedFields(query, true) };
  const recordsFormat = firstFormat(query);
  // next_page is a filter on `_id`, so it only works in `_id` order and beside no `_id` filter of the user's.
  const byIdPossible = idOrdered(query);
  const keysetPossible = byIdPossible && site.mayUseKeyset;
  // Later pages go on after the first page's last `_id`, by range or by list (see idPagingOf).
  const body = (keyset: boolean): SearchRequest => ({
    ...base,
    ...(keyset || byIdPossible ? fields.withId : fields.plain),
    records_format: recordsFormat,
    limit,
    offset: query.offset,
    include_total: true,
    ...(keyset ? { include_next_page: true } : {}),
  });
  const opening =
    resume === undefined
      ? fetchFirstPage(site, keysetPossible ? body(true) : undefined, body(false), signal)
      : resumedPage(site, query, resume, body(false), fields.withId, signal);
  return await opening.catch((error: unknown) => {
    throw explainRefusal(error, query, site.rangeFilters === false);
  });
}

/** An export in `_id` order with no `_id` filter of the user's: its pages can go by `_id`. */
const idOrdered = (query: TableQuery): boolean => query.sort === undefined && !("_id" in query.filters);

/**
 * How an export's later pages go by `_id`, once its first page is in: by range filters where the
 * first page was asked by keyset (CKAN 2.12), by lists of `_id`s where the site is known to have
 * no range filters (an older CKAN: it refused keyset paging, or its version says so), by offset
 * (undefined) otherwise.
 */
export function idPagingOf(site: CkanSite, query: TableQuery, keyset: boolean): "ranges" | "lists" | undefined {
  if (keyset) return "ranges";
  if (!idOrdered(query)) return undefined;
  return site.rangeFilters === false || keysetByVersion(site.facts.version) === false ? "lists" : undefined;
}

/**
 * The first page of an export that goes on from `resume`: after its last `_id` (a range filter, so
 * CKAN 2.12, which the run's first page already found), or at its offset; never counted again.
 */
async function resumedPage(
  site: CkanSite,
  query: TableQuery,
  resume: Resumed,
  plain: SearchRequest,
  withId: { fields?: string[] },
  signal: AbortSignal,
): Promise<FirstPage> {
  const keyset = resume.afterId !== undefined;
  const body: SearchRequest = keyset
    ? {
        ...plain,
        ...withId,
        offset: 0,
        filters: { ...query.filters, _id: { gt: resume.afterId! } },
        include_total: false,
      }
    : { ...plain, offset: query.offset + resume.rows, include_total: false };
  return { result: await site.client.search(body, signal), keyset };
}
