/** Bindings and variables, as wrangler.toml, `--var` and secrets deliver them. */
export interface Env {
  /** CKAN site base, may include a mount prefix and language segment (`https://open.canada.ca/data/en`). */
  CKAN_BASE_URL?: string;
  /** Secret. Sent raw in `Authorization` to the datastore_search URL (and datastore_search_sql beside it) and nowhere else. */
  CKAN_API_TOKEN?: string;
  /** alias -> resource UUID: a TOML table from wrangler.toml or a JSON string from `--var`/the dashboard. */
  RESOURCES?: unknown;
  /** Most rows one export may return (default 1000000). */
  MAX_ROWS?: string;
  /** Most groups one aggregate keeps (default 100000). */
  MAX_GROUPS?: string;
  /** Rows per upstream page (default and maximum 32000, CKAN's rows_max). */
  PAGE_SIZE?: string;
  /** Seconds before an upstream call is abandoned (default 30). */
  UPSTREAM_TIMEOUT_SECONDS?: string;
  /** Retries after a network error, 429 or 5xx (default 3). */
  UPSTREAM_RETRIES?: string;
  /** Base delay of the exponential retry backoff, in milliseconds (default 500). */
  UPSTREAM_RETRY_BASE_MS?: string;
  /** Exports whose estimated size is below this many bytes are buffered and sent with Content-Length. */
  BUFFER_BYTES?: string;
  /** R2 bucket the cron trigger writes snapshots to. */
  SNAPSHOTS?: R2Bucket;
  /** Snapshot jobs: a JSON array (or TOML array of tables). */
  SNAPSHOT_JOBS?: unknown;
  /** Size of each multipart part of a large snapshot (default 8 MiB, at least 5 MiB). */
  SNAPSHOT_PART_BYTES?: string;
  /** Bytes one step of a snapshot run (a Workflow) writes before the next step goes on (default 64 MiB). */
  SNAPSHOT_STEP_BYTES?: string;
  /** The Workflow that runs snapshot jobs, one instance per run (`[[workflows]]`); optional. */
  SNAPSHOT_RUNS?: Workflow;
  /** Secret. Lets an operator run a snapshot job now: POST /snapshots/<name>/run. */
  ADMIN_TOKEN?: string;
  /** Secret. When set, every export and snapshot link must carry a valid HMAC `sig`. */
  LINK_SIGNING_KEY?: string;
  /** Seconds a signed snapshot link from GET /snapshots stays valid (default 7 days). */
  SNAPSHOT_LINK_TTL_SECONDS?: string;
  /** "true"/"false": may links name resources outside RESOURCES? Default: only without a token. */
  ALLOW_UNLISTED_RESOURCES?: string;
  /** `*` (default) or a comma-separated list of origins allowed to read responses in a browser. */
  CORS_ALLOW_ORIGINS?: string;
  /** Workers Rate Limiting binding (`[[ratelimits]]`); optional. */
  RATE_LIMITER?: RateLimit;
  /** Pages fetched at once when the total is known and paging is by offset (default 3). */
  UPSTREAM_CONCURRENCY?: string;
  /** Upstream requests one export may make (default 10000, Workers Paid; 50 on Workers Free). */
  SUBREQUEST_LIMIT?: string;
  /** "false" turns off the CSV pass-through (CKAN's CSV pages rewritten instead of rows re-encoded). */
  CSV_PASSTHROUGH?: string;
  /** "false" turns off the JSON pass-through (CKAN's CSV pages written as JSON from their bytes instead of rows re-encoded). */
  JSON_PASSTHROUGH?: string;
  /** Seconds a small export is kept in the edge cache (default 300; 0 turns caching off). */
  CACHE_TTL_SECONDS?: string;
  /** After the TTL, seconds a cached export is still served (marked STALE) while one refresh runs (default 3600). */
  CACHE_STALE_SECONDS?: string;
  /** Exports estimated above this many bytes stream without being cached (default 64 MiB). */
  CACHE_MAX_BYTES?: string;
  /** Workers Static Assets (`[assets]`): the link-builder page under public/. */
  ASSETS?: Fetcher;
  /** The binding's period, for Retry-After (default 60). */
  RATE_LIMIT_PERIOD_SECONDS?: string;
  /** Seconds a download may make no progress (its client not reading) before it is stopped (default 30). */
  STALL_SECONDS?: string;
}
