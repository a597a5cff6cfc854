/**
 * Environment for a `wrangler dev` that never reaches out: no telemetry, and no download of the
 * `Request.cf` placeholder (offline, that fetch fails and prints a stack trace).
 */
export const OFFLINE_WRANGLER = {
  WRANGLER_SEND_METRICS: "false",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
} as const;
