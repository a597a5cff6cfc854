import type { Config } from "../config/config.ts";
import { HttpError, TooManyRequests } from "../errors.ts";
import { clientOf } from "./rate-limit.ts";

const sha256 = async (text: string): Promise<ArrayBuffer> =>
  crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));

/** Wrong admin tokens one client may send per window before every attempt of its is a 429. */
export const MAX_ADMIN_FAILURES = 10;
export const ADMIN_FAILURE_WINDOW_MS = 60_000;
/** Clients remembered at most: a flood of addresses cannot grow the isolate's memory without bound. */
const MAX_CLIENTS = 10_000;

/** Failed attempts per client in this isolate, with when its window started. */
const failures = new Map<string, { count: number; since: number }>();

function refuseWhileLimited(client: string, now: number): void {
  const entry = failures.get(client);
  if (entry === undefined) return;
  if (now - entry.since >= ADMIN_FAILURE_WINDOW_MS) {
    failures.delete(client);
    return;
  }
  if (entry.count < MAX_ADMIN_FAILURES) return;
  const seconds = Math.max(1, Math.ceil((entry.since + ADMIN_FAILURE_WINDOW_MS - now) / 1000));
  throw new TooManyRequests(`Too many wrong admin tokens from this address; try again in ${seconds} seconds.`, seconds);
}

function countFailure(client: string, now: number): void {
  const entry = failures.get(client);
  if (entry !== undefined) {
    entry.count++;
    return;
  }
  if (failures.size >= MAX_CLIENTS) {
    for (const [key, old] of failures) if (now - old.since >= ADMIN_FAILURE_WINDOW_MS) failures.delete(key);
    // Still full: the oldest entry goes (a Map iterates in insertion order).
    if (failures.size >= MAX_CLIENTS) failures.delete(failures.keys().next().value as string);
  }
  failures.set(client, { count: 1, since: now });
}

/**
 * Operator routes need `Authorization: Bearer <ADMIN_TOKEN>`. Hashing both sides first makes the
 * constant-time comparison independent of the token's length too. A client that sent
 * MAX_ADMIN_FAILURES wrong tokens within a minute gets 429 with Retry-After for the rest of it,
 * whatever it sends: guessing the token costs a minute per ten guesses (per isolate).
 */
export async function requireAdmin(request: Request, config: Pick<Config, "adminToken">): Promise<void> {
  if (config.adminToken === undefined) {
    throw new HttpError(404, "Not found. (Operator routes are off: ADMIN_TOKEN is not set.)");
  }
  const client = clientOf(request);
  refuseWhileLimited(client, Date.now());
  const header = request.headers.get("authorization") ?? "";
  const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? "";
  const [a, b] = await Promise.all([sha256(given), sha256(config.adminToken)]);
  if (given === "" || !crypto.subtle.timingSafeEqual(a, b)) {
    // A request without the header is a visitor, not a guess.
    if (given !== "") countFailure(client, Date.now());
    throw new HttpError(401, "This route needs Authorization: Bearer <ADMIN_TOKEN>.", {
      headers: { "www-authenticate": 'Bearer realm="datastore-export"' },
    });
  }
}
