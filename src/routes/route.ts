import type { UpstreamFetch } from "../ckan/types.ts";
import type { Config } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import type { RequestInfo } from "../http/request-log.ts";
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

/** What a handler gets: the request, its parsed configuration, and the worker around it. */
export interface RouteContext {
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

/**
 * One endpoint (or a small family under one path pattern): what the router registers and what
 * /openapi.json says of it, side by side so neither can forget the other.
 */
export interface Route {
  methods: readonly Method[];
  /** itty-router's pattern: `/resources/:alias`, `/export.:format`. */
  path: string;
  /** Checked in this order before `handle`; none: the route is open. */
  guards: readonly Guard[];
  /** The response's validators (ETag, Last-Modified) answer the request's preconditions: 304 or 412 instead of the body. */
  conditional?: boolean;
  /** An error of this route answered its own way (the export's `#ERROR` table); rethrown for the one JSON shape otherwise. */
  answerError?: (error: unknown, context: RouteContext) => Response;
  handle(context: RouteContext): Promise<Response> | Response;
  /** The OpenAPI paths this route serves (a pattern may serve several, one per format), by method. */
  openapi: () => Record<string, Operations>;
}
