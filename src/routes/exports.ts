import { withColumnHint } from "../discovery/column-hint.ts";
import { HttpError, toHttpError } from "../errors.ts";
import { siteFor } from "../ckan/site.ts";
import type { Config } from "../config/config.ts";
import { describeExport, openExport } from "../export/pipeline.ts";
import { serveExport, type ExportRouteDeps, type Pipeline } from "../http/export-route.ts";
import type { RequestInfo } from "../http/request-log.ts";
import { inlineErrorResponse, wantsInlineError } from "../http/inline-error.ts";
import { log } from "../log/log.ts";
import { redactor } from "../log/redact.ts";
import { errorModeOf, parseExportQuery, type ExportQuery } from "../query/export-query.ts";
import { FORMATS, isFormatName, type FormatName } from "../query/formats.ts";
import { parametersFor } from "../query/params.ts";
import { errors, queryParameter, type Json, type Operations } from "./openapi-parts.ts";
import type { CachePolicy, RequestContext, Route, RouteContext } from "./route.ts";

function exportOperation(format: FormatName, method: "get" | "head"): Json {
  const { contentType } = FORMATS[format];
  const body = format === "json" ? { type: "array", items: { type: "object" } } : { type: "string" };
  return {
    operationId: `${method}Export${format[0]!.toUpperCase()}${format.slice(1)}`,
    summary: `${method === "head" ? "Headers of" : "Rows of a CKAN table as"} ${format.toUpperCase()}`,
    tags: ["exports"],
    parameters: parametersFor(format).map(queryParameter),
    responses: {
      "200": {
        description: "The export. Small ones come whole with Content-Length; larger ones stream.",
        headers: {
          "X-Total-Count": {
            description: "CKAN's count of matching rows, before limit and offset.",
            schema: { type: "integer" },
          },
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

/**
 * A spreadsheet that shows no error body gets the message as its one cell (errors=inline): the
 * error answer of every route whose link names a format (exports, aggregates).
 */
export function answerInline(error: unknown, { request, url, env, info }: RequestContext): Response {
  const format = request.params.format ?? "";
  if (!wantsInlineError(request.method, errorModeOf(url.searchParams, format), request.headers.get("user-agent")))
    throw error;
  log({ event: "error", id: info.id, message: toHttpError(error).message, inline: true }, redactor(env));
  return inlineErrorResponse(error, format, redactor(env));
}

/**
 * Exports and aggregates in the edge cache: stale ones served while one refresh runs, keyed by the
 * resource the alias stands for today (an alias moved to another table never serves the old one).
 */
export const EXPORT_CACHE: CachePolicy<ExportQuery> = {
  kind: "edge",
  staleWhileRevalidate: true,
  shapedBy: (query) => [query.resourceId],
};

/** Exports: rows from CKAN, read with the export pipeline's own settings. */
const exportsWith = (config: Config): Pipeline => ({
  open: (query, site, onDone) => openExport(query, config, site, onDone),
  describe: (query, site) => describeExport(query, config, site),
});

/** What the HTTP sink gets for this request: its own settings, the CKAN site, the log entry, the keeper. */
export const sinkDeps = ({
  config,
  deps,
  info,
  keep,
  refresh,
}: Pick<RouteContext, "config" | "deps" | "info" | "keep" | "refresh">): ExportRouteDeps => ({
  settings: config,
  site: siteFor(config, deps.upstreamFetch),
  info,
  keep,
  refresh,
});

/** The query, its resource named on the request's log line. */
export function named<Q extends ExportQuery>(info: RequestInfo, query: Q): Q {
  info.resource = query.alias ?? query.resourceId;
  return query;
}

/** The route's format (`/export.csv`, `/aggregate.parquet`), or a 404 listing the family's formats. */
export function formatOf(request: RequestContext["request"], family: "export" | "aggregate"): FormatName {
  const format = request.params.format ?? "";
  if (isFormatName(format)) return format;
  throw new HttpError(
    404,
    `No such ${family} format ".${format.slice(0, 20)}". Use one of: ${Object.keys(FORMATS)
      .map((f) => `/${family}.${f}`)
      .join(", ")}.`,
  );
}

/** GET|HEAD /export.<format>: the pipeline to an HTTP response. */
export const exportRoute: Route<ExportQuery> = {
  methods: ["GET", "HEAD"],
  path: "/export.:format",
  guards: ["signed link", "rate limit"],
  conditional: true,
  cache: EXPORT_CACHE,
  input: ({ request, url, config, info }) =>
    named(info, parseExportQuery(url.searchParams, formatOf(request, "export"), config)),
  handle: ({ request, config, deps, info, keep, refresh }, query) =>
    serveExport(request, query, sinkDeps({ config, deps, info, keep, refresh }), exportsWith(config)).catch(
      (error: unknown) => withColumnHint(error, query, siteFor(config, deps.upstreamFetch).client),
    ),
  answerError: answerInline,
  openapi: () =>
    Object.fromEntries(
      (Object.keys(FORMATS) as FormatName[]).map((format): [string, Operations] => [
        `/export.${format}`,
        { get: exportOperation(format, "get"), head: exportOperation(format, "head") },
      ]),
    ),
};
