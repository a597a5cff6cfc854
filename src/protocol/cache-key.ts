import type { Config } from "../config/config.ts";
import { canonicalLink } from "./canonical-link.ts";

/**
 * Bumped whenever a release changes what an answer's bytes are for the same link and settings, so
 * an entry written by an older release is never served by a newer one.
 */
const OUTPUT_REVISION = "4";

/**
 * The one edge-cache key, for exports and discovery alike: the route plus its canonical query, so
 * reordered parameters, signatures, expiries and `_` cache busters share one entry; plus every
 * setting that shapes the answer, so a changed setting never serves an old entry: the CKAN site,
 * MAX_ROWS, whether a token is set (what private data is readable; never the token itself), the
 * allow-list rule, the output revision, and what the route adds (the resource an alias stands for
 * today, or every alias).
 */
export function cacheKey(
  url: URL,
  config: Pick<Config, "datastoreSearchUrl" | "maxRows" | "apiToken" | "allowUnlisted">,
  shapedBy: readonly unknown[],
): string {
  const params = new URLSearchParams([...url.searchParams].filter(([name]) => name !== "exp"));
  const settings = [
    config.datastoreSearchUrl,
    config.maxRows,
    config.apiToken !== undefined,
    config.allowUnlisted,
    OUTPUT_REVISION,
    ...shapedBy,
  ];
  params.set("~settings", JSON.stringify(settings));
  return `${url.origin}${canonicalLink(url.pathname, params)}`;
}
