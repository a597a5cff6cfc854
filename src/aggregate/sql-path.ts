import type { CkanSite } from "../ckan/site.ts";
import { searchSql } from "../ckan/sql-search.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import type { Column, Row } from "../rows/types.ts";
import type { AggregatePlan } from "./plan.ts";
import type { AggregateQuery } from "./query.ts";
import { aggregateStatement } from "./sql.ts";

/** CKAN wraps every statement in `LIMIT 32001` (rows_max + 1) and cuts the answer at 32,000 records. */
const SQL_ROWS_MAX = 32000;

export interface SqlOutcome {
  /** The groups (sorted, offset and limit applied by PostgreSQL), or undefined: the worker computes them. */
  rows: Row[] | undefined;
  /** Why the worker computes them, for the request log. */
  why?: string;
}

/**
 * The aggregate through the site's own PostgreSQL, where `datastore_search_sql` is on: one request,
 * no rows on the wire. Any failure (SQL search off, a function the site's allow-list refuses, more
 * groups than one answer holds) leaves it to the worker, which computes the same rows.
 */
export async function aggregateInSql(
  query: AggregateQuery,
  plan: AggregatePlan,
  columns: Column[],
  config: Config,
  site: CkanSite,
  // Unused since the statement goes through the site's client; kept while run.ts passes it.
  _fetcher: UpstreamFetch,
  signal: AbortSignal,
): Promise<SqlOutcome> {
  const statement = aggregateStatement(query, plan, {
    columns,
    before212: site.rangeFilters === false,
    maxGroups: config.maxGroups,
  });
  if (statement === undefined)
    return { rows: undefined, why: "not expressible in SQL exactly as the worker computes it" };
  // Its requests (retries included) come out of the budget the worker's own pages would use.
  const answer = await searchSql(site, statement.sql, signal, config.subrequestLimit);
  if (!answer.ok) return { rows: undefined, why: answer.why };
  if (answer.truncated || answer.records.length > SQL_ROWS_MAX)
    return { rows: undefined, why: "more groups than one datastore_search_sql answer holds" };
  if (query.aggregate.limit === undefined && answer.records.length > config.maxGroups)
    return { rows: undefined, why: "more than MAX_GROUPS groups" };
  return { rows: answer.records.map(statement.row) };
}
