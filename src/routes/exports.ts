import { withColumnHint } from "../discovery/column-hint.ts";
import { HttpError, toHttpError } from "../errors.ts";
import { EXPORTS, serveExport } from "../http/export-route.ts";
import { inlineErrorResponse, wantsInlineError } from "../http/inline-error.ts";
import { log } from "../log/log.ts";
import { redactor } from "../log/redact.ts";
import { errorModeOf, parseExportQuery } from "../query/export-query.ts";
import { FORMATS, isFormatName, type FormatName } from "../query/formats.ts";
import { parameterAnchor, parametersFor, type Parameter } from "../query/params.ts";
import { guardLink } from "./guards.ts";
import { errors, type Json, type Operations } from "./openapi-parts.ts";
import type { Route } from "./route.ts";

export function parameter(p: Parameter): Json {
  const { default: fallback, ...rest } = p.schema;
  const schema: Json = { ...rest, ...(fallback === undefined ? {} : { default: fallback }) };
  return {
    name: p.name,
    in: "query",
    required: false,
    description: p.meaning + (p.pattern ? " (the name is a pattern: replace the part in angle brackets)" : ""),
    schema: p.repeatable ? { type: "array", items: schema } : schema,
    ...(p.repeatable ? { style: "form", explode: true } : {}),
    "x-example-link": p.example,
    "x-anchor": parameterAnchor(p),
  };
}

function exportOperation(format: FormatName, method: "get" | "head"): Json {
  const { contentType } = FORMATS[format];
  const body = format === "json" ? { type: "array", items: { type: "object" } } : { type: "string" };
  return {
    operationId: `${method}Export${format[0]!.toUpperCase()}${format.slice(1)}`,
    summary: `${method === "head" ? "Headers of" : "Rows of a CKAN table as"} ${format.toUpperCase()}`,
    tags: ["exports"],
    parameters: parametersFor(format).map(parameter),
    responses: {
      "200": {
        description: "The export. Small ones come whole with Content-Length; larger ones stream.",
        headers: {
          "X-Total-Count": { description: "CKAN's count of matching rows, before limit and offset.", schema: { type: "integer" } },
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

/** GET|HEAD /export.<format>: the pipeline to an HTTP response. */
export const exportRoute: Route = {
  methods: ["GET", "HEAD"],
  path: "/export.:format",
  async handle(context) {
    const { request, url, env, config, deps, info } = context;
    const format = request.params.format ?? "";
    const errorMode = errorModeOf(url.searchParams, format);
    try {
      await guardLink(context);
      if (!isFormatName(format)) {
        throw new HttpError(404, `No such export format ".${format.slice(0, 20)}". Use one of: ${Object.keys(FORMATS).map((f) => `/export.${f}`).join(", ")}.`);
      }
      const query = parseExportQuery(url.searchParams, format, config);
      return await serveExport(request, query, { config, upstreamFetch: deps.upstreamFetch, info, waitUntil: context.waitUntil }, EXPORTS).catch(
        (error: unknown) => withColumnHint(error, query, config, deps.upstreamFetch),
      );
    } catch (error) {
      // A spreadsheet that shows no error body gets the message as its one cell (errors=inline).
      if (!wantsInlineError(request.method, errorMode, request.headers.get("user-agent"))) throw error;
      log({ event: "error", id: info.id, message: toHttpError(error).message, inline: true }, redactor(env));
      return inlineErrorResponse(error, format, redactor(env));
    }
  },
  openapi: () =>
    Object.fromEntries(
      (Object.keys(FORMATS) as FormatName[]).map((format): [string, Operations] => [
        `/export.${format}`,
        { get: exportOperation(format, "get"), head: exportOperation(format, "head") },
      ]),
    ),
};
