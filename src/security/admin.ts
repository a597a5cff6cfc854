import type { Config } from "../config/config.ts";
import { HttpError } from "../errors.ts";

const sha256 = async (text: string): Promise<ArrayBuffer> => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));

/**
 * Operator routes need `Authorization: Bearer <ADMIN_TOKEN>`. Hashing both sides first makes the
 * constant-time comparison independent of the token's length too.
 */
export async function requireAdmin(request: Request, config: Config): Promise<void> {
  if (config.adminToken === undefined) {
    throw new HttpError(404, "Not found. (Operator routes are off: ADMIN_TOKEN is not set.)");
  }
  const header = request.headers.get("authorization") ?? "";
  const given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim() ?? "";
  const [a, b] = await Promise.all([sha256(given), sha256(config.adminToken)]);
  if (given === "" || !crypto.subtle.timingSafeEqual(a, b)) {
    throw new HttpError(401, "This route needs Authorization: Bearer <ADMIN_TOKEN>.", {
      headers: { "www-authenticate": 'Bearer realm="datastore-export"' },
    });
  }
}
