import { outputColumns } from "../ckan/columns.ts";
import { fetchFirstPage } from "../ckan/keyset-probe.ts";
import type { CkanSite } from "../ckan/site.ts";
import { openTable } from "../ckan/table.ts";
import type { SearchRequest } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import { rowLimitOf } from "../query/row-limit.ts";
import type { Column, Row } from "../rows/types.ts";
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

export async function aggregateInWorker(query: AggregateQuery, plan: AggregatePlan, config: Config, site: CkanSite, signal: AbortSignal): Promise<Folded> {
  // `count` alone reads only `_id`: the smallest column there is.
  const fields = plan.read.length === 0 ? ["_id"] : plan.read.map((c) => c.id);
  const table = await openTable(
    site,
    { resourceId: query.resourceId, q: query.q, filters: query.filters, limit: undefined, offset: 0, fields, sort: undefined },
    { pageSize: config.pageSize, rowLimit: rowLimitOf("csv", config.maxRows), subrequestLimit: config.subrequestLimit, concurrency: config.upstreamConcurrency, signal },
  );
  const groups = new GroupTable(plan, config.maxGroups);
  try {
    for await (const batch of table.pages) {
      // Without a pass-through reader every page comes as rows.
      if (Array.isArray(batch)) groups.addRows(batch);
    }
  } finally {
    await table.pages.return();
  }
  return { rows: groups.results(), read: groups.rows };
}
