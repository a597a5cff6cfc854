import type { Config } from "../config/config.ts";
import type { Env } from "../config/env.ts";
import { TooManyRequests } from "../errors.ts";

/** The client a request comes from, as Cloudflare's edge names it. */
export const clientOf = (request: Request): string => request.headers.get("cf-connecting-ip") ?? "unknown";

/**
 * Workers Rate Limiting, when bound: keyed by the signed link when links are signed (a link shared
 * in a sheet is one budget, however many people open it), else by the client's IP. Only a verified
 * signature may be a key: `verifiedSig` is given only by the guard that has just checked it, so a
 * made-up `sig` on any route (an unsigned one such as /openapi.json included) is never a fresh budget.
 */
export async function enforceRateLimit(
  request: Request,
  env: Env,
  config: Pick<Config, "linkSigningKey" | "rateLimitPeriodSeconds">,
  verifiedSig?: string,
): Promise<void> {
  if (env.RATE_LIMITER === undefined) return;
  const key =
    verifiedSig !== undefined && config.linkSigningKey !== undefined ? `sig:${verifiedSig}` : `ip:${clientOf(request)}`;
  const { success } = await env.RATE_LIMITER.limit({ key });
  if (!success) {
    throw new TooManyRequests(
      `Too many requests for this link or address; try again in ${config.rateLimitPeriodSeconds} seconds.`,
      config.rateLimitPeriodSeconds,
    );
  }
}
