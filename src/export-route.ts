import type { IRequest } from "itty-router";
import type { RequestInfo } from "./app.ts";
import { cacheKey, contentEtag, etagKey, etagMatches, etagOf, notModified, wantsFresh } from "./cache.ts";
import { CkanClient } from "./ckan/client.ts";
import type { UpstreamFetch } from "./ckan/types.ts";
import type { Config } from "./config.ts";
import { HttpError } from "./errors.ts";
import { readBody, runExport, type ExportProgress } from "./export.ts";
import { FORMATS, isFormatName } from "./format/index.ts";
import { boundedTee } from "./bounded-tee.ts";
import { log } from "./log.ts";
import { parseExportQuery } from "./query.ts";
import type { Redact } from "./secrets.ts";

/** How far the client may run ahead of a cache write (or the cache of a slow client): bounded memory. */
const CACHE_LEAD_BYTES = 16 * 1024 * 1024;

export interface ExportRouteDeps {
  config: Config;
  upstreamFetch: UpstreamFetch;
  info: RequestInfo;
  redact: Redact;
  waitUntil: (promise: Promise<unknown>) => void;
}

/** Serves a cached export: zero upstream requests, a 304 when the client already has these bytes. */
function fromCache(cached: Response, etag: string | undefined, request: IRequest): Response {
  const headers = new Headers(cached.headers);
  headers.set("x-cache", "HIT");
  if (etag !== undefined && !headers.has("etag")) headers.set("etag", etag);
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
    const [cached, etag] = await Promise.all([caches.default.match(key), caches.default.match(etagKey(key))]);
    if (cached !== undefined) return fromCache(cached, etag === undefined ? undefined : await etag.text(), request);
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
    if (!caching) return new Response(body.stream, { status: 200, headers });
    if (body.estimate > config.cacheMaxBytes) {
      headers.set("x-cache-note", `not stored: about ${Math.round(body.estimate)} bytes, more than CACHE_MAX_BYTES`);
      return new Response(body.stream, { status: 200, headers });
    }
    // Stored while it streams: a slow cache may fall behind the client by CACHE_LEAD_BYTES, no more.
    const [client, store] = boundedTee(body.stream, CACHE_LEAD_BYTES);
    deps.waitUntil(fillWhileStreaming(key, store, new Headers(headers), run.progress));
    return new Response(client, { status: 200, headers });
  }
  headers.set("content-length", String(body.whole.byteLength));
  headers.set("etag", await contentEtag(body.whole));
  if (caching) deps.waitUntil(caches.default.put(key, new Response(body.whole, { headers })));
  if (etagMatches(request.headers.get("if-none-match"), headers.get("etag"))) return notModified(headers);
  return new Response(body.whole, { status: 200, headers });
}

/**
 * Writes a streamed export to the cache as it goes. Its ETag (the content hash) is known only at the
 * end, so it is stored beside the entry (rewriting the whole entry would write it twice). A stream
 * that errors makes `put` fail; the entry is deleted to be sure nothing partial is ever served.
 */
async function fillWhileStreaming(key: string, body: ReadableStream<Uint8Array>, headers: Headers, progress: ExportProgress): Promise<void> {
  const digest = new crypto.DigestStream("SHA-256");
  // Rejects when the export fails, and is then never awaited.
  digest.digest.catch(() => {});
  const [stored, hashed] = boundedTee(body, 0);
  try {
    // An older fill's tag must never describe these bytes, even for a moment.
    await caches.default.delete(etagKey(key));
    await Promise.all([caches.default.put(key, new Response(stored, { headers })), hashed.pipeTo(digest)]);
    if (progress.error !== undefined) throw progress.error;
    const etag = etagOf(await digest.digest);
    await caches.default.put(etagKey(key), new Response(etag, { headers: { "cache-control": headers.get("cache-control") ?? "" } }));
  } catch {
    // Let go of both readers, or the client's download would stall once it is a lead ahead of them.
    await Promise.allSettled([stored.cancel(), hashed.cancel()]);
    await caches.default.delete(key).catch(() => false);
  }
}
