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
  handle(context: RouteContext): Promise<Response> | Response;
  /** The OpenAPI paths this route serves (a pattern may serve several, one per format), by method. */
  openapi: () => Record<string, Operations>;
}
