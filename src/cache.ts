import type { Config } from "./config.ts";
import { canonicalLink } from "./security/signature.ts";

/**
 * The cache key: route plus canonical query, so reordered parameters, signatures, expiries and `_`
 * cache busters share one entry; the CKAN site is part of it, so pointing the worker elsewhere
 * never serves the old site's rows.
 */
export function cacheKey(url: URL, config: Config): string {
  const params = new URLSearchParams([...url.searchParams].filter(([name]) => name !== "exp"));
  params.set("site", config.datastoreSearchUrl);
  return `${url.origin}${canonicalLink(url.pathname, params)}`;
}

/** Where the ETag of an export stored while streaming is kept: it is known only once the bytes are. */
export const etagKey = (key: string): string => `${key}&~etag`;

/** A strong ETag: the content's own SHA-256, identical for identical bytes whoever computed it. */
export const etagOf = (sha256: ArrayBuffer): string =>
  `"${[...new Uint8Array(sha256).slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("")}"`;

export const contentEtag = async (bytes: Uint8Array<ArrayBuffer>): Promise<string> => etagOf(await crypto.subtle.digest("SHA-256", bytes));

/** RFC 9110 weak comparison is enough for 304s: a list, `*`, or W/-prefixed tags. */
export function etagMatches(ifNoneMatch: string | null, etag: string | null): boolean {
  if (ifNoneMatch === null || etag === null) return false;
  if (ifNoneMatch.trim() === "*") return true;
  const bare = etag.replace(/^W\//, "");
  return ifNoneMatch.split(",").some((tag) => tag.trim().replace(/^W\//, "") === bare);
}

/** The client asked to skip caches (a refresh): serve from upstream and refill. */
export const wantsFresh = (request: Request): boolean =>
  /no-cache|no-store|max-age=0/i.test(request.headers.get("cache-control") ?? "") || /no-cache/i.test(request.headers.get("pragma") ?? "");

/** A 304 carrying the validators and caching headers of the full response. */
export function notModified(headers: Headers): Response {
  const out = new Headers();
  for (const name of ["etag", "cache-control", "content-type", "content-disposition", "x-total-count", "x-cache", "last-modified"]) {
    const value = headers.get(name);
    if (value !== null) out.set(name, value);
  }
  return new Response(null, { status: 304, headers: out });
}
