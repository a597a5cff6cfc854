import { contentEtag } from "../protocol/conditional.ts";
import { cacheKey } from "../protocol/cache-key.ts";
import type { Config } from "../config/config.ts";
import { redactorOf } from "../log/redact.ts";

/**
 * A discovery answer, kept in the edge cache like exports (CACHE_TTL_SECONDS; 0: not kept): the page
 * asks for a resource's columns and values each time someone picks it, and each probe costs CKAN a
 * scan. The key holds the settings that shape the answer, so a settings change (another site, an alias
 * moved to another table) never serves an old answer. With signing on the answer is for operators: never stored where a proxy could share it.
 * An answer that `carriesError` is neither stored nor cacheable downstream.
 */
export async function cachedJson(
  url: URL,
  config: Config,
  build: () => Promise<unknown>,
  fresh: boolean,
  carriesError: (answer: unknown) => boolean = () => false,
): Promise<Response> {
  const ttl = config.cacheTtlSeconds;
  const operatorsOnly = config.linkSigningKey !== undefined;
  // What each alias stands for shapes every discovery answer.
  const key = cacheKey(url, config, [[...config.resources]]);
  if (ttl > 0 && !operatorsOnly && !fresh) {
    const hit = await caches.default.match(key);
    if (hit !== undefined) {
      const headers = new Headers(hit.headers);
      headers.set("x-cache", "HIT");
      return new Response(hit.body, { headers });
    }
  }
  const built = await build();
  // An answer that says CKAN failed (a per-alias error) is never kept: it would outlive the failure.
  const failed = carriesError(built);
  const storable = ttl > 0 && !operatorsOnly && !failed;
  const headers = new Headers({
    "content-type": "application/json; charset=utf-8",
    "cache-control": operatorsOnly || failed ? "private, no-store" : ttl > 0 ? `public, max-age=${ttl}` : "no-cache",
  });
  // CKAN's words (titles, descriptions, column names, per-alias errors) are quoted: no piece of a secret goes with them.
  const redact = redactorOf([config.apiToken, config.adminToken, config.linkSigningKey]);
  const body = new Uint8Array(new TextEncoder().encode(redact(JSON.stringify(built, null, 2))));
  headers.set("etag", await contentEtag(body));
  if (storable) {
    headers.set("x-cache", "MISS");
    await caches.default.put(key, new Response(body, { headers }));
  }
  // Its ETag answers If-None-Match in the route's pipeline (the route is conditional).
  return new Response(body, { headers });
}
