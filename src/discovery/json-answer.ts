import type { Redact } from "../log/redact.ts";
import { contentEtag } from "../protocol/conditional.ts";
import type { Keep } from "../protocol/keep.ts";

/**
 * A discovery answer as JSON, handed to the route's keeper: whether it is kept in the edge cache, and
 * for how long, is the route's cache policy (routes/cache-policy.ts). The page asks for a resource's
 * columns and values each time someone picks it, and each probe costs CKAN a scan. An answer that
 * `carriesError` (CKAN failed for an alias) is kept by no cache: it would outlive the failure.
 */
export async function jsonAnswer(
  built: unknown,
  redact: Redact,
  keep: Keep,
  carriesError: (answer: unknown) => boolean = () => false,
): Promise<Response> {
  if (carriesError(built)) keep.failed();
  const headers = new Headers({ "content-type": "application/json; charset=utf-8" });
  // CKAN's words (titles, descriptions, column names, per-alias errors) are quoted: no piece of a secret goes with them.
  const body = new Uint8Array(new TextEncoder().encode(redact(JSON.stringify(built, null, 2))));
  // Its ETag answers If-None-Match in the route's pipeline (the route is conditional).
  headers.set("etag", await contentEtag(body));
  // Stored before it is sent: the page's next request finds it.
  await keep.whole(body, headers);
  return new Response(body, { headers });
}
