import type { IRequest } from "itty-router";
import type { RequestInfo } from "./app.ts";
import { CkanClient } from "./ckan/client.ts";
import type { UpstreamFetch } from "./ckan/types.ts";
import type { Config } from "./config.ts";
import { HttpError } from "./errors.ts";
import { exportResponse, runExport } from "./export.ts";
import { FORMATS, isFormatName } from "./format/index.ts";
import { log } from "./log.ts";
import { parseExportQuery } from "./query.ts";
import type { Redact } from "./secrets.ts";

/** GET|HEAD /export.<format>: link -> query -> pipeline -> response, with one log line at the end. */
export async function exportRoute(
  request: IRequest,
  config: Config,
  upstreamFetch: UpstreamFetch,
  info: RequestInfo,
  redact: Redact,
): Promise<Response> {
  const format = String(request.params.format ?? "");
  if (!isFormatName(format)) {
    throw new HttpError(404, `No such export format ".${format.slice(0, 20)}". Use one of: ${Object.keys(FORMATS).map((f) => `/export.${f}`).join(", ")}.`);
  }
  if (request.method !== "GET" && request.method !== "HEAD") {
    throw new HttpError(405, "Exports are read with GET (or HEAD).", { headers: { allow: "GET, HEAD" } });
  }
  const query = parseExportQuery(new URL(request.url).searchParams, format, config);
  info.resource = query.alias ?? query.resourceId;
  const client = new CkanClient(config, upstreamFetch);
  const run = await runExport(query, config, client, (outcome) =>
    log(
      {
        event: "request",
        id: info.id,
        method: request.method,
        route: `/export.${format}`,
        resource: info.resource,
        status: outcome.error?.status ?? 200,
        rows: outcome.rows,
        pages: client.stats.requests,
        bytes: outcome.bytes,
        upstream_bytes: client.stats.bytes,
        upstream_ms: client.stats.milliseconds,
        ms: Date.now() - info.started,
        ...(outcome.error ? { error: outcome.error.message } : {}),
      },
      redact,
    ),
  );
  info.deferred = true;
  return exportResponse(run, config.bufferBytes, request.method === "HEAD");
}
