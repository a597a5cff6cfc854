import { siteFor } from "../ckan/site.ts";
import type { LinkSettings } from "../config/narrow.ts";
import type { DiscoveryDeps } from "../discovery/resources.ts";
import { signedPath } from "../security/signature.ts";
import type { RequestContext } from "./route.ts";

// What routes hand out or pass on about links; the guards themselves are declared on each route
// and run by routes/pipeline.ts.

/** Links to hand out: signed, expiring after SNAPSHOT_LINK_TTL_SECONDS, when the worker only honours signed links. */
export const linkMaker =
  (config: LinkSettings, origin: string) =>
  async (path: string): Promise<string> =>
    origin +
    (config.linkSigningKey === undefined
      ? path
      : await signedPath(config.linkSigningKey, path, Math.floor(Date.now() / 1000) + config.snapshotLinkTtlSeconds));

/** What the discovery routes read: their settings, the CKAN site, and links as this worker hands them out. */
export function discoveryDeps({ config, deps, url }: RequestContext): DiscoveryDeps {
  return {
    settings: config,
    site: siteFor(config, deps.upstreamFetch),
    upstreamFetch: deps.upstreamFetch,
    origin: url.origin,
    link: linkMaker(config, url.origin),
  };
}
