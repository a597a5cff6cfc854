import { describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { parseConfig } from "../src/config/config.ts";
import { cacheKey } from "../src/protocol/cache-key.ts";
import { signedPath } from "../src/security/signature.ts";
import { harness, isProbe, pageCalls } from "./harness.ts";
import { readWorkbook } from "./xlsx-reader.ts";

const cached = (
  env: Record<string, string> = {},
  fault?: (n: number, body: Record<string, unknown>) => Response | undefined,
) => harness({ emulator: { version: "2.12" }, env: { CACHE_TTL_SECONDS: "300", ...env }, ...(fault ? { fault } : {}) });

describe("edge cache", () => {
  it("answers a repeat from the cache with zero upstream requests, whatever the parameter order or cache buster", async () => {
    const h = cached();
    const first = await h.get("/export.csv?resource=sample&limit=2500&fields=id,name");
    expect(first.headers.get("x-cache")).toBe("MISS");
    expect(first.headers.get("cache-control")).toBe("public, max-age=300, stale-while-revalidate=3600");
    const etag = first.headers.get("etag");
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const bytes = await first.text();
    await h.settle();
    const upstream = h.calls.length;
    expect(pageCalls(h.calls)).toHaveLength(3);

    const again = await h.get("/export.csv?fields=id,name&limit=2500&resource=sample&_=99");
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect(again.headers.get("etag")).toBe(etag);
    expect(await again.text()).toBe(bytes);
    expect(h.calls.length).toBe(upstream);

    const head = await h.get("/export.csv?resource=sample&limit=2500&fields=id,name", { method: "HEAD" });
    expect(head.headers.get("x-cache")).toBe("HIT");
    // From the cache, HEAD knows what GET sends: the length and the tag of these bytes.
    expect(head.headers.get("etag")).toBe(etag);
    expect(head.headers.get("content-length")).toBe(String(new TextEncoder().encode(bytes).byteLength));
    expect(h.calls.length).toBe(upstream);
  });

  it("answers If-None-Match with 304, from the cache and on a fresh export", async () => {
    const h = cached();
    const first = await h.get("/export.json?resource=sample&limit=10");
    const etag = first.headers.get("etag")!;
    await first.text();
    await h.settle();
    const hit = await h.get("/export.json?resource=sample&limit=10", { headers: { "if-none-match": etag } });
    expect(hit.status).toBe(304);
    expect(hit.headers.get("etag")).toBe(etag);
    expect(await hit.text()).toBe("");
    const off = harness({ emulator: { version: "2.12" } });
    const fresh = await off.get("/export.json?resource=sample&limit=10", {
      headers: { "if-none-match": `"other", ${etag}` },
    });
    expect(fresh.status).toBe(304);
  });

  it("shares one entry between differently signed links to the same export", async () => {
    const key = "cache-sign-key";
    const h = cached({ LINK_SIGNING_KEY: key });
    await (await h.get(await signedPath(key, "/export.csv?resource=sample&limit=5"))).text();
    await h.settle();
    const calls = h.calls.length;
    const later = await h.get(
      await signedPath(key, "/export.csv?limit=5&resource=sample", Math.floor(Date.now() / 1000) + 600),
    );
    expect(later.headers.get("x-cache")).toBe("HIT");
    expect(h.calls.length).toBe(calls);
  });

  it("stores a streamed export while it streams, then serves it with its content hash", async () => {
    const h = cached({ BUFFER_BYTES: "10000" });
    const first = await h.get("/export.csv?resource=sample&limit=3000");
    expect(first.headers.get("x-cache")).toBe("MISS");
    expect(first.headers.get("content-length")).toBeNull();
    const bytes = new Uint8Array(await first.arrayBuffer());
    await h.settle();
    const upstream = h.calls.length;
    const again = await h.get("/export.csv?resource=sample&limit=3000");
    expect(again.headers.get("x-cache")).toBe("HIT");
    expect(new Uint8Array(await again.arrayBuffer())).toEqual(bytes);
    expect(h.calls.length).toBe(upstream);
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    expect(again.headers.get("etag")).toBe(
      `"${[...digest.slice(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("")}"`,
    );
  });

  it("serves a streamed entry only once its fill recorded the content's hash, which says it is whole", async () => {
    const h = cached({ BUFFER_BYTES: "10000" });
    const path = "/export.csv?resource=sample&limit=3000";
    await (await h.get(path)).arrayBuffer();
    await h.settle();
    expect((await h.get(path)).headers.get("x-cache")).toBe("HIT");
    // As if the fill had stopped between the entry and its record (a failed export leaves a short entry so).
    const url = new URL(`http://worker.test${path}`);
    await caches.default.delete(`${cacheKey(url, parseConfig(h.env), [EMULATOR_RESOURCES.sample])}&~etag`);
    expect((await h.get(path)).headers.get("x-cache")).toBe("MISS");
  });

  it("never stores a streamed export that fails half-way", async () => {
    let failing = true;
    const h = cached({ BUFFER_BYTES: "0", UPSTREAM_RETRIES: "0" }, (n) =>
      failing && n === 3 ? new Response("down", { status: 500 }) : undefined,
    );
    const broken = await h.get("/export.csv?resource=sample&limit=4000");
    expect(broken.status).toBe(200);
    await broken.text().catch(() => "");
    await h.settle();
    failing = false;
    const retry = await h.get("/export.csv?resource=sample&limit=4000");
    expect(retry.headers.get("x-cache")).toBe("MISS");
    const { default: Papa } = await import("papaparse");
    expect(Papa.parse((await retry.text()).trimEnd(), { newline: "\r\n" }).data).toHaveLength(4001);
  });

  it("streams an export above CACHE_MAX_BYTES uncached, and says so", async () => {
    const h = cached({ BUFFER_BYTES: "10000", CACHE_MAX_BYTES: "100000" });
    for (let i = 0; i < 2; i++) {
      const res = await h.get("/export.csv?resource=sample&limit=3000");
      expect(res.headers.get("x-cache")).toBe("MISS");
      expect(res.headers.get("x-cache-note")).toContain("not stored");
      expect(res.headers.get("etag")).toBeNull();
      await res.text();
      await h.settle();
    }
    expect(pageCalls(h.calls)).toHaveLength(6);
  });

  it("never stores an XLSX read whole that a limit cut off (its last row says why)", async () => {
    // CKAN's count is an estimate under MAX_ROWS: the rows past it are found only as they come.
    const estimated = async (_n: number, body: Record<string, unknown>): Promise<Response | undefined> => {
      if (body.include_total === false || body.resource_id === undefined) return undefined;
      const request = new Request("http://ckan.test/api/action/datastore_search", {
        method: "POST",
        body: JSON.stringify(body),
      });
      const answer = (await (await h.emulator.fetch(request)).json()) as { result: Record<string, unknown> };
      return Response.json({ ...answer, result: { ...answer.result, total: 900, total_was_estimated: true } });
    };
    const h = cached({ MAX_ROWS: "1500", PAGE_SIZE: "500" }, estimated as never);
    const cut = await h.get("/export.xlsx?resource=sample&fields=id");
    expect(cut.status).toBe(200);
    expect(cut.headers.get("cache-control")).toBe("private, no-store");
    expect(cut.headers.get("x-export-error")).toBe("400");
    expect(cut.headers.get("etag")).toBeNull();
    const book = await readWorkbook(new Uint8Array(await cut.arrayBuffer()));
    expect(String(book.rows.at(-1)![0]!.value)).toMatch(/^#EXPORT INCOMPLETE/);
    await h.settle();
    expect((await h.get("/export.xlsx?resource=sample&fields=id")).headers.get("x-cache")).not.toBe("HIT");
  });

  it("never stores a failed export", async () => {
    let failing = true;
    let pages = 0;
    // The second page fails (the probe for the largest _id is not a page).
    const h = cached({ UPSTREAM_RETRIES: "0" }, (_n, body) =>
      !isProbe(body) && ++pages === 2 && failing ? new Response("down", { status: 500 }) : undefined,
    );
    expect((await h.get("/export.csv?resource=sample&limit=2500")).status).toBe(502);
    await h.settle();
    failing = false;
    const retry = await h.get("/export.csv?resource=sample&limit=2500");
    expect(retry.status).toBe(200);
    expect(retry.headers.get("x-cache")).toBe("MISS");
  });

  it("never serves an entry stored under other settings: MAX_ROWS, what an alias stands for, the token", async () => {
    const site = "http://ckan-settings.test/data/en";
    const path = "/export.csv?resource=sample&fields=id&limit=20";
    const before = cached({ CKAN_BASE_URL: site });
    await (await before.get(path)).text();
    await before.settle();
    expect((await before.get(path)).headers.get("x-cache")).toBe("HIT");

    const lower = cached({ CKAN_BASE_URL: site, MAX_ROWS: "10" });
    expect((await lower.get(path)).status).toBe(400);
    const whole = "/export.csv?resource=sample";
    const unlimited = cached({ CKAN_BASE_URL: site, MAX_ROWS: "200000", BUFFER_BYTES: "67108864" });
    await (await unlimited.get(`${whole}&fields=id`)).text();
    await unlimited.settle();
    const capped = cached({ CKAN_BASE_URL: site, MAX_ROWS: "50000" });
    expect((await capped.get(`${whole}&fields=id`)).status).toBe(400);

    const moved = cached({
      CKAN_BASE_URL: site,
      RESOURCES: JSON.stringify({ sample: "b16b16b1-0000-4000-8000-000000000001" }),
    });
    expect((await moved.get(path)).headers.get("x-cache")).toBe("MISS");
    const tokenless = cached({ CKAN_BASE_URL: site, CKAN_API_TOKEN: "" });
    expect((await tokenless.get(path)).headers.get("x-cache")).toBe("MISS");
  });

  it("serves an expired entry to 50 viewers at once while one refresh per isolate goes upstream", async () => {
    const h = cached({ CACHE_TTL_SECONDS: "1", CACHE_STALE_SECONDS: "60" });
    const path = "/export.csv?resource=sample&limit=2500&fields=id,name";
    const first = await h.get(path);
    const bytes = await first.text();
    await h.settle();
    const perExport = h.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 1100));

    const viewers = await Promise.all(Array.from({ length: 50 }, () => h.get(path)));
    expect(viewers.map((r) => r.headers.get("x-cache"))).toEqual(Array(50).fill("STALE"));
    expect(viewers[0]!.headers.get("cache-control")).toBe("public, max-age=1, stale-while-revalidate=60");
    expect(await Promise.all(viewers.map((r) => r.text()))).toEqual(Array(50).fill(bytes));
    await h.settle();
    expect(h.calls.length).toBe(2 * perExport);

    const after = await h.get(path);
    expect(after.headers.get("x-cache")).toBe("HIT");
    expect(await after.text()).toBe(bytes);
  });

  it("refetches on Cache-Control: no-cache, and is off with CACHE_TTL_SECONDS=0", async () => {
    const h = cached();
    await (await h.get("/export.csv?resource=sample&limit=5")).text();
    await h.settle();
    const refreshed = await h.get("/export.csv?resource=sample&limit=5", { headers: { "cache-control": "no-cache" } });
    expect(refreshed.headers.get("x-cache")).toBe("MISS");
    const off = harness({ emulator: { version: "2.12" } });
    const res = await off.get("/export.csv?resource=sample&limit=5");
    expect(res.headers.get("x-cache")).toBeNull();
    expect(res.headers.get("cache-control")).toBe("no-cache");
  });
});
