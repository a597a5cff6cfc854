import type { Config } from "../config/config.ts";
import { BadParameter } from "../errors.ts";
import { parseExportQuery, type ExportQuery, type QueryConfig } from "../query/export-query.ts";
import type { FormatName } from "../query/formats.ts";
import { checkNames, count, single } from "../query/parameter.ts";
import { AGGREGATE_PARAMETERS, parametersOf, TABLE_PARAMETERS } from "../query/params.ts";
import { rowLimitOf } from "../query/row-limit.ts";
import { parseAggregateSpec, type AggregateSpec } from "./spec.ts";

/**
 * A validated aggregate link: the rows it reads are an export's (resource, q, filters; every row,
 * in no particular order), written as an export is (format, CSV options, errors, header, filename),
 * plus what to compute and which groups to keep.
 */
export type AggregateQuery = ExportQuery & {
  aggregate: AggregateSpec & {
    /** Most groups to keep, after sorting. */
    limit: number | undefined;
    offset: number;
  };
};

/** Parameters of an aggregate that an export reads differently or not at all: parsed here, not by the export parser. */
const OWN = new Set(["group_by", "measures", "sort", "limit", "offset"]);

/** `limit` on an aggregate counts groups, up to MAX_GROUPS. */
const groupLimit = (maxGroups: number) =>
  count({
    ...TABLE_PARAMETERS.limit,
    max: () => maxGroups,
    above: (given) => `limit=${given} is more groups than an aggregate keeps (MAX_GROUPS, ${maxGroups}).`,
  });

/** `/aggregate.<format>?...` to a validated query: every 400 names its parameter, before any upstream request. */
export function parseAggregateQuery(
  params: URLSearchParams,
  format: FormatName,
  config: QueryConfig & Pick<Config, "maxGroups">,
): AggregateQuery {
  if (params.has("fields")) {
    throw new BadParameter(
      "fields",
      "Parameter fields is for exports: an aggregate's columns are its group_by columns, then its measures.",
    );
  }
  checkNames(params, parametersOf("aggregate"), format);
  const context = { format, params, rowLimit: rowLimitOf(format, config.maxRows) };
  const spec = parseAggregateSpec(
    AGGREGATE_PARAMETERS.group_by.read(single(params, "group_by")),
    AGGREGATE_PARAMETERS.measures.read(single(params, "measures")),
    TABLE_PARAMETERS.sort.read(single(params, "sort")),
  );
  const limit = groupLimit(config.maxGroups).read(single(params, "limit"), context);
  const offset = TABLE_PARAMETERS.offset.read(single(params, "offset"), context);
  // The rest is an export's: resource, q, filters, CSV options, errors, header, filename.
  const rest = new URLSearchParams([...params].filter(([name]) => !OWN.has(name)));
  const rows = parseExportQuery(rest, format, config);
  return { ...rows, aggregate: { ...spec, limit, offset } };
}
