import { outputColumns } from "../ckan/columns.ts";
import { fetchFirstPage } from "../ckan/keyset-probe.ts";
import type { CkanSite } from "../ckan/site.ts";
import { openTable } from "../ckan/table.ts";
import type { SearchRequest } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import { HttpError, RowLimitExceeded, SubrequestBudgetExceeded } from "../errors.ts";
import { rowLimitOf } from "../query/row-limit.ts";
import type { Column, Row } from "../rows/types.ts";
import { csvPages } from "./csv-pages.ts";
import { GroupTable } from "./groups.ts";
import type { AggregatePlan } from "./plan.ts";
import type { AggregateQuery } from "./query.ts";

// The aggregate computed by the worker: the rows the link's search matches, read through the
// export's own paging (keyset where the site has it) with only the columns the aggregate needs,
// folded into groups page by page. A page is let go once folded: memory holds the groups.

/**
 * The table's columns (CKAN's bookkeeping ones left out): one request for no rows. Asked as an
 * export's first page is, so a site met for the first time also tells whether it is CKAN 2.12
 * (keyset paging), which decides how its timestamps are written.
 */
export async function tableColumns(site: CkanSite, resourceId: string, signal?: AbortSignal): Promise<Column[]> {
  const plain: SearchRequest = { resource_id: resourceId, limit: 0, include_total: false };
  const keyset = site.mayUseKeyset ? { ...plain, include_next_page: true } : undefined;
  const { result } = await fetchFirstPage(site, keyset, plain, signal ?? new AbortController().signal);
  return outputColumns({ fields: undefined }, result.fields);
}

export interface Folded {
  rows: Row[];
  /** Rows read from CKAN. */
  read: number;
}

export async function aggregateInWorker(
  query: AggregateQuery,
  plan: AggregatePlan,
  config: Config,
  site: CkanSite,
  signal: AbortSignal,
): Promise<Folded> {
  // `count` alone reads only `_id`: the smallest column there is.
  const fields = plan.read.length === 0 ? ["_id"] : plan.read.map((c) => c.id);
  const groups = new GroupTable(plan, config.maxGroups);
  const pages = csvPages((row) => groups.addCsvRow(row));
  try {
    // The rows read count against MAX_ROWS whatever the format: only the groups are written.
    const table = await openTable(
      site,
      {
        resourceId: query.resourceId,
        q: query.q,
        filters: query.filters,
        limit: undefined,
        offset: 0,
        fields,
        sort: undefined,
      },
      {
        pageSize: config.pageSize,
        rowLimit: rowLimitOf("csv", config.maxRows),
        // The requests made already (the columns, a statement tried through SQL) come out of the same budget.
        subrequestLimit: config.subrequestLimit - site.client.stats.requests,
        concurrency: config.upstreamConcurrency,
        signal,
        ...(config.csvPassthrough ? { passthrough: pages.passthrough } : {}),
      },
    );
    try {
      for await (const batch of table.pages) {
        // The first page comes as rows; later ones as CSV, folded by csvPages as they were read.
        if (Array.isArray(batch)) groups.addRows(batch);
        else groups.endPage();
      }
    } finally {
      await table.pages.return();
    }
  } catch (error) {
    throw readLimit(error, config);
  }
  return { rows: groups.results(), read: groups.rows };
}

/** An export's limits said for an aggregate: its `limit` is of groups, so the way out is fewer rows. */
function readLimit(error: unknown, config: Config): unknown {
  if (error instanceof RowLimitExceeded) {
    return new HttpError(
      400,
      `More than ${config.maxRows} rows match: the worker reads at most MAX_ROWS rows for one aggregate. Narrow the rows with filters or q (on a portal with datastore_search_sql on, PostgreSQL computes it whatever the rows).`,
      { parameter: "filters", setting: "MAX_ROWS", cause: error },
    );
  }
  if (error instanceof SubrequestBudgetExceeded) {
    return new HttpError(
      400,
      `Reading these rows needs more requests to CKAN than one request to this worker may make (SUBREQUEST_LIMIT). Narrow the rows with filters or q.`,
      { parameter: "filters", setting: "SUBREQUEST_LIMIT", cause: error },
    );
  }
  return error;
}
