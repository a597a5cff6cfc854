import { CkanClient } from "../ckan/client.ts";
import { IsolateBusy } from "../ckan/page-budget.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import { conditionalAnswer, contentEtag } from "../protocol/conditional.ts";
import type { Config } from "../config/config.ts";
import { HttpError } from "../errors.ts";
import { parseExportQuery, type ExportQuery } from "../query/export-query.ts";
import { describeExport, runExport, type ExportProgress, type ExportRun } from "../export/run.ts";
import { FORMATS, isFormatName, type FormatName } from "../query/formats.ts";
import type { Table } from "../ckan/table.ts";
import { cacheKey } from "../protocol/cache-key.ts";
import { readBody } from "./buffer.ts";
import { freedOnceWritten } from "./freed-once-written.ts";
import { downloadHeaders } from "./download.ts";
import { cachedExport, clientCacheControl, storeWhileStreaming, storeWhole, wantsFresh, type CachePolicy } from "./edge-cache.ts";
import type { RequestInfo } from "./request-log.ts";

export interface ExportRouteDeps {
  config: Config;
  upstreamFetch: UpstreamFetch;
  info: RequestInfo;
  waitUntil: (promise: Promise<unknown>) => void;
}

/**
 * What a download route computes, between its link and its bytes: exports (rows from CKAN) and
 * aggregates (groups computed from them) share everything else here (edge cache, ETag, 304, HEAD).
 */
export interface Pipeline<Q extends ExportQuery = ExportQuery> {
  /** The route's path before the format: `/export`, `/aggregate`. */
  path: string;
  parse(params: URLSearchParams, format: FormatName, config: Config): Q;
  run(query: Q, config: Config, client: CkanClient, onDone: (progress: ExportProgress) => void, upstreamFetch: UpstreamFetch): Promise<ExportRun>;
  /** The headers GET would send, without the body (for HEAD). */
  describe(query: Q, config: Config, client: CkanClient): Promise<Pick<Table, "total"> & { headers?: Record<string, string> }>;
}

export const EXPORTS: Pipeline = {
  path: "/export",
  parse: parseExportQuery,
  run: runExport,
  describe: describeExport,
};

/** One export from CKAN: the answer for this request, stored in the edge cache when it is complete. */
interface Fresh<Q extends ExportQuery> {
  query: Q;
  /** Undefined: caching is off. */
  key: string | undefined;
  policy: CachePolicy;
  /** The client's request, whose preconditions a whole body is judged against; none for a background refresh. */
  request: Request | undefined;
  report: (fields: Record<string, unknown>) => void;
}

/**
 * GET|HEAD /export.<format>: link -> query -> (edge cache) -> pipeline -> response. Only a complete,
 * successful export is cached: filling the cache never holds a large export in memory, and an
 * errored stream is never stored.
 */
export async function exportRoute<Q extends ExportQuery>(request: Request, format: string, deps: ExportRouteDeps, pipeline: Pipeline<Q>): Promise<Response> {
  const { config, info } = deps;
  if (!isFormatName(format)) {
    throw new HttpError(404, `No such format ".${format.slice(0, 20)}". Use one of: ${Object.keys(FORMATS).map((f) => `${pipeline.path}.${f}`).join(", ")}.`);
  }
  const url = new URL(request.url);
  const query = pipeline.parse(url.searchParams, format, config);
  info.resource = query.alias ?? query.resourceId;

  const policy: CachePolicy = { ttlSeconds: config.cacheTtlSeconds, staleSeconds: config.cacheStaleSeconds };
  const key = config.cacheTtlSeconds > 0 ? cacheKey(url, config, [query.resourceId]) : undefined;
  if (key !== undefined && !wantsFresh(request)) {
    // A stale entry is refreshed in the background: the export read to its end stores itself.
    const refresh = async (): Promise<void> => {
      const response = await freshExport({ query, key, policy, request: undefined, report: () => {} }, deps, pipeline);
      await response.body?.pipeTo(new WritableStream());
    };
    const cached = await cachedExport(key, request, policy, refresh, deps.waitUntil);
    if (cached !== undefined) return cached;
  }

  if (request.method === "HEAD") {
    // The headers GET would send, from one small call: no Content-Length or ETag, which only the body gives.
    const described = await pipeline.describe(query, config, new CkanClient(config, deps.upstreamFetch));
    const headers = downloadHeaders(query, described);
    for (const [name, value] of Object.entries(described.headers ?? {})) headers.set(name, value);
    headers.set("cache-control", key === undefined ? "no-cache" : clientCacheControl(policy));
    if (key !== undefined) headers.set("x-cache", "MISS");
    return new Response(null, { status: 200, headers });
  }
  let report: (fields: Record<string, unknown>) => void = () => {};
  const completion = new Promise<Record<string, unknown>>((resolve) => (report = resolve));
  const response = await freshExport({ query, key, policy, request, report }, deps, pipeline).catch((error: unknown) => {
    // The request log line says why the isolate refused (a 503 alone could be CKAN's).
    if (error instanceof IsolateBusy) info.completion = Promise.resolve({ refused: "isolate busy", error: error.message });
    throw error;
  });
  info.completion = completion;
  return response;
}

async function freshExport<Q extends ExportQuery>(fresh: Fresh<Q>, deps: ExportRouteDeps, pipeline: Pipeline<Q>): Promise<Response> {
  const { config } = deps;
  const { query, key, policy } = fresh;
  const client = new CkanClient(config, deps.upstreamFetch);
  const run = await pipeline.run(query, config, client, (outcome) =>
    fresh.report({
      ...(outcome.error ? { status: outcome.error.status } : {}),
      cache: key === undefined ? "OFF" : "MISS",
      rows: outcome.rows,
      pages: client.stats.requests,
      bytes: outcome.bytes,
      upstream_bytes: client.stats.bytes,
      upstream_ms: client.stats.milliseconds,
      ...(outcome.error ? { error: outcome.error.message } : {}),
    }),
    deps.upstreamFetch,
  );
  const headers = downloadHeaders(query, run.table);
  for (const [name, value] of Object.entries(run.headers ?? {})) headers.set(name, value);
  headers.set("cache-control", key === undefined ? "no-cache" : clientCacheControl(policy));
  if (key !== undefined) headers.set("x-cache", "MISS");

  const body = await readBody(run, config.bufferBytes);
  if ("stream" in body) {
    if (key === undefined) return new Response(freedOnceWritten(body.stream), { status: 200, headers });
    if (body.estimate > config.cacheMaxBytes) {
      headers.set("x-cache-note", `not stored: about ${Math.round(body.estimate)} bytes, more than CACHE_MAX_BYTES`);
      return new Response(freedOnceWritten(body.stream), { status: 200, headers });
    }
    return new Response(freedOnceWritten(storeWhileStreaming(body.stream, key, headers, run.progress, policy, deps.waitUntil), { free: false }), { status: 200, headers });
  }
  headers.set("content-length", String(body.whole.byteLength));
  headers.set("etag", await contentEtag(body.whole));
  if (key !== undefined) deps.waitUntil(storeWhole(key, body.whole, headers, policy));
  const conditional = fresh.request && conditionalAnswer(fresh.request, headers);
  if (conditional !== undefined) return conditional;
  return new Response(body.whole, { status: 200, headers });
}
