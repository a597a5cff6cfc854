import { CkanClient } from "../ckan/client.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config.ts";
import { HttpError, requireGetOrHead } from "../errors.ts";
import { parseExportQuery } from "../export/query.ts";
import { describeExport, runExport } from "../export/run.ts";
import { FORMATS, isFormatName } from "../format/index.ts";
import { readBody } from "./buffer.ts";
import { contentEtag, etagMatches, notModified } from "../conditional.ts";
import { downloadHeaders } from "./download.ts";
import { cachedExport, cacheKey, storeWhileStreaming, wantsFresh } from "./edge-cache.ts";
import type { RequestInfo } from "./request-log.ts";

export interface ExportRouteDeps {
  config: Config;
  upstreamFetch: UpstreamFetch;
  info: RequestInfo;
  waitUntil: (promise: Promise<unknown>) => void;
}

/**
 * GET|HEAD /export.<format>: link -> query -> (edge cache) -> pipeline -> response. Only a complete,
 * successful export is cached: filling the cache never holds a large export in memory, and an
 * errored stream is never stored.
 */
export async function exportRoute(request: Request, format: string, deps: ExportRouteDeps): Promise<Response> {
  const { config, info } = deps;
  if (!isFormatName(format)) {
    throw new HttpError(404, `No such export format ".${format.slice(0, 20)}". Use one of: ${Object.keys(FORMATS).map((f) => `/export.${f}`).join(", ")}.`);
  }
  requireGetOrHead(request.method, "Exports");
  const url = new URL(request.url);
  const query = parseExportQuery(url.searchParams, format, config);
  info.resource = query.alias ?? query.resourceId;

  const caching = config.cacheTtlSeconds > 0;
  const key = cacheKey(url, config, query.resourceId);
  if (caching && !wantsFresh(request)) {
    const cached = await cachedExport(key, request);
    if (cached !== undefined) return cached;
  }

  const client = new CkanClient(config, deps.upstreamFetch);
  const cacheControl = caching ? `public, max-age=${config.cacheTtlSeconds}` : "no-cache";
  if (request.method === "HEAD") {
    // The headers GET would send, from one small call: no Content-Length or ETag, which only the body gives.
    const headers = downloadHeaders(query, await describeExport(query, config, client));
    headers.set("cache-control", cacheControl);
    if (caching) headers.set("x-cache", "MISS");
    return new Response(null, { status: 200, headers });
  }
  let report: (fields: Record<string, unknown>) => void = () => {};
  const completion = new Promise<Record<string, unknown>>((resolve) => (report = resolve));
  const run = await runExport(query, config, client, (outcome) =>
    report({
      ...(outcome.error ? { status: outcome.error.status } : {}),
      cache: caching ? "MISS" : "OFF",
      rows: outcome.rows,
      pages: client.stats.requests,
      bytes: outcome.bytes,
      upstream_bytes: client.stats.bytes,
      upstream_ms: client.stats.milliseconds,
      ...(outcome.error ? { error: outcome.error.message } : {}),
    }),
  );
  info.completion = completion;
  const headers = downloadHeaders(query, run.table);
  headers.set("cache-control", cacheControl);
  if (caching) headers.set("x-cache", "MISS");

  const body = await readBody(run, config.bufferBytes);
  if ("stream" in body) {
    if (!caching) return new Response(body.stream, { status: 200, headers });
    if (body.estimate > config.cacheMaxBytes) {
      headers.set("x-cache-note", `not stored: about ${Math.round(body.estimate)} bytes, more than CACHE_MAX_BYTES`);
      return new Response(body.stream, { status: 200, headers });
    }
    return new Response(storeWhileStreaming(body.stream, key, headers, run.progress, deps.waitUntil), { status: 200, headers });
  }
  headers.set("content-length", String(body.whole.byteLength));
  headers.set("etag", await contentEtag(body.whole));
  if (caching) deps.waitUntil(caches.default.put(key, new Response(body.whole, { headers })));
  if (etagMatches(request.headers.get("if-none-match"), headers.get("etag"))) return notModified(headers);
  return new Response(body.whole, { status: 200, headers });
}
