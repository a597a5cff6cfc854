import { boundedTee } from "./bounded-tee.ts";
import { etagOf } from "../protocol/conditional.ts";

// The edge cache's mechanics: entries, their completion records, one refresh per key. Which routes
// use it, for how long, and what clients are told is the route's cache policy (routes/cache-policy.ts).

/** Where the ETag of an answer stored while streaming is kept: it is known only once the bytes are. */
export const etagKey = (key: string): string => `${key}&~etag`;

/** How far the client may run ahead of a cache write (or the cache of a slow client): bounded memory. */
const CACHE_LEAD_BYTES = 16 * 1024 * 1024;

/** How long an entry is fresh, and how long after that a stale copy may stand in while one refresh runs. */
export interface EntryLife {
  ttlSeconds: number;
  staleSeconds: number;
}

/** An entry is kept through the stale window; when it was stored tells fresh from stale. */
function storedHeaders(headers: Headers, life: EntryLife): Headers {
  const out = new Headers(headers);
  out.set("cache-control", `public, max-age=${life.ttlSeconds + life.staleSeconds}`);
  out.set("x-stored-at", String(Date.now()));
  // Which fill wrote the entry: a streamed entry's ETag, stored beside it later, names its fill too.
  out.set("x-fill", crypto.randomUUID());
  return out;
}

/** Refreshes running in this isolate, by key: however many viewers find an entry stale, one goes upstream. */
const refreshing = new Map<string, Promise<void>>();

export function refreshOnce(
  key: string,
  refresh: () => Promise<void>,
  waitUntil: (promise: Promise<unknown>) => void,
): void {
  if (refreshing.has(key)) return;
  const running = refresh()
    .catch(() => {})
    .finally(() => refreshing.delete(key));
  refreshing.set(key, running);
  waitUntil(running);
}

/** A stored answer as this request gets it, and whether it is past its TTL. */
export interface CachedAnswer {
  response: Response;
  stale: boolean;
}

/**
 * The stored answer for this key, if any and whole, as this request should get it (200, or HEAD's
 * headers; its ETag answers preconditions in the route's pipeline): zero upstream requests.
 */
export async function cachedAnswer(key: string, request: Request, life: EntryLife): Promise<CachedAnswer | undefined> {
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
  headers.delete("x-stored-at");
  const fill = headers.get("x-fill");
  headers.delete("x-fill");
  headers.set("age", String(age));
  if (tag !== undefined && tagFill === fill && !headers.has("etag")) headers.set("etag", tag);
  const stale = age >= life.ttlSeconds;
  if (request.method === "HEAD") {
    await cached.body?.cancel();
    return { response: new Response(null, { status: 200, headers }), stale };
  }
  return { response: new Response(cached.body, { status: 200, headers }), stale };
}

/** Stores a whole answer (small enough to have been read whole). */
export const storeWhole = (
  key: string,
  bytes: Uint8Array<ArrayBuffer>,
  headers: Headers,
  life: EntryLife,
): Promise<void> => caches.default.put(key, new Response(bytes, { headers: storedHeaders(headers, life) }));

/**
 * The client's branch of a streamed answer, stored in the cache while it streams: a slow cache may
 * fall behind the client by CACHE_LEAD_BYTES, no more. Stored only once it ended and
 * `outcome.error` stayed unset.
 */
export function storeWhileStreaming(
  stream: ReadableStream<Uint8Array>,
  key: string,
  headers: Headers,
  outcome: { readonly error?: unknown },
  life: EntryLife,
  waitUntil: (promise: Promise<unknown>) => void,
): ReadableStream<Uint8Array> {
  const [client, store] = boundedTee(stream, CACHE_LEAD_BYTES);
  waitUntil(fillWhileStreaming(key, store, storedHeaders(headers, life), outcome));
  return client;
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
 * Writes a streamed answer to the cache as it goes. Its ETag (the content hash) is known only at the
 * end, so it is stored beside the entry (rewriting the whole entry would write it twice), and that
 * record is also what says the entry is whole: an entry streamed without one is never served. An
 * answer that fails leaves a short entry, deleted once its `put` has settled (a delete that ran
 * first would leave that entry behind).
 */
async function fillWhileStreaming(
  key: string,
  body: ReadableStream<Uint8Array>,
  headers: Headers,
  outcome: { readonly error?: unknown },
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
    if (outcome.error !== undefined) throw outcome.error;
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
