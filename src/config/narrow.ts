import type { Config } from "./config.ts";

// The narrow settings each part of the worker reads, derived from the one validated configuration:
// a part that takes one of these cannot come to depend on the rest of it.

/** The edge cache's settings (CACHE_TTL_SECONDS, CACHE_STALE_SECONDS, CACHE_MAX_BYTES). */
export interface EdgeCacheSettings {
  /** How long an answer is fresh; 0 turns the cache off. */
  ttlSeconds: number;
  /** After the TTL, how long a stale export is still served while one refresh runs. */
  staleSeconds: number;
  /** Streamed exports estimated above this are not stored. */
  maxBytes: number;
}

export const edgeCacheSettings = (config: Config): EdgeCacheSettings => ({
  ttlSeconds: config.cacheTtlSeconds,
  staleSeconds: config.cacheStaleSeconds,
  maxBytes: config.cacheMaxBytes,
});

/** What the HTTP sink reads itself: how much of an export is read whole, how long a client may stall. */
export type HttpSinkSettings = Pick<Config, "bufferBytes" | "stallSeconds">;

/**
 * What the discovery answers read: the published aliases, how many CKAN calls at once, what a link
 * may name, and where anonymous actions are asked.
 */
export type DiscoverySettings = Pick<
  Config,
  "ckanBase" | "resources" | "upstreamConcurrency" | "allowUnlisted" | "maxRows" | "linkSigningKey"
>;

/** How links are handed out: signed with LINK_SIGNING_KEY, valid for SNAPSHOT_LINK_TTL_SECONDS. */
export type LinkSettings = Pick<Config, "linkSigningKey" | "snapshotLinkTtlSeconds">;

/** The secrets no answer may quote (see log/redact.ts). */
export type Secrets = Pick<Config, "apiToken" | "adminToken" | "linkSigningKey">;
