import { boundedTee } from "./bounded-tee.ts";
import { etagOf } from "../protocol/conditional.ts";
import type { ExportProgress } from "../export/pipeline.ts";
import { watchedReader, type StallWatch } from "../export/byte-stream.ts";
import type { HttpError } from "../errors.ts";

/** Where the ETag of an export stored while streaming is kept: it is known only once the bytes are. */
export const etagKey = (key: string): string => `${key}&~etag`;

/** The client asked to skip caches (a refresh): serve from upstream and refill. */
export const wantsFresh = (request: Request): boolean =>
  /no-cache|no-store|max-age=0/i.test(request.headers.get("cache-control") ?? "") ||
  /no-cache/i.test(request.headers.get("pragma") ?? "");

/** How far the client may run ahead of a cache write (or the cache of a slow client): bounded memory. */
const CACHE_LEAD_BYTES = 16 * 1024 * 1024;

/** How long an export is fresh, and how long after that a stale copy may stand in while one refresh runs. */
export interface CachePolicy {
  ttlSeconds: number;
  staleSeconds: number;
}

/** What clients are told: fresh for the TTL, then stale-while-revalidate for the stale window. */
export const clientCacheControl = (policy: CachePolicy): string =>
  `public, max-age=${policy.ttlSeconds}${policy.staleSeconds > 0 ? `, stale-while-revalidate=${policy.staleSeconds}` : ""}`;

/** An entry is kept through the stale window; when it was stored tells fresh from stale. */
export function storedHeaders(headers: Headers, policy: CachePolicy): Headers {
  const out = new Headers(headers);
  out.set("cache-control", `public, max-age=${policy.ttlSeconds + policy.staleSeconds}`);
  out.set("x-stored-at", String(Date.now()));
  // Which fill wrote the entry: a streamed entry's ETag, stored beside it later, names its fill too.
  out.set("x-fill", crypto.randomUUID());
  return out;
}

/** Refreshes running in this isolate, by key: however many viewers find an entry stale, one goes upstream. */
const refreshing = new Map<string, Promise<void>>();

function refreshOnce(key: string, refresh: () => Promise<void>, waitUntil: (promise: Promise<unknown>) => void): void {
  if (refreshing.has(key)) return;
  const running = refresh()
    .catch(() => {})
    .finally(() => refreshing.delete(key));
  refreshing.set(key, running);
  waitUntil(running);
}

/**
 * The cached answer for this key, if any, as this request should get it (200, or HEAD's headers; its
 * ETag answers preconditions in the route's pipeline): zero upstream requests. A stale one (past the
 * TTL, inside the stale window) is served as it is, says so (`X-Cache: STALE`), and starts `refresh`
 * unless this isolate already runs it.
 */
export async function cachedExport(
  key: string,
  request: Request,
  policy: CachePolicy,
  refresh: () => Promise<void>,
  waitUntil: (promise: Promise<unknown>) => void,
): Promise<Response | undefined> {
  const [cached, etag] = await Promise.all([caches.default.match(key), caches.default.match(etagKey(key))]);
  if (cached === undefined) return undefined;
  // Two fills of one key may overlap: a tag written by the other fill must not describe these bytes.
  const [tagFill, tag] = etag === undefined ? [] : (await etag.text()).split(" ");
  // A streamed entry is whole only once its fill recorded the content's hash (a whole one has its ETag).
  if (!cached.headers.has("etag") && (tag === undefined || tagFill !== cached.headers.get("x-fill"))) {
    await cached.body?.cancel();
    return undefined;
  }
  const headers = new Headers(cached.headers);
  const age = Math.max(0, Math.floor((Date.now() - Number(headers.get("x-stored-at") ?? Date.now())) / 1000));
  const stale = age >= policy.ttlSeconds;
  headers.delete("x-stored-at");
  const fill = headers.get("x-fill");
  headers.delete("x-fill");
  headers.set("age", String(age));
  headers.set("cache-control", clientCacheControl(policy));
  headers.set("x-cache", stale ? "STALE" : "HIT");
  if (stale) refreshOnce(key, refresh, waitUntil);
  if (tag !== undefined && tagFill === fill && !headers.has("etag")) headers.set("etag", tag);
  if (request.method === "HEAD") {
    await cached.body?.cancel();
    return new Response(null, { status: 200, headers });
  }
  return new Response(cached.body, { status: 200, headers });
}

/** Stores a whole export (small enough to have been read whole). */
export const storeWhole = (
  key: string,
  bytes: Uint8Array<ArrayBuffer>,
  headers: Headers,
  policy: CachePolicy,
): Promise<void> => caches.default.put(key, new Response(bytes, { headers: storedHeaders(headers, policy) }));

/**
 * The client's copy of a streamed export, stored in the cache while it streams: a slow cache may
 * fall behind the client by CACHE_LEAD_BYTES, no more.
 */
export function storeWhileStreaming(
  stream: ReadableStream<Uint8Array>,
  key: string,
  headers: Headers,
  progress: ExportProgress,
  policy: CachePolicy,
  waitUntil: (promise: Promise<unknown>) => void,
  watch?: StallWatch,
  onClientStopped?: (error: HttpError) => void,
): ReadableStream<Uint8Array> {
  const [client, store] = boundedTee(stream, CACHE_LEAD_BYTES);
  waitUntil(fillWhileStreaming(key, store, storedHeaders(headers, policy), progress));
  // The cache's reader keeps the export going while the client lags (up to CACHE_LEAD_BYTES): the
  // client's own branch is timed, so a client that stalls or trickles lets go of what is held for it.
  return watch === undefined ? client : watchedReader(client, watch, onClientStopped);
}

/**
 * The cache's copy of a stream that ends quietly where the stream fails. A Cache API `put` given a
 * body that errors leaves a rejection inside the runtime that no caller can handle; a quiet end
 * leaves a short entry instead, which is never served: it gets no completion record (below), and
 * is deleted.
 */
function endingQuietly(stream: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = stream.getReader();
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) controller.close();
          else controller.enqueue(value);
        } catch {
          controller.close();
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/**
 * Writes a streamed export to the cache as it goes. Its ETag (the content hash) is known only at the
 * end, so it is stored beside the entry (rewriting the whole entry would write it twice), and that
 * record is also what says the entry is whole: an entry streamed without one is never served. An
 * export that fails leaves a short entry, deleted once its `put` has settled (a delete that ran
 * first would leave that entry behind).
 */
async function fillWhileStreaming(
  key: string,
  body: ReadableStream<Uint8Array>,
  headers: Headers,
  progress: ExportProgress,
): Promise<void> {
  const digest = new crypto.DigestStream("SHA-256");
  // Rejects when the export fails, and is then never awaited.
  digest.digest.catch(() => {});
  const [stored, hashed] = boundedTee(body, 0);
  let put: Promise<void> | undefined;
  try {
    // An older fill's tag must never describe these bytes, even for a moment.
    await caches.default.delete(etagKey(key));
    put = caches.default.put(key, new Response(endingQuietly(stored), { headers }));
    await Promise.all([put, hashed.pipeTo(digest)]);
    if (progress.error !== undefined) throw progress.error;
    const etag = etagOf(await digest.digest);
    await caches.default.put(
      etagKey(key),
      new Response(`${headers.get("x-fill")} ${etag}`, {
        headers: { "cache-control": headers.get("cache-control") ?? "" },
      }),
    );
  } catch {
    // Let go of both readers, or the client's download would stall once it is a lead ahead of them.
    await Promise.allSettled([stored.cancel(), hashed.cancel()]);
    await put?.catch(() => {});
    await caches.default.delete(key).catch(() => false);
  }
}
