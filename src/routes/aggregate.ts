import { describeAggregate, openAggregate } from "../aggregate/pipeline.ts";
import { parseAggregateQuery, type AggregateQuery } from "../aggregate/query.ts";
import type { Config } from "../config/config.ts";
import { serveExport, type Pipeline } from "../http/export-route.ts";
import { FORMATS, type FormatName } from "../query/formats.ts";
import { parametersFor } from "../query/params.ts";
import { answerInline, EXPORT_CACHE, formatOf, named, sinkDeps } from "./exports.ts";
import { errors, queryParameter, type Json, type Operations } from "./openapi-parts.ts";
import type { Route } from "./route.ts";

/** Aggregates: the same link handling as exports, another computation between link and bytes. */
const aggregatesWith = (config: Config): Pipeline<AggregateQuery> => ({
  open: (query, site, onDone) => openAggregate(query, config, site, onDone),
  describe: (query, site) => describeAggregate(query, config, site),
});

function aggregateOperation(format: FormatName, method: "get" | "head"): Json {
  const { contentType } = FORMATS[format];
  const body = format === "json" ? { type: "array", items: { type: "object" } } : { type: "string" };
  return {
    operationId: `${method}Aggregate${format[0]!.toUpperCase()}${format.slice(1)}`,
    summary: `${method === "head" ? "Headers of" : "Groups of a CKAN table (count, sum, avg, min, max) as"} ${format.toUpperCase()}`,
    tags: ["aggregates"],
    parameters: parametersFor(format, "aggregate").map((p) => {
      const described = queryParameter(p);
      return p.aggregateMeaning === undefined
        ? described
        : { ...described, description: `On aggregates: ${p.aggregateMeaning}.` };
    }),
    responses: {
      "200": {
        description:
          "One row per group: the group columns, then the measures, named as the link writes them. Computed whole before the first byte.",
        headers: {
          "X-Aggregated-By": {
            description:
              "`ckan-sql` (the portal's PostgreSQL, through datastore_search_sql) or `worker` (from the rows' pages).",
            schema: { type: "string", enum: ["worker", "ckan-sql"] },
          },
          "X-Total-Count": { description: "Groups before limit and offset.", schema: { type: "integer" } },
          "Content-Disposition": { description: "attachment, with the download name.", schema: { type: "string" } },
          ETag: { schema: { type: "string" } },
        },
        content: { [contentType.split(";")[0]!]: { schema: body } },
      },
      "304": { description: "Not modified (If-None-Match)." },
      ...errors("400", "403", "404", "429", "500", "502", "503", "504"),
    },
  };
}

/** GET|HEAD /aggregate.<format>: group, count, sum, average, min, max, in every format exports have. */
export const aggregateRoute: Route<AggregateQuery> = {
  methods: ["GET", "HEAD"],
  path: "/aggregate.:format",
  guards: ["signed link", "rate limit"],
  conditional: true,
  cache: EXPORT_CACHE,
  input: ({ request, url, config, info }) =>
    named(info, parseAggregateQuery(url.searchParams, formatOf(request, "aggregate"), config)),
  handle: ({ request, config, deps, info, keep, refresh }, query) =>
    serveExport(request, query, sinkDeps({ config, deps, info, keep, refresh }), aggregatesWith(config)),
  answerError: answerInline,
  openapi: () =>
    Object.fromEntries(
      (Object.keys(FORMATS) as FormatName[]).map((format): [string, Operations] => [
        `/aggregate.${format}`,
        { get: aggregateOperation(format, "get"), head: aggregateOperation(format, "head") },
      ]),
    ),
};
