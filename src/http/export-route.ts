import { siteFor, type CkanSite } from "../ckan/site.ts";
import type { Table } from "../ckan/table.ts";
import { admitClient, IsolateBusy } from "../ckan/page-budget.ts";
import { clientOf } from "../security/rate-limit.ts";
import { log } from "../log/log.ts";
import type { HttpError } from "../errors.ts";
import { MIN_BYTES_PER_SECOND } from "../export/byte-stream.ts";
import type { UpstreamFetch } from "../ckan/types.ts";
import { contentEtag } from "../protocol/conditional.ts";
import type { Config } from "../config/config.ts";
import type { ExportQuery } from "../query/export-query.ts";
import { describeExport, openExport, type ExportProgress, type OpenExport } from "../export/pipeline.ts";
import { cacheKey } from "../protocol/cache-key.ts";
import { readBody } from "./buffer.ts";
import { freedOnceWritten } from "./freed-once-written.ts";
import { downloadHeaders } from "./download.ts";
import {
  cachedExport,
  clientCacheControl,
  storeWhileStreaming,
  storeWhole,
  wantsFresh,
  type CachePolicy,
} from "./edge-cache.ts";
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
  open(
    query: Q,
    config: Config,
    site: CkanSite,
    onDone: (progress: ExportProgress) => void,
    upstreamFetch: UpstreamFetch,
  ): Promise<OpenExport>;
  /** The headers GET would send, without the body (for HEAD). */
  describe(
    query: Q,
    config: Config,
    site: CkanSite,
  ): Promise<Pick<Table, "total"> & { headers?: Record<string, string> }>;
}

export const EXPORTS: Pipeline = { open: openExport, describe: describeExport };

/** An export asked of CKAN (not answered from the edge cache): the answer for this request, stored in the edge cache when it is complete. */
interface FromCkan<Q extends ExportQuery> {
  query: Q;
  /** Undefined: caching is off. */
  key: string | undefined;
  policy: CachePolicy;
  report: (fields: Record<string, unknown>) => void;
}

/**
 * GET|HEAD /export.<format>: link -> query -> (edge cache) -> pipeline -> response. Only a complete,
 * successful export is cached: filling the cache never holds a large export in memory, and an
 * errored stream is never stored.
 */
export async function serveExport<Q extends ExportQuery>(
  request: Request,
  query: Q,
  deps: ExportRouteDeps,
  pipeline: Pipeline<Q>,
): Promise<Response> {
  const { config, info } = deps;
  const url = new URL(request.url);
  info.resource = query.alias ?? query.resourceId;

  const policy: CachePolicy = { ttlSeconds: config.cacheTtlSeconds, staleSeconds: config.cacheStaleSeconds };
  const key = config.cacheTtlSeconds > 0 ? cacheKey(url, config, [query.resourceId]) : undefined;
  if (key !== undefined && !wantsFresh(request)) {
    // A stale entry is refreshed in the background: the export read to its end stores itself.
    const refresh = async (): Promise<void> => {
      const response = await exportFromCkan({ query, key, policy, report: () => {} }, deps, pipeline);
      await response.body?.pipeTo(new WritableStream());
    };
    const cached = await cachedExport(key, request, policy, refresh, deps.waitUntil);
    if (cached !== undefined) return cached;
  }

  if (request.method === "HEAD") {
    // The headers GET would send, from one small call: no Content-Length or ETag, which only the body gives.
    const described = await pipeline.describe(query, config, siteFor(config, deps.upstreamFetch));
    const headers = downloadHeaders(query, described);
    for (const [name, value] of Object.entries(described.headers ?? {})) headers.set(name, value);
    headers.set("cache-control", key === undefined ? "no-cache" : clientCacheControl(policy));
    if (key !== undefined) headers.set("x-cache", "MISS");
    return new Response(null, { status: 200, headers });
  }
  // One client cannot take the isolate: its place is given back once its export ends, however it ends.
  const slot = admitClient(clientOf(request));
  let report: (fields: Record<string, unknown>) => void = () => {};
  const completion = new Promise<Record<string, unknown>>((resolve) => (report = resolve));
  void completion.then(slot.release);
  const response = await exportFromCkan({ query, key, policy, report }, deps, pipeline).catch((error: unknown) => {
    slot.release();
    // The request log line says why the isolate refused (a 503 alone could be CKAN's).
    if (error instanceof IsolateBusy)
      info.completion = Promise.resolve({ refused: "isolate busy", error: error.message });
    throw error;
  });
  info.completion = completion;
  return response;
}

async function exportFromCkan<Q extends ExportQuery>(
  asked: FromCkan<Q>,
  deps: ExportRouteDeps,
  pipeline: Pipeline<Q>,
): Promise<Response> {
  const { config } = deps;
  const { query, key, policy } = asked;
  const site = siteFor(config, deps.upstreamFetch);
  const { client } = site;
  const opened = await pipeline.open(
    query,
    config,
    site,
    (outcome) =>
      asked.report({
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
  const headers = downloadHeaders(query, opened.table);
  for (const [name, value] of Object.entries(opened.headers ?? {})) headers.set(name, value);
  headers.set("cache-control", key === undefined ? "no-cache" : clientCacheControl(policy));
  if (key !== undefined) headers.set("x-cache", "MISS");

  const body = await readBody(opened, config.bufferBytes);
  if ("stream" in body) {
    if (key === undefined) return new Response(freedOnceWritten(body.stream), { status: 200, headers });
    if (body.estimate > config.cacheMaxBytes) {
      headers.set("x-cache-note", `not stored: about ${Math.round(body.estimate)} bytes, more than CACHE_MAX_BYTES`);
      return new Response(freedOnceWritten(body.stream), { status: 200, headers });
    }
    const watch = { stallMs: config.stallSeconds * 1000, minBytesPerSecond: MIN_BYTES_PER_SECOND };
    // The export itself may end whole (the cache's copy read on): the client's own cut is logged apart.
    const clientStopped = (error: HttpError): void =>
      log({ event: "client_stopped", id: deps.info.id, status: error.status, error: error.message }, (text) => text);
    return new Response(
      freedOnceWritten(
        storeWhileStreaming(body.stream, key, headers, opened.progress, policy, deps.waitUntil, watch, clientStopped),
        { free: false },
      ),
      { status: 200, headers },
    );
  }
  headers.set("content-length", String(body.whole.byteLength));
  headers.set("etag", await contentEtag(body.whole));
  if (key !== undefined) deps.waitUntil(storeWhole(key, body.whole, headers, policy));
  return new Response(body.whole, { status: 200, headers });
}
