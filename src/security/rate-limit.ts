import type { Config } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import { HttpError } from "../errors.ts";

/**
 * Workers Rate Limiting, when bound: keyed by the signed link when links are signed (a link shared
 * in a sheet is one budget, however many people open it), else by the client's IP. Only a verified
 * signature may be a key: called after the signature check, and never with signing off, or anyone
 * could mint a fresh budget per request with a made-up `sig`.
 */
export async function enforceRateLimit(request: Request, env: Env, config: Config): Promise<void> {
  if (env.RATE_LIMITER === undefined) return;
  const sig = config.linkSigningKey === undefined ? null : new URL(request.url).searchParams.get("sig");
  const key = sig !== null ? `sig:${sig}` : `ip:${request.headers.get("cf-connecting-ip") ?? "unknown"}`;
  const { success } = await env.RATE_LIMITER.limit({ key });
  if (!success) {
    throw new HttpError(429, `Too many requests for this link or address; try again in ${config.rateLimitPeriodSeconds} seconds.`, {
      headers: { "retry-after": String(config.rateLimitPeriodSeconds) },
    });
  }
}
