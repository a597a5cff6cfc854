import type { Config } from "../config/config.ts";
import { badRequest, clip } from "../errors.ts";
import { checkLength, parseExportQuery, single, wholeNumber, type ExportQuery } from "../query/export-query.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import { AGGREGATE_NAMES, BOUNDS, LINK_NAMES } from "../query/params.ts";
import { parseAggregateSpec, type AggregateSpec } from "./spec.ts";

/**
 * A validated aggregate link: the rows it reads are an export's (resource, q, filters; every row,
 * in no particular order), written as an export is (format, CSV options, errors, header, filename),
 * plus what to compute and which groups to keep.
 */
export interface AggregateQuery extends ExportQuery {
  aggregate: AggregateSpec & {
    /** Most groups to keep, after sorting. */
    limit: number | undefined;
    offset: number;
  };
}

/** Parameters of an aggregate that an export reads differently or not at all: parsed here, not by the export parser. */
const OWN = ["group_by", "measures", "sort", "limit", "offset"];

function checkNames(params: URLSearchParams, format: FormatName): void {
  const allowed = new Set<string>([...AGGREGATE_NAMES, ...FORMATS[format].params, ...LINK_NAMES]);
  for (const name of new Set(params.keys())) {
    if (name.startsWith("_") || name.startsWith("filter.") || allowed.has(name)) continue;
    if (name === "fields") {
      throw badRequest("fields", "Parameter fields is for exports: an aggregate's columns are its group_by columns, then its measures.");
    }
    const otherFormats = Object.keys(FORMATS).filter((f) => (FORMATS[f as FormatName].params as readonly string[]).includes(name));
    if (otherFormats.length > 0) throw badRequest(name, `Parameter ${name} does not apply to ${format} (it is for ${otherFormats.join(" and ")}).`);
    throw badRequest(name, `Unknown parameter ${clip(name)}. Known parameters of aggregates: ${[...allowed].filter((n) => !LINK_NAMES.includes(n)).join(", ")}, filter.<field>.`);
  }
}

/** `/aggregate.<format>?...` to a validated query: every 400 names its parameter, before any upstream request. */
export function parseAggregateQuery(params: URLSearchParams, format: FormatName, config: Config): AggregateQuery {
  checkNames(params, format);
  const sort = single(params, "sort");
  checkLength("sort", sort, BOUNDS.sort);
  const groupBy = single(params, "group_by");
  const measures = single(params, "measures");
  checkLength("group_by", groupBy, BOUNDS.sort);
  checkLength("measures", measures, BOUNDS.sort);
  const spec = parseAggregateSpec(groupBy, measures, sort);
  const limit = wholeNumber("limit", single(params, "limit"), config.maxGroups, (text) => `limit=${text} is more groups than an aggregate keeps (MAX_GROUPS, ${config.maxGroups}).`);
  const offset = wholeNumber("offset", single(params, "offset"), Number.MAX_SAFE_INTEGER, (text) => `offset=${text} is above the largest offset this worker handles.`) ?? 0;
  // The rest is an export's: resource, q, filters, CSV options, errors, header, filename.
  const rest = new URLSearchParams([...params].filter(([name]) => !OWN.includes(name)));
  const rows = parseExportQuery(rest, format, config);
  return { ...rows, aggregate: { ...spec, limit, offset } };
}
