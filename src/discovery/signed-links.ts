import type { Config } from "../config/config.ts";
import { badRequest, HttpError } from "../errors.ts";
import { parseAggregateQuery } from "../aggregate/query.ts";
import { parseExportQuery, type QueryConfig } from "../query/export-query.ts";
import { isFormatName } from "../query/formats.ts";
import { signedPath } from "../security/signature.ts";

/** What signing a link reads: the key, and what checking the link it signs reads (an aggregate's MAX_GROUPS too). */
type SigningSettings = QueryConfig & Pick<Config, "linkSigningKey" | "maxGroups">;

/** Ten years: a longer expiry is a link that never expires, which is what leaving it out says. */
const MAX_EXPIRY_SECONDS = 10 * 365 * 24 * 3600;

/**
 * What may be signed, for POST /links and `npm run sign` alike: an export link the worker would
 * serve (the one query parser's 400s, e.g. `limit=ten`) or a snapshot file. Drops any old sig and exp.
 */
export function checkLinkToSign(url: URL, config: SigningSettings): void {
  url.searchParams.delete("sig");
  url.searchParams.delete("exp");
  const [, kind, format] = /^\/(export|aggregate)\.([a-z]+)$/.exec(url.pathname) ?? [];
  if (format !== undefined && isFormatName(format))
    (kind === "aggregate" ? parseAggregateQuery : parseExportQuery)(url.searchParams, format, config);
  else if (!/^\/snapshots\/[^/]+\/[^/]+$/.test(url.pathname) || /\/run$/.test(url.pathname)) {
    throw badRequest(
      "link",
      "Only export and aggregate links (/export.<format>?..., /aggregate.<format>?...) and snapshot files (/snapshots/<name>/<file>) are signed.",
    );
  }
}

/**
 * POST /links (operators, after the admin check): signs an export or snapshot link, with an expiry in
 * seconds or none, the way `npm run sign` does. An export link is checked first, so the operator gets
 * the 400 now rather than the person they hand the link to.
 */
export async function signLinkRoute(request: Request, config: SigningSettings, now = Date.now()): Promise<Response> {
  const key = config.linkSigningKey;
  if (key === undefined) {
    throw new HttpError(
      404,
      "This worker does not sign links (LINK_SIGNING_KEY is not set): its links work as they are.",
    );
  }
  let body: { link?: unknown; expires_in?: unknown };
  try {
    body = (await request.json()) as typeof body;
  } catch {
    throw badRequest("link", 'The body must be JSON: {"link": "/export.csv?resource=...", "expires_in": 86400}.');
  }
  if (typeof body.link !== "string" || body.link.length > 8192)
    throw badRequest("link", "link must be the link to sign: a path with its query, or a URL on this worker.");
  const origin = new URL(request.url).origin;
  let url: URL;
  try {
    url = new URL(body.link, origin);
  } catch {
    throw badRequest("link", "link is not a path or URL.");
  }
  if (url.origin !== origin) throw badRequest("link", `link must point at this worker (${origin}).`);
  checkLinkToSign(url, config);
  let expires: number | undefined;
  if (body.expires_in !== undefined && body.expires_in !== null) {
    const seconds = body.expires_in;
    if (typeof seconds !== "number" || !Number.isSafeInteger(seconds) || seconds < 60 || seconds > MAX_EXPIRY_SECONDS) {
      throw badRequest(
        "expires_in",
        `expires_in must be whole seconds from 60 to ${MAX_EXPIRY_SECONDS}, or left out for a link that does not expire.`,
      );
    }
    expires = Math.floor(now / 1000) + seconds;
  }
  const signed = await signedPath(key, `${url.pathname}${url.search}`, expires);
  return Response.json({
    link: origin + signed,
    expires: expires === undefined ? null : new Date(expires * 1000).toISOString(),
  });
}
