import type { IRequest } from "itty-router";
import type { RequestInfo } from "./app.ts";
import { cacheKey, contentEtag, etagMatches, notModified, wantsFresh } from "./cache.ts";
import { CkanClient } from "./ckan/client.ts";
import type { UpstreamFetch } from "./ckan/types.ts";
import type { Config } from "./config.ts";
import { HttpError } from "./errors.ts";
import { readBody, runExport } from "./export.ts";
import { FORMATS, isFormatName } from "./format/index.ts";
import { log } from "./log.ts";
import { parseExportQuery } from "./query.ts";
import type { Redact } from "./secrets.ts";

export interface ExportRouteDeps {
  config: Config;
  upstreamFetch: UpstreamFetch;
  info: RequestInfo;
  redact: Redact;
  waitUntil: (promise: Promise<unknown>) => void;
}

/** Serves a cached export: zero upstream requests, a 304 when the client already has these bytes. */
function fromCache(cached: Response, request: IRequest): Response {
  const headers = new Headers(cached.headers);
  headers.set("x-cache", "HIT");
  if (etagMatches(request.headers.get("if-none-match"), headers.get("etag"))) return notModified(headers);
  return new Response(request.method === "HEAD" ? null : cached.body, { status: 200, headers });
}

/**
 * GET|HEAD /export.<format>: link -> query -> (edge cache) -> pipeline -> response. Only a complete,
 * successful export that fits the buffer is cached: filling the cache never holds a large export
 * in memory, and an errored stream is never stored.
 */
export async function exportRoute(request: IRequest, deps: ExportRouteDeps): Promise<Response> {
  const { config, info, redact } = deps;
  const format = String(request.params.format ?? "");
  if (!isFormatName(format)) {
    throw new HttpError(404, `No such export format ".${format.slice(0, 20)}". Use one of: ${Object.keys(FORMATS).map((f) => `/export.${f}`).join(", ")}.`);
  }
  if (request.method !== "GET" && request.method !== "HEAD") {
    throw new HttpError(405, "Exports are read with GET (or HEAD).", { headers: { allow: "GET, HEAD" } });
  }
  const url = new URL(request.url);
  const query = parseExportQuery(url.searchParams, format, config);
  info.resource = query.alias ?? query.resourceId;

  const caching = config.cacheTtlSeconds > 0;
  const key = cacheKey(url, config);
  if (caching && !wantsFresh(request as unknown as Request)) {
    const cached = await caches.default.match(key);
    if (cached !== undefined) return fromCache(cached, request);
  }

  const client = new CkanClient(config, deps.upstreamFetch);
  const run = await runExport(query, config, client, (outcome) =>
    log(
      {
        event: "request",
        id: info.id,
        method: request.method,
        route: `/export.${format}`,
        resource: info.resource,
        status: outcome.error?.status ?? 200,
        cache: caching ? "MISS" : "OFF",
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
  const headers = run.headers;
  headers.set("cache-control", caching ? `public, max-age=${config.cacheTtlSeconds}` : "no-cache");
  if (caching) headers.set("x-cache", "MISS");
  if (request.method === "HEAD") {
    await run.body.cancel();
    return new Response(null, { status: 200, headers });
  }

  const body = await readBody(run, config.bufferBytes);
  if ("stream" in body) {
    if (caching) headers.set("x-cache-note", `not stored: larger than ${config.bufferBytes} bytes, streamed`);
    return new Response(body.stream, { status: 200, headers });
  }
  headers.set("content-length", String(body.whole.byteLength));
  headers.set("etag", await contentEtag(body.whole));
  if (caching) deps.waitUntil(caches.default.put(key, new Response(body.whole, { headers })));
  if (etagMatches(request.headers.get("if-none-match"), headers.get("etag"))) return notModified(headers);
  return new Response(body.whole, { status: 200, headers });
}
