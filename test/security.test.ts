import { describe, expect, it, vi } from "vitest";
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { signedPath } from "../src/security/signature.ts";
import { harness } from "./harness.ts";

const KEY = "sign-SECRET-8c2e";
const ONLY_SAMPLE = JSON.stringify({ sample: EMULATOR_RESOURCES.sample });
const UNKNOWN = "00000000-0000-4000-8000-000000000000";

type Body = { error: { status: number; message: string; parameter?: string } };

describe("which resources a link may name", () => {
  it("with a token, serves only RESOURCES unless ALLOW_UNLISTED_RESOURCES=true, without telling what exists", async () => {
    const { get, calls } = harness({ env: { RESOURCES: ONLY_SAMPLE } });
    const listedById = await get(`/export.csv?resource_id=${EMULATOR_RESOURCES.sample}&limit=1`);
    expect(listedById.status).toBe(200);
    const existing = await get(`/export.csv?resource_id=${EMULATOR_RESOURCES.private}`);
    const missing = await get(`/export.csv?resource_id=${UNKNOWN}`);
    expect(existing.status).toBe(403);
    expect(missing.status).toBe(403);
    const [a, b] = [(await existing.json()) as Body, (await missing.json()) as Body];
    expect(a.error.message).toContain("not published by this worker");
    expect(a.error.message.replace(EMULATOR_RESOURCES.private, "X")).toBe(b.error.message.replace(UNKNOWN, "X"));
    expect(calls.every((c) => c.body.resource_id === EMULATOR_RESOURCES.sample)).toBe(true);

    const open = harness({ env: { RESOURCES: ONLY_SAMPLE, ALLOW_UNLISTED_RESOURCES: "true" } });
    expect((await open.get(`/export.csv?resource_id=${EMULATOR_RESOURCES.private}`)).status).toBe(200);
  });

  it("without a token, serves any resource id unless ALLOW_UNLISTED_RESOURCES=false", async () => {
    const open = harness({ env: { RESOURCES: ONLY_SAMPLE, CKAN_API_TOKEN: undefined } });
    expect((await open.get(`/export.csv?resource_id=${EMULATOR_RESOURCES.big}&limit=1`)).status).toBe(200);
    expect((await open.get(`/export.csv?resource_id=${UNKNOWN}`)).status).toBe(404);
    const closed = harness({
      env: { RESOURCES: ONLY_SAMPLE, CKAN_API_TOKEN: undefined, ALLOW_UNLISTED_RESOURCES: "false" },
    });
    expect((await closed.get(`/export.csv?resource_id=${EMULATOR_RESOURCES.big}`)).status).toBe(403);
    expect((await closed.get("/export.csv?resource=sample&limit=1")).status).toBe(200);
  });
});

describe("signed links", () => {
  const signed = harness({ env: { LINK_SIGNING_KEY: KEY } });
  const sign = (link: string, exp?: number) => signedPath(KEY, link, exp);
  const refusal = async (path: string): Promise<string> => {
    const res = await signed.get(path);
    expect(res.status, path).toBe(403);
    const body = (await res.json()) as Body;
    expect(body.error.parameter).toBe("sig");
    return body.error.message;
  };

  it("serves a valid link, with its parameters in any order and a cache buster added", async () => {
    const link = await sign("/export.csv?resource=sample&limit=3&filter.category=alpha&fields=id,category");
    expect((await signed.get(link)).status).toBe(200);
    const url = new URL(link, "http://x");
    const reordered = new URLSearchParams([...url.searchParams].reverse());
    expect((await signed.get(`${url.pathname}?${reordered}`)).status).toBe(200);
    expect((await signed.get(`${link}&_=12345`)).status).toBe(200);
  });

  it("refuses a missing, tampered, widened, narrowed, foreign or expired signature and says which", async () => {
    expect(await refusal("/export.csv?resource=sample&limit=3")).toMatch(/not signed/);
    const link = await sign("/export.csv?resource=sample&limit=3&filter.category=alpha");
    expect(await refusal(link.replace("limit=3", "limit=30000"))).toMatch(/does not match/);
    expect(await refusal(link.replace("filter.category=alpha&", ""))).toMatch(/does not match/);
    expect(await refusal(`${link}&q=river`)).toMatch(/does not match/);
    expect(await refusal(link.replace("/export.csv", "/export.json"))).toMatch(/does not match/);
    expect(await refusal(await signedPath("another-key", "/export.csv?resource=sample"))).toMatch(/does not match/);
    expect(await refusal(`${link}&sig=${new URL(link, "http://x").searchParams.get("sig")}`)).toMatch(/does not match/);
    expect(await refusal(link.replace(/sig=[^&]+/, "sig=abc"))).toMatch(/does not match/);
    // The last character's two bits past the signature's 32 bytes: only the spelling signed verifies.
    const sig = new URL(link, "http://x").searchParams.get("sig")!;
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const last = alphabet.indexOf(sig.at(-1)!);
    for (let low = 1; low < 4; low++) {
      const altered = `${sig.slice(0, -1)}${alphabet[(last & ~3) | low]}`;
      expect(await refusal(link.replace(`sig=${sig}`, `sig=${altered}`)), altered).toMatch(/does not match/);
    }

    const past = Math.floor(Date.now() / 1000) - 60;
    expect(await refusal(await sign("/export.csv?resource=sample&limit=1", past))).toMatch(/expired at/);
    const future = Math.floor(Date.now() / 1000) + 3600;
    const later = await sign("/export.csv?resource=sample&limit=1", future);
    expect((await signed.get(later)).status).toBe(200);
    expect(await refusal(later.replace(`exp=${future}`, `exp=${future + 86400}`))).toMatch(/does not match/);
  });

  it("guards snapshot files too; the listing is for operators and hands out signed links", async () => {
    const h = harness({
      env: {
        LINK_SIGNING_KEY: KEY,
        ADMIN_TOKEN: "admin-SECRET-7",
        SNAPSHOT_JOBS: JSON.stringify([{ name: "signed-job", resource: "sample", limit: 5 }]),
      },
    });
    await h.scheduled("0 3 * * *", Date.UTC(2026, 0, 1));
    expect((await h.get("/snapshots/signed-job/latest.csv")).status).toBe(403);
    expect((await h.get("/snapshots")).status).toBe(401);
    const listing = (await (
      await h.get("/snapshots", { headers: { authorization: "Bearer admin-SECRET-7" } })
    ).json()) as {
      jobs: { latest: { csv: { url: string } } }[];
    };
    const url = listing.jobs[0]!.latest.csv.url;
    expect(url).toMatch(/\/snapshots\/signed-job\/latest\.csv\?exp=\d+&sig=/);
    // Handed-out links expire (SNAPSHOT_LINK_TTL_SECONDS, a week by default): a leaked one does not live forever.
    const exp = Number(new URL(url).searchParams.get("exp"));
    expect(exp * 1000 - Date.now()).toBeGreaterThan(6.9 * 86_400_000);
    expect(exp * 1000 - Date.now()).toBeLessThanOrEqual(7 * 86_400_000);
    const res = await h.get(url.replace("http://worker.test", ""));
    expect(res.status).toBe(200);
    expect((await res.text()).split("\r\n")).toHaveLength(7);
  });
});

describe("browsers and abuse", () => {
  it("allows any origin by default and exposes the export headers", async () => {
    const res = await harness().get("/export.json?resource=sample&limit=1", {
      headers: { origin: "https://dash.example" },
    });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("access-control-expose-headers")).toContain("X-Total-Count");
    expect(res.headers.get("access-control-expose-headers")).toContain("Content-Disposition");
  });

  it("with CORS_ALLOW_ORIGINS, answers only the listed origins, preflight included", async () => {
    const h = harness({ env: { CORS_ALLOW_ORIGINS: "https://dash.example, http://127.0.0.1:9000" } });
    const ok = await h.get("/export.json?resource=sample&limit=1", { headers: { origin: "https://dash.example" } });
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://dash.example");
    expect(ok.headers.get("vary")).toContain("Origin");
    const other = await h.get("/export.json?resource=sample&limit=1", { headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const pre = await h.get("/export.json?resource=sample", {
      method: "OPTIONS",
      headers: {
        origin: "http://127.0.0.1:9000",
        "access-control-request-method": "GET",
        "access-control-request-headers": "range",
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("http://127.0.0.1:9000");
    expect(pre.headers.get("access-control-allow-methods")).toBe("GET, HEAD, OPTIONS");
    expect(pre.headers.get("access-control-allow-headers")).toBe("range");
    const bad = await harness({ env: { CORS_ALLOW_ORIGINS: "dash.example/path" } }).get("/export.csv?resource=sample");
    expect(((await bad.json()) as { error: { setting: string } }).error.setting).toBe("CORS_ALLOW_ORIGINS");
  });

  it("rate-limits by signed link, else by client IP, with 429 and Retry-After", async () => {
    const keys: string[] = [];
    const limiter = { limit: async ({ key }: { key: string }) => (keys.push(key), { success: keys.length <= 1 }) };
    const h = harness({ env: { RATE_LIMITER: limiter as unknown as RateLimit } });
    expect(
      (await h.get("/export.csv?resource=sample&limit=1", { headers: { "cf-connecting-ip": "203.0.113.9" } })).status,
    ).toBe(200);
    const limited = await h.get("/export.csv?resource=sample&limit=1", {
      headers: { "cf-connecting-ip": "203.0.113.9" },
    });
    expect(limited.status).toBe(429);
    expect(limited.headers.get("retry-after")).toBe("60");
    expect(((await limited.json()) as Body).error.message).toContain("60 seconds");
    const s = harness({ env: { LINK_SIGNING_KEY: KEY, RATE_LIMITER: limiter as unknown as RateLimit } });
    await s.get(await signedPath(KEY, "/export.csv?resource=sample&limit=1"));
    expect(keys).toEqual(["ip:203.0.113.9", "ip:203.0.113.9", expect.stringMatching(/^sig:/)]);
  });

  it("refuses oversized links, each with a 400 that names the bound", async () => {
    const { get } = harness();
    const cases: [string, string, RegExp][] = [
      [`/export.csv?resource=sample&_pad=${"x".repeat(9000)}`, "url", /8192/],
      [`/export.csv?resource=sample&q=${"river ".repeat(200)}`, "q", /1000/],
      [
        `/export.csv?resource=sample&${Array.from({ length: 51 }, (_, i) => `filter.f${i}=1`).join("&")}`,
        "filters",
        /50/,
      ],
      [
        `/export.csv?resource=sample&filters=${encodeURIComponent(JSON.stringify({ id: Array.from({ length: 1001 }, (_, i) => i) }))}`,
        "filters",
        /1000/,
      ],
      [
        `/export.csv?resource=sample&fields=${Array.from({ length: 501 }, (_, i) => `c${i}`).join(",")}`,
        "fields",
        /500/,
      ],
      [`/export.csv?resource=sample&fields=${"x".repeat(64)}`, "fields", /63 bytes/],
      ["/export.csv?resource=sample&filter.a%00b=1", "filter.a\u0000b", /control character/],
      ["/export.csv?resource=sample&sort=%22a%22%22b%22", "sort", /double quote/],
    ];
    for (const [path, parameter, message] of cases) {
      const res = await get(path);
      expect(res.status, parameter).toBe(400);
      const body = (await res.json()) as Body;
      expect(body.error.parameter).toBe(parameter);
      expect(body.error.message).toMatch(message);
    }
  });
});

describe("request logs", () => {
  it("writes one JSON line per request with id, route, resource, status, rows, pages, bytes and upstream time", async () => {
    const { get } = harness({ emulator: { version: "2.12" } });
    await get("/"); // the harness's first request lets the worker meet the site: not part of this test
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    try {
      const res = await get("/export.csv?resource=sample&limit=2500");
      await res.text();
      await get("/export.csv?resource=nope");
      const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.event === "request");
      expect(entries).toHaveLength(2);
      // Three pages, and the probe for the largest _id that lets them run side by side.
      expect(entries[0]).toMatchObject({ route: "/export.csv", resource: "sample", status: 200, rows: 2500, pages: 4 });
      expect(entries[0]!.id).toBe(res.headers.get("x-request-id"));
      expect(entries[0]!.bytes).toBeGreaterThan(100_000);
      expect(typeof entries[0]!.upstream_ms).toBe("number");
      expect(entries[1]).toMatchObject({ route: "/export.csv", status: 404 });
    } finally {
      spy.mockRestore();
    }
  });
});

describe("rate limiting keys", () => {
  it("rate-limits by IP when links are not signed, whatever sig a link makes up", async () => {
    const keys: string[] = [];
    const limiter = { limit: async ({ key }: { key: string }) => (keys.push(key), { success: true }) };
    const h = harness({ env: { RATE_LIMITER: limiter as unknown as RateLimit } });
    for (const sig of ["a", "b"])
      await h.get(`/export.csv?resource=sample&limit=1&sig=${sig}`, {
        headers: { "cf-connecting-ip": "198.51.100.7" },
      });
    expect(keys).toEqual(["ip:198.51.100.7", "ip:198.51.100.7"]);
    const signed = harness({ env: { LINK_SIGNING_KEY: "k", RATE_LIMITER: limiter as unknown as RateLimit } });
    keys.length = 0;
    expect((await signed.get("/export.csv?resource=sample&limit=1&sig=forged")).status).toBe(403);
    expect(keys).toEqual([]);
    await signed.get(await signedPath("k", "/export.csv?resource=sample&limit=1"));
    expect(keys).toEqual([expect.stringMatching(/^sig:/)]);
  });
});
