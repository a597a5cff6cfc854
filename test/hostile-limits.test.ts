// Issue 25, item 6: a made-up signature is never a rate-limit budget of its own, and guessing the
// admin token is slowed down per client.
import { describe, expect, it } from "vitest";
import { signedPath } from "../src/security/signature.ts";
import { harness } from "./harness.ts";

const KEY = "limits-signing-key-5e6f";
const ADMIN = "limits-admin-token-7a8b";

function recordingLimiter(): { keys: string[]; limiter: RateLimit } {
  const keys: string[] = [];
  const limiter = { limit: async ({ key }: { key: string }) => (keys.push(key), { success: true }) };
  return { keys, limiter: limiter as unknown as RateLimit };
}

describe("rate-limit keys with signing on", () => {
  it("a made-up sig on a route that checks none (openapi, discovery, health) is keyed by the client", async () => {
    const { keys, limiter } = recordingLimiter();
    const { get } = harness({ env: { LINK_SIGNING_KEY: KEY, ADMIN_TOKEN: ADMIN, RATE_LIMITER: limiter } });
    const client = { "cf-connecting-ip": "192.0.2.44" };
    for (let i = 0; i < 3; i++)
      expect((await get(`/openapi.json?sig=made-up-${i}`, { headers: client })).status).toBe(200);
    const operator = { ...client, authorization: `Bearer ${ADMIN}` };
    await (await get("/resources?sig=made-up", { headers: operator })).arrayBuffer();
    await (await get("/health?sig=made-up", { headers: operator })).arrayBuffer();
    expect(keys).toEqual(Array(5).fill("ip:192.0.2.44"));
  });

  it("a verified signature keys the link's budget", async () => {
    const { keys, limiter } = recordingLimiter();
    const { get } = harness({ env: { LINK_SIGNING_KEY: KEY, RATE_LIMITER: limiter } });
    const path = await signedPath(KEY, "/export.csv?resource=sample&limit=1");
    expect((await get(path, { headers: { "cf-connecting-ip": "192.0.2.45" } })).status).toBe(200);
    expect(keys).toEqual([`sig:${new URL(path, "http://x").searchParams.get("sig")}`]);
  });
});

describe("wrong admin tokens", () => {
  const routes: [string, RequestInit][] = [
    ["/links", { method: "POST", body: JSON.stringify({ link: "/export.csv?resource=sample" }) }],
    ["/snapshots/daily/run", { method: "POST" }],
    ["/resources", {}],
  ];
  for (const [path, init] of routes) {
    it(`${init.method ?? "GET"} ${path}: ten a minute per client, then 429 with Retry-After, even for the right token; other clients unaffected`, async () => {
      const { get } = harness({
        env: {
          LINK_SIGNING_KEY: KEY,
          ADMIN_TOKEN: ADMIN,
          SNAPSHOT_JOBS: JSON.stringify([{ name: "daily", resource: "sample", formats: ["csv"] }]),
        },
      });
      const guesser = `198.51.100.${routes.findIndex(([p]) => p === path) + 10}`;
      const attempt = (token: string, ip = guesser) =>
        get(path, { ...init, headers: { authorization: `Bearer ${token}`, "cf-connecting-ip": ip } });
      for (let i = 0; i < 10; i++) expect((await attempt(`guess-${i}`)).status).toBe(401);
      const limited = await attempt("guess-10");
      expect(limited.status).toBe(429);
      const seconds = Number(limited.headers.get("retry-after"));
      expect(seconds).toBeGreaterThan(0);
      expect(seconds).toBeLessThanOrEqual(60);
      expect(((await limited.json()) as { error: { message: string } }).error.message).toMatch(
        /Too many wrong admin tokens/,
      );
      expect((await attempt(ADMIN)).status).toBe(429);
      // Another client is judged on its own.
      expect((await attempt("wrong", "203.0.113.200")).status).toBe(401);
      expect([200, 202]).toContain((await attempt(ADMIN, "203.0.113.201")).status);
    });
  }
});
