import type { Config } from "../config/config.ts";

const EXPOSED =
  "X-Total-Count, Content-Disposition, Content-Length, X-Cache, X-Request-Id, Retry-After, X-Aggregated-By";

/**
 * Cross-origin reads for dashboards. With a list of origins, an origin not on it gets no
 * Access-Control-Allow-Origin, so the browser refuses to hand the response to its page.
 */
export function corsHeaders(request: Request, config: Pick<Config, "corsOrigins"> | undefined): Record<string, string> {
  const allowed = config?.corsOrigins ?? "*";
  const origin = request.headers.get("origin");
  if (allowed === "*") return { "access-control-allow-origin": "*", "access-control-expose-headers": EXPOSED };
  const headers: Record<string, string> = { vary: "Origin" };
  if (origin !== null && allowed.has(origin)) {
    headers["access-control-allow-origin"] = origin;
    headers["access-control-expose-headers"] = EXPOSED;
  }
  return headers;
}

/** The answer to a CORS preflight: what a page may send; the origin check is corsHeaders'. */
export function preflight(request: Request): Response {
  return new Response(null, {
    status: 204,
    headers: {
      "access-control-allow-methods": "GET, HEAD, OPTIONS",
      "access-control-allow-headers": request.headers.get("access-control-request-headers") ?? "Range, If-None-Match",
      "access-control-max-age": "86400",
    },
  });
}
