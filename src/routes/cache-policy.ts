import { edgeCacheSettings, type EdgeCacheSettings } from "../config/narrow.ts";
import { cachedAnswer, refreshOnce, storeWhileStreaming, storeWhole, type EntryLife } from "../http/edge-cache.ts";
import { newRequestInfo } from "../http/request-log.ts";
import { cacheKey } from "../protocol/cache-key.ts";
import type { Keep } from "../protocol/keep.ts";
import type { CachePolicy, RequestContext, Route } from "./route.ts";

// A route's cache policy (see CachePolicy), applied around its handler: every Cache-Control and
// X-Cache a route answers with, and every edge-cache read and write, is decided here.

/** What clients may not keep: an operator's answer, or one that reports a failure. */
const PRIVATE = "private, no-store";

/** The client asked to skip caches (a refresh): serve from upstream and refill. */
const wantsFresh = (request: Request): boolean =>
  /no-cache|no-store|max-age=0/i.test(request.headers.get("cache-control") ?? "") ||
  /no-cache/i.test(request.headers.get("pragma") ?? "");

/** What clients are told of an edge-cached answer: fresh for the TTL, then stale-while-revalidate for the stale window. */
const publicFor = (life: EntryLife): string =>
  `public, max-age=${life.ttlSeconds}${life.staleSeconds > 0 ? `, stale-while-revalidate=${life.staleSeconds}` : ""}`;

type Sent = { stream: ReadableStream<Uint8Array>; shared: boolean };

/** A keeper that keeps nothing, but hears whether the answer reports a failure. */
class Discard implements Keep {
  readonly stores: boolean = false;
  reportsFailure = false;
  failed(): void {
    this.reportsFailure = true;
  }
  whole(_bytes: Uint8Array<ArrayBuffer>, _headers: Headers): Promise<void> {
    return Promise.resolve();
  }
  streamed(stream: ReadableStream<Uint8Array>, ..._rest: unknown[]): Sent {
    return { stream, shared: false };
  }
}

/** The edge cache's keeper for one key: whole answers, and streamed ones up to CACHE_MAX_BYTES. */
class EdgeKeep extends Discard {
  override readonly stores = true;
  readonly #key: string;
  readonly #life: EntryLife;
  readonly #maxBytes: number;
  readonly #waitUntil: (promise: Promise<unknown>) => void;

  constructor(key: string, life: EntryLife, maxBytes: number, waitUntil: (promise: Promise<unknown>) => void) {
    super();
    this.#key = key;
    this.#life = life;
    this.#maxBytes = maxBytes;
    this.#waitUntil = waitUntil;
  }

  override whole(bytes: Uint8Array<ArrayBuffer>, headers: Headers): Promise<void> {
    if (this.reportsFailure) return Promise.resolve();
    const stored = storeWhole(this.#key, bytes, headers, this.#life);
    this.#waitUntil(stored);
    return stored;
  }

  override streamed(
    stream: ReadableStream<Uint8Array>,
    estimate: number,
    headers: Headers,
    outcome: { readonly error?: unknown },
    clientBranch: (branch: ReadableStream<Uint8Array>) => ReadableStream<Uint8Array> = (branch) => branch,
  ): Sent {
    if (this.reportsFailure) return { stream, shared: false };
    if (estimate > this.#maxBytes) {
      headers.set("x-cache-note", `not stored: about ${Math.round(estimate)} bytes, more than CACHE_MAX_BYTES`);
      return { stream, shared: false };
    }
    const kept = storeWhileStreaming(stream, this.#key, headers, outcome, this.#life, this.#waitUntil);
    return { stream: clientBranch(kept), shared: true };
  }
}

/** The route's answer, with what its cache policy says of it. */
export async function answerWithCachePolicy<I>(route: Route<I>, context: RequestContext, input: I): Promise<Response> {
  const policy = route.cache;
  if (policy.kind === "edge") return throughEdgeCache(route, policy, context, input);
  const keep = new Discard();
  const response = await route.handle({ ...context, keep, refresh: false }, input);
  const control = clientCacheControl(policy, context, response, keep.reportsFailure);
  if (control !== undefined) response.headers.set("cache-control", control);
  return response;
}

/** Cache-Control for a route the edge cache does not keep; undefined: the answer's own stands. */
function clientCacheControl(
  policy: Exclude<CachePolicy, { kind: "edge" }>,
  context: RequestContext,
  response: Response,
  reportsFailure: boolean,
): string | undefined {
  switch (policy.kind) {
    case "unset":
      return undefined;
    case "no-store":
    case "no-cache":
      return policy.kind;
    case "max-age":
      return (policy.operatorsOnly && context.config.linkSigningKey !== undefined) ||
        response.status !== 200 ||
        reportsFailure
        ? PRIVATE
        : `public, max-age=${policy.seconds}`;
    case "stored":
      // A moving name (`latest`) gets a short life instead of the immutable one its dated file was stored with.
      return policy.moving(context) && response.headers.has("cache-control")
        ? `public, max-age=${policy.seconds}`
        : undefined;
  }
}

type EdgePolicy<I> = Extract<CachePolicy<I>, { kind: "edge" }>;

/**
 * An edge-cached route: the stored answer when there is one (stale ones refreshed in the background,
 * once per isolate), else the handler's, stored as its keeper is told. Off (CACHE_TTL_SECONDS=0) or
 * for operators only (signing on), the answer is the handler's, kept by no cache of ours.
 */
async function throughEdgeCache<I>(
  route: Route<I>,
  policy: EdgePolicy<I>,
  context: RequestContext,
  input: I,
): Promise<Response> {
  const settings = edgeCacheSettings(context.config);
  const operatorsOnly = policy.operatorsOnly === true && context.config.linkSigningKey !== undefined;
  if (settings.ttlSeconds === 0 || operatorsOnly) {
    const keep = new Discard();
    const response = await route.handle({ ...context, keep, refresh: false }, input);
    const failed = operatorsOnly || keep.reportsFailure || response.status !== 200;
    response.headers.set("cache-control", failed ? PRIVATE : "no-cache");
    return response;
  }
  const life: EntryLife = {
    ttlSeconds: settings.ttlSeconds,
    staleSeconds: policy.staleWhileRevalidate ? settings.staleSeconds : 0,
  };
  const key = cacheKey(context.url, context.config, policy.shapedBy(input, context));
  if (!wantsFresh(context.request)) {
    const cached = await cachedAnswer(key, context.request, life);
    if (cached !== undefined) {
      if (cached.stale) refreshOnce(key, () => refill(route, context, input, key, life, settings), context.waitUntil);
      cached.response.headers.set("cache-control", publicFor(life));
      cached.response.headers.set("x-cache", cached.stale ? "STALE" : "HIT");
      return cached.response;
    }
  }
  const keep = new EdgeKeep(key, life, settings.maxBytes, context.waitUntil);
  const response = await route.handle({ ...context, keep, refresh: false }, input);
  if (keep.reportsFailure || response.status !== 200) {
    response.headers.set("cache-control", PRIVATE);
    return response;
  }
  response.headers.set("cache-control", publicFor(life));
  response.headers.set("x-cache", "MISS");
  return response;
}

/** A stale entry's refresh: the handler's whole answer read to its end, which stores itself. */
async function refill<I>(
  route: Route<I>,
  context: RequestContext,
  input: I,
  key: string,
  life: EntryLife,
  settings: EdgeCacheSettings,
): Promise<void> {
  const keep = new EdgeKeep(key, life, settings.maxBytes, context.waitUntil);
  const response = await route.handle({ ...context, keep, info: newRequestInfo(), refresh: true }, input);
  await response.body?.pipeTo(new WritableStream());
}
