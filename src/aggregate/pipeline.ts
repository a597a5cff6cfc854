import { admitExport } from "../ckan/page-budget.ts";
import type { CkanSite } from "../ckan/site.ts";
import type { Table } from "../ckan/table.ts";
import type { Config } from "../config/config.ts";
import { streamTable, type ExportProgress, type OpenExport } from "../export/pipeline.ts";
import type { Column, Row } from "../rows/types.ts";
import { sortRows } from "./order.ts";
import { planAggregate, type AggregatePlan } from "./plan.ts";
import type { AggregateQuery } from "./query.ts";
import { aggregateInSql } from "./sql-path.ts";
import { aggregateInWorker, tableColumns } from "./worker.ts";

/** Who computed an aggregate: CKAN's PostgreSQL (`datastore_search_sql`) or this worker from pages. */
export type AggregatedBy = "worker" | "ckan-sql";

export interface AggregateResult {
  columns: Column[];
  /** The groups kept (sorted, then `offset` and `limit` applied). */
  rows: Row[];
  /** Groups before `offset` and `limit` (X-Total-Count), when known. */
  groups: number | undefined;
  by: AggregatedBy;
  /** Why the worker computed it on a site with SQL search, for the request log. */
  why?: string;
}

/** The groups in the link's order, then its offset and limit. */
function kept(rows: Row[], plan: AggregatePlan, query: AggregateQuery): Row[] {
  const { sort, offset, limit } = query.aggregate;
  const sorted = sortRows(rows, plan, sort);
  return offset === 0 && limit === undefined
    ? sorted
    : sorted.slice(offset, limit === undefined ? undefined : offset + limit);
}

/** Checks the aggregate against the table's columns: every 400 of a name or type, after one request for no rows. */
export async function planFor(
  query: AggregateQuery,
  site: CkanSite,
  signal?: AbortSignal,
): Promise<{ plan: AggregatePlan; columns: Column[] }> {
  const columns = await tableColumns(site, query.resourceId, signal);
  return { plan: planAggregate(query.aggregate, columns), columns };
}

/**
 * The aggregate's result rows: by the site's PostgreSQL where `datastore_search_sql` is on (see
 * sql-path.ts), else (or when that fails) by the worker from the rows' pages.
 */
export async function computeAggregate(
  query: AggregateQuery,
  config: Config,
  site: CkanSite,
  signal: AbortSignal,
): Promise<AggregateResult> {
  const { plan, columns } = await planFor(query, site, signal);
  const viaSql = await aggregateInSql(query, plan, columns, config, site, signal);
  if (viaSql.rows !== undefined)
    return { columns: plan.columns, rows: viaSql.rows, groups: viaSql.groups, by: "ckan-sql" };
  const why = viaSql.why;
  const folded = await aggregateInWorker(query, plan, config, site, signal);
  const rows = kept(folded.rows, plan, query);
  return {
    columns: plan.columns,
    rows,
    groups: folded.rows.length,
    by: "worker",
    ...(why === undefined ? {} : { why }),
  };
}

/** An aggregate's rows as a table the export encoders write: one batch, already in memory. */
export function resultTable(result: AggregateResult): Table {
  async function* pages(): AsyncGenerator<Row[], void, undefined> {
    if (result.rows.length > 0) yield result.rows;
  }
  const rows = result.rows.length;
  return {
    columns: result.columns,
    total: result.groups,
    expectedRows: rows,
    firstPageRows: rows,
    pages: pages(),
    resumeAt: () => ({ rows, afterId: undefined, total: result.groups, estimated: false }),
  };
}

/**
 * The aggregate pipeline up to bytes, for every sink: the whole result is computed before the first
 * byte (a group is final only after the last row), so any failure is an error status, never a
 * cut-off file. Counts as one of the isolate's exports while it runs.
 */
export async function openAggregate(
  query: AggregateQuery,
  config: Config,
  site: CkanSite,
  onDone?: (progress: ExportProgress) => void,
): Promise<OpenExport> {
  const admission = admitExport();
  const abort = new AbortController();
  let result: AggregateResult;
  try {
    result = await computeAggregate(query, config, site, abort.signal);
  } catch (error) {
    admission.release();
    throw error;
  }
  const opened = await streamTable(query, config, resultTable(result), admission, abort, site.client.redact, onDone);
  return { ...opened, headers: { "x-aggregated-by": result.by } };
}

/**
 * What GET would answer, without computing it (HEAD): the columns checked, one request for no rows;
 * who would compute it as far as this isolate knows the site.
 */
export async function describeAggregate(
  query: AggregateQuery,
  _config: Config,
  site: CkanSite,
): Promise<{ total: undefined; headers: Record<string, string> }> {
  await planFor(query, site);
  return { total: undefined, headers: { "x-aggregated-by": site.facts.sqlSearch === true ? "ckan-sql" : "worker" } };
}
