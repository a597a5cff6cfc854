import type { Config } from "../config/config.ts";
import type { DiscoveryDeps } from "../discovery/resources.ts";
import { requireAdmin } from "../security/admin.ts";
import { requireSignedLink } from "../security/links.ts";
import { enforceRateLimit } from "../security/rate-limit.ts";
import { signedPath } from "../security/signature.ts";
import type { RouteContext } from "./route.ts";

/** Links to hand out: signed, expiring after SNAPSHOT_LINK_TTL_SECONDS, when the worker only honours signed links. */
export const linkMaker = (config: Config, origin: string) => async (path: string): Promise<string> =>
  origin +
  (config.linkSigningKey === undefined
    ? path
    : await signedPath(config.linkSigningKey, path, Math.floor(Date.now() / 1000) + config.snapshotLinkTtlSeconds));

/** Links (exports and snapshot files): signature, then rate limit (a verified sig is a key), before any work. */
export async function guardLink({ request, url, env, config }: RouteContext): Promise<void> {
  await requireSignedLink(url, config);
  // Verified just now (when signing is on): the one place a signature may key the rate limit.
  await enforceRateLimit(request, env, config, url.searchParams.get("sig") ?? undefined);
}

/** With signing on, what would reveal what exists (discovery, the snapshot list, health) is for operators. */
export async function guardOperatorsWhenSigning({ request, config }: RouteContext): Promise<void> {
  if (config.linkSigningKey !== undefined) await requireAdmin(request, config);
}

/** Discovery: for operators when signing is on; rate-limited like links. */
export async function guardDiscovery(context: RouteContext): Promise<DiscoveryDeps> {
  const { request, env, config, deps, url } = context;
  await guardOperatorsWhenSigning(context);
  await enforceRateLimit(request, env, config);
  return { config, upstreamFetch: deps.upstreamFetch, origin: url.origin, link: linkMaker(config, url.origin) };
}
