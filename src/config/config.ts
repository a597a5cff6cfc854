import type { Env } from "./env.ts";
import { HttpError } from "../errors.ts";
import { configError } from "../errors.ts";
import { integerSetting, structuredSetting, UUID_PATTERN } from "./settings.ts";

/** Everything the worker reads from its environment, validated once. */
export interface Config {
  /** CKAN_BASE_URL without a trailing slash: where the other actions (status_show, resource_show) are asked, anonymously. */
  ckanBase: string;
  /** `${CKAN_BASE_URL}/api/action/datastore_search`: the only URL that ever sees the token. */
  datastoreSearchUrl: string;
  apiToken: string | undefined;
  /** alias -> resource UUID */
  resources: ReadonlyMap<string, string>;
  maxRows: number;
  /** Groups one aggregate keeps in memory, at most (MAX_GROUPS). */
  maxGroups: number;
  pageSize: number;
  upstreamTimeoutMs: number;
  upstreamRetries: number;
  retryBaseMs: number;
  bufferBytes: number;
  /** SNAPSHOT_JOBS as given: snapshot/jobs.ts validates it against the rest of this configuration. */
  snapshotJobs: unknown;
  snapshotPartBytes: number;
  /** Bytes one step of a snapshot run writes before it hands on (see snapshot/format-steps.ts). */
  snapshotStepBytes: number;
  adminToken: string | undefined;
  linkSigningKey: string | undefined;
  /** How long a signed snapshot link handed out by GET /snapshots stays valid. */
  snapshotLinkTtlSeconds: number;
  /** Whether a link may name a resource that RESOURCES does not list. */
  allowUnlisted: boolean;
  /** "*" or the exact origins allowed. */
  corsOrigins: "*" | ReadonlySet<string>;
  rateLimitPeriodSeconds: number;
  /** Seconds a download may wait on its client without progress before it is stopped (0: never, for R2 sinks). */
  stallSeconds: number;
  upstreamConcurrency: number;
  /** Ask CKAN for CSV pages and rewrite them, instead of parsing rows (CSV and TSV with the decimal point). */
  csvPassthrough: boolean;
  /** Ask CKAN for CSV pages and write them as JSON or NDJSON from their bytes, instead of parsing rows. */
  jsonPassthrough: boolean;
  /** Upstream requests one export may make: the Workers plan's subrequest limit. */
  subrequestLimit: number;
  /** Edge-cache lifetime of an export; 0 turns the cache off. */
  cacheTtlSeconds: number;
  /** After the TTL, how long a cached export is still served while one refresh runs. */
  cacheStaleSeconds: number;
  /** Exports estimated above this are streamed without being cached. */
  cacheMaxBytes: number;
}

/** The smallest part R2 accepts in a multipart upload, except the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;

/** CKAN's default `ckan.datastore.search.rows_max`; a larger page is silently capped upstream. */
export const CKAN_ROWS_MAX = 32000;

function baseUrl(value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") throw configError("CKAN_BASE_URL", "is missing");
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw configError("CKAN_BASE_URL", "is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw configError("CKAN_BASE_URL", "must be an http or https URL");
  }
  if (url.search || url.hash || url.username || url.password) {
    throw configError("CKAN_BASE_URL", "must be a plain site base without query, fragment or credentials");
  }
  return url.href.replace(/\/+$/, "");
}

function booleanSetting(setting: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined || value === "") return fallback;
  const text = String(value).trim().toLowerCase();
  if (text === "true") return true;
  if (text === "false") return false;
  throw configError(setting, "must be true or false");
}

function corsOrigins(value: unknown): "*" | Set<string> {
  if (value === undefined || String(value).trim() === "" || String(value).trim() === "*") return "*";
  const origins = new Set<string>();
  for (const item of String(value).split(",")) {
    const text = item.trim();
    let origin: string;
    try {
      origin = new URL(text).origin;
    } catch {
      throw configError(
        "CORS_ALLOW_ORIGINS",
        `has "${text.slice(0, 80)}", which is not an origin like https://dash.example.org`,
      );
    }
    if (origin === "null" || origin !== text.replace(/\/$/, "")) {
      throw configError(
        "CORS_ALLOW_ORIGINS",
        `has "${text.slice(0, 80)}", which is not an origin like https://dash.example.org (no path)`,
      );
    }
    origins.add(origin);
  }
  return origins;
}

function resources(value: unknown): Map<string, string> {
  const map = new Map<string, string>();
  if (value === undefined || value === "") return map;
  const parsed = structuredSetting("RESOURCES", value);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw configError("RESOURCES", "must be an object of alias -> resource UUID");
  }
  for (const [alias, id] of Object.entries(parsed)) {
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(alias)) {
      throw configError("RESOURCES", `has an alias "${alias}" that is not a simple name (letters, digits, _ . -)`);
    }
    if (typeof id !== "string" || !UUID_PATTERN.test(id)) {
      throw configError("RESOURCES", `maps "${alias}" to something that is not a resource UUID`);
    }
    map.set(alias, id.toLowerCase());
  }
  return map;
}

const secret = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;

export function parseConfig(env: Env): Config {
  const ckanBase = baseUrl(env.CKAN_BASE_URL);
  return {
    ckanBase,
    datastoreSearchUrl: `${ckanBase}/api/action/datastore_search`,
    apiToken: secret(env.CKAN_API_TOKEN),
    resources: resources(env.RESOURCES),
    maxRows: integerSetting("MAX_ROWS", env.MAX_ROWS, 1_000_000, 1, Number.MAX_SAFE_INTEGER),
    maxGroups: integerSetting("MAX_GROUPS", env.MAX_GROUPS, 100_000, 1, 10_000_000),
    pageSize: integerSetting("PAGE_SIZE", env.PAGE_SIZE, CKAN_ROWS_MAX, 1, CKAN_ROWS_MAX),
    upstreamTimeoutMs: 1000 * integerSetting("UPSTREAM_TIMEOUT_SECONDS", env.UPSTREAM_TIMEOUT_SECONDS, 30, 1, 300),
    upstreamRetries: integerSetting("UPSTREAM_RETRIES", env.UPSTREAM_RETRIES, 3, 0, 10),
    retryBaseMs: integerSetting("UPSTREAM_RETRY_BASE_MS", env.UPSTREAM_RETRY_BASE_MS, 500, 0, 60_000),
    bufferBytes: integerSetting("BUFFER_BYTES", env.BUFFER_BYTES, 8 * 1024 * 1024, 0, 64 * 1024 * 1024),
    snapshotJobs: env.SNAPSHOT_JOBS,
    snapshotPartBytes: integerSetting(
      "SNAPSHOT_PART_BYTES",
      env.SNAPSHOT_PART_BYTES,
      8 * 1024 * 1024,
      MIN_PART_BYTES,
      512 * 1024 * 1024,
    ),
    snapshotStepBytes: integerSetting(
      "SNAPSHOT_STEP_BYTES",
      env.SNAPSHOT_STEP_BYTES,
      64 * 1024 * 1024,
      1024 * 1024,
      4 * 1024 * 1024 * 1024,
    ),
    adminToken: secret(env.ADMIN_TOKEN),
    linkSigningKey: secret(env.LINK_SIGNING_KEY),
    snapshotLinkTtlSeconds: integerSetting(
      "SNAPSHOT_LINK_TTL_SECONDS",
      env.SNAPSHOT_LINK_TTL_SECONDS,
      7 * 86_400,
      60,
      366 * 86_400,
    ),
    // With a token the worker can read private data: only what RESOURCES publishes, unless told otherwise.
    allowUnlisted: booleanSetting(
      "ALLOW_UNLISTED_RESOURCES",
      env.ALLOW_UNLISTED_RESOURCES,
      secret(env.CKAN_API_TOKEN) === undefined,
    ),
    corsOrigins: corsOrigins(env.CORS_ALLOW_ORIGINS),
    // Workers allow 6 simultaneous open connections; leave room for the response and R2.
    upstreamConcurrency: integerSetting("UPSTREAM_CONCURRENCY", env.UPSTREAM_CONCURRENCY, 3, 1, 5),
    // Workers Paid allows 10,000 subrequests per request, Workers Free 50.
    subrequestLimit: integerSetting("SUBREQUEST_LIMIT", env.SUBREQUEST_LIMIT, 10_000, 5, 10_000_000),
    csvPassthrough: booleanSetting("CSV_PASSTHROUGH", env.CSV_PASSTHROUGH, true),
    jsonPassthrough: booleanSetting("JSON_PASSTHROUGH", env.JSON_PASSTHROUGH, true),
    cacheTtlSeconds: integerSetting("CACHE_TTL_SECONDS", env.CACHE_TTL_SECONDS, 300, 0, 31_536_000),
    cacheStaleSeconds: integerSetting("CACHE_STALE_SECONDS", env.CACHE_STALE_SECONDS, 3600, 0, 31_536_000),
    // The Cache API stores objects up to 512 MB; past this bound an export is not worth the write.
    cacheMaxBytes: integerSetting("CACHE_MAX_BYTES", env.CACHE_MAX_BYTES, 64 * 1024 * 1024, 0, 512 * 1024 * 1024),
    rateLimitPeriodSeconds: integerSetting("RATE_LIMIT_PERIOD_SECONDS", env.RATE_LIMIT_PERIOD_SECONDS, 60, 1, 86_400),
    stallSeconds: integerSetting("STALL_SECONDS", env.STALL_SECONDS, 30, 1, 600),
  };
}

const parsed = new WeakMap<Env, Config | HttpError>();

/** Parse once per environment object; a bad setting is remembered and reported on every request. */
export function configFor(env: Env): Config {
  let entry = parsed.get(env);
  if (entry === undefined) {
    try {
      entry = parseConfig(env);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      entry = error;
      // The message names the setting, never its value.
      console.error(
        JSON.stringify({ level: "error", event: "config", setting: error.setting, message: error.message }),
      );
    }
    parsed.set(env, entry);
  }
  if (entry instanceof HttpError) throw entry;
  return entry;
}
