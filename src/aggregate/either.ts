import type { CkanSite } from "../ckan/site.ts";
import type { Resume } from "../ckan/table.ts";
import type { Config } from "../config/config.ts";
import { encodeTable } from "../export/byte-stream.ts";
import { openExport, openExportPart, type ExportPart, type OpenExport } from "../export/pipeline.ts";
import { encoderFor } from "../format/index.ts";
import type { EncoderCarry } from "../format/types.ts";
import type { ExportQuery } from "../query/export-query.ts";
import type { AggregateQuery } from "./query.ts";
import { computeAggregate, resultTable, openAggregate } from "./pipeline.ts";

// A sink that writes what a query asks for (a snapshot job: rows, or an aggregate's groups) calls
// these instead of the export's own, and needs to know nothing else of aggregates.

export const isAggregate = (query: ExportQuery): query is AggregateQuery => "aggregate" in query;

/** openExport, or the aggregate's pipeline for an aggregate query. */
export const openQuery = (query: ExportQuery, config: Config, site: CkanSite): Promise<OpenExport> =>
  isAggregate(query) ? openAggregate(query, config, site) : openExport(query, config, site);

/**
 * openExportPart, or for an aggregate its whole file as one part: the groups are computed before
 * the first byte and are few, so the first part is the last.
 */
export async function openQueryPart(
  query: ExportQuery,
  config: Config,
  site: CkanSite,
  resume: Resume | undefined,
  full: () => boolean,
  carried?: EncoderCarry,
): Promise<ExportPart> {
  if (!isAggregate(query)) return openExportPart(query, config, site, resume, full, carried);
  const result = await computeAggregate(query, config, site, new AbortController().signal);
  const table = resultTable(result);
  const progress = { rows: 0, chars: 0 };
  const chunks = encodeTable(table, encoderFor(query, table.columns), progress);
  return {
    chunks,
    progress,
    ended: () => true,
    resumeAt: () => table.resumeAt(),
    carried: () => null,
    columns: table.columns,
  };
}
