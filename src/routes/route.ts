import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import type { RequestInfo } from "../http/request-log.ts";
import type { Keep } from "../protocol/keep.ts";
import type { Operations } from "./openapi-parts.ts";

/** A request as the router hands it on: itty-router sets the path's named parts on it. */
export type RoutedRequest = Request & { params: Record<string, string> };

export type Method = "GET" | "HEAD" | "POST" | "DELETE";

export interface AppDeps {
  /** How the worker reaches CKAN: global fetch in production, the emulator or a stub in tests. */
  upstreamFetch: UpstreamFetch;
}

/**
 * A check a route declares, run in the declared order before its handler (routes/pipeline.ts):
 * - `signed link`: a valid `sig` when LINK_SIGNING_KEY is set;
 * - `operators when signing`: the admin token when LINK_SIGNING_KEY is set (what would reveal what exists);
 * - `admin token`: the admin token, always;
 * - `rate limit`: the Workers rate limiter, keyed by the verified link or the address.
 */
export type Guard = "signed link" | "operators when signing" | "admin token" | "rate limit";

/**
 * How a route's answers may be kept, applied by routes/cache-policy.ts around the handler (no handler
 * or sink sets Cache-Control or reads the edge cache itself). An answer that is not a 200, or whose
 * handler says it reports an upstream failure (`keep.failed()`), is `private, no-store` and never
 * stored, where the policy would otherwise let a cache keep it.
 * - `no-store`: kept nowhere (answers that change each second, or hand out signed links);
 * - `no-cache`: a client may keep it but asks again each time;
 * - `max-age`: public for `seconds`; `operatorsOnly`: private, no-store when LINK_SIGNING_KEY is set;
 * - `stored`: the R2 object's own Cache-Control, but `seconds` for what `moving` names (`latest`);
 * - `edge`: kept in the edge cache for CACHE_TTL_SECONDS (off at 0: `no-cache`), keyed by the
 *   canonical link and the settings plus what `shapedBy` adds; `staleWhileRevalidate`: served stale
 *   for CACHE_STALE_SECONDS while one refresh runs; `operatorsOnly` as above;
 * - `unset`: says nothing (the static page's own headers stand).
 */
export type CachePolicy<I = unknown> =
  | { kind: "no-store" | "no-cache" | "unset" }
  | { kind: "max-age"; seconds: number; operatorsOnly?: boolean }
  | { kind: "stored"; seconds: number; moving(context: RequestContext): boolean }
  | {
      kind: "edge";
      shapedBy(input: I, context: RequestContext): readonly unknown[];
      staleWhileRevalidate: boolean;
      operatorsOnly?: boolean;
    };

/** What each step of a route gets: the request, its parsed configuration, and the worker around it. */
export interface RequestContext {
  request: RoutedRequest;
  url: URL;
  env: Env;
  config: Config;
  deps: AppDeps;
  info: RequestInfo;
  waitUntil: (promise: Promise<unknown>) => void;
  /** The whole table, for the routes that describe it (/openapi.json, the not-found answer). */
  routes: readonly Route[];
}

/** What a handler gets: the request's context, and what its route's cache policy chose for it. */
export interface RouteContext extends RequestContext {
  /** Where the handler hands its answer for the cache its route's policy chose (routes/cache-policy.ts). */
  keep: Keep;
  /**
   * A refresh of a stale edge-cache entry, run after the stale answer left: nobody waits on it, so it
   * reads the whole answer (even for a HEAD) and takes no client's place.
   */
  refresh: boolean;
}

/**
 * One endpoint (or a small family under one path pattern): what the router registers and what
 * /openapi.json says of it, side by side so neither can forget the other.
 */
export interface Route<I = unknown> {
  methods: readonly Method[];
  /** itty-router's pattern: `/resources/:alias`, `/export.:format`. */
  path: string;
  /** Checked in this order before `handle`; none: the route is open. */
  guards: readonly Guard[];
  /** The response's validators (ETag, Last-Modified) answer the request's preconditions: 304 or 412 instead of the body. */
  conditional?: boolean;
  /** How its answers may be kept: the edge cache, a client's cache, or none. */
  cache: CachePolicy<I>;
  /** An error of this route answered its own way (the export's `#ERROR` table); rethrown for the one JSON shape otherwise. */
  answerError?: (error: unknown, context: RequestContext) => Response;
  /** The request's validated input (the export query), read once after the guards, before any cache. */
  input?(context: RequestContext): I;
  handle(context: RouteContext, input: I): Promise<Response> | Response;
  /** The OpenAPI paths this route serves (a pattern may serve several, one per format), by method. */
  openapi: () => Record<string, Operations>;
}
