import type { CkanSite } from "../ckan/site.ts";
import { searchSql } from "../ckan/sql-search.ts";
import type { Config } from "../config/config.ts";
import type { Column, Row } from "../rows/types.ts";
import type { AggregatePlan } from "./plan.ts";
import type { AggregateQuery } from "./query.ts";
import { tooManyGroups } from "./groups.ts";
import { type AggregateStatement, aggregateStatement } from "./sql.ts";

/** CKAN wraps every statement in `LIMIT 32001` (rows_max + 1) and cuts the answer at 32,000 records. */
const SQL_ROWS_MAX = 32000;

/** Asks the statement of an aggregate query, if it has one. */
type Ask = (
  query: AggregateQuery,
) => Promise<{ statement: AggregateStatement; answer: Awaited<ReturnType<typeof searchSql>> } | undefined>;

export interface SqlOutcome {
  /** The groups (sorted, offset and limit applied by PostgreSQL), or undefined: the worker computes them. */
  rows: Row[] | undefined;
  /** How many groups there are before offset and limit. */
  groups?: number | undefined;
  /** Why the worker computes them, for the request log. */
  why?: string;
}

/**
 * The aggregate through the site's own PostgreSQL, where `datastore_search_sql` is on: one request,
 * no rows on the wire. Any failure (SQL search off, a function the site's allow-list refuses, more
 * groups than one answer holds) leaves it to the worker, which computes the same rows. More groups
 * than MAX_GROUPS are refused as the worker refuses them, whatever the limit: a link gives the same
 * answer on every portal.
 */
export async function aggregateInSql(
  query: AggregateQuery,
  plan: AggregatePlan,
  columns: Column[],
  config: Config,
  site: CkanSite,
  signal: AbortSignal,
): Promise<SqlOutcome> {
  const ask: Ask = async (asked) => {
    const statement = aggregateStatement(asked, plan, {
      columns,
      before212: site.rangeFilters === false,
      maxGroups: config.maxGroups,
    });
    if (statement === undefined) return undefined;
    // Its requests (retries included) come out of the budget the worker's own pages would use.
    return { statement, answer: await searchSql(site, statement.sql, signal, config.subrequestLimit) };
  };
  const asked = await ask(query);
  if (asked === undefined) return { rows: undefined, why: "not expressible in SQL exactly as the worker computes it" };
  const { statement, answer } = asked;
  if (!answer.ok) return { rows: undefined, why: answer.why };
  if (answer.truncated || answer.records.length > SQL_ROWS_MAX)
    return { rows: undefined, why: "more groups than one datastore_search_sql answer holds" };
  const first = answer.records[0];
  // No group at all, or an offset past the last: the groups are counted by a statement that skips none.
  const groups =
    first !== undefined ? statement.groups(first) : query.aggregate.offset === 0 ? 0 : await countGroups(query, ask);
  if (groups !== undefined && groups > config.maxGroups) throw tooManyGroups(config.maxGroups);
  return { rows: answer.records.map(statement.row), groups };
}

/** The number of groups of `query`, asked as its first group alone. */
async function countGroups(query: AggregateQuery, ask: Ask): Promise<number | undefined> {
  const asked = await ask({ ...query, aggregate: { ...query.aggregate, offset: 0, limit: 1 } });
  if (asked === undefined || !asked.answer.ok) return undefined;
  const first = asked.answer.records[0];
  return first === undefined ? 0 : asked.statement.groups(first);
}
