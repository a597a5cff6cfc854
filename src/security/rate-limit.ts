import type { Config } from "../config.ts";
import type { Env } from "../env.ts";
import { HttpError } from "../errors.ts";

/**
 * Workers Rate Limiting, when bound: keyed by the signed link when there is one (a link shared in a
 * sheet is one budget, however many people open it), else by the client's IP.
 */
export async function enforceRateLimit(request: Request, env: Env, config: Config): Promise<void> {
  if (env.RATE_LIMITER === undefined) return;
  const url = new URL(request.url);
  const sig = url.searchParams.get("sig");
  const key = sig !== null ? `sig:${sig}` : `ip:${request.headers.get("cf-connecting-ip") ?? "unknown"}`;
  const { success } = await env.RATE_LIMITER.limit({ key });
  if (!success) {
    throw new HttpError(429, `Too many requests for this link or address; try again in ${config.rateLimitPeriodSeconds} seconds.`, {
      headers: { "retry-after": String(config.rateLimitPeriodSeconds) },
    });
  }
}
