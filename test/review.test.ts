import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { csvPassthrough } from "../src/format/csv-passthrough.ts";
import { signedPath } from "../src/security/signature.ts";
import { harness, readAll } from "./harness.ts";

// Regressions found in review: each of these once went wrong.
describe("edge cases", () => {
  it("rate-limits by IP when links are not signed, whatever sig a link makes up", async () => {
    const keys: string[] = [];
    const limiter = { limit: async ({ key }: { key: string }) => (keys.push(key), { success: true }) };
    const h = harness({ env: { RATE_LIMITER: limiter as unknown as RateLimit } });
    for (const sig of ["a", "b"]) await h.get(`/export.csv?resource=sample&limit=1&sig=${sig}`, { headers: { "cf-connecting-ip": "198.51.100.7" } });
    expect(keys).toEqual(["ip:198.51.100.7", "ip:198.51.100.7"]);
    const signed = harness({ env: { LINK_SIGNING_KEY: "k", RATE_LIMITER: limiter as unknown as RateLimit } });
    keys.length = 0;
    expect((await signed.get("/export.csv?resource=sample&limit=1&sig=forged")).status).toBe(403);
    expect(keys).toEqual([]);
    await signed.get(await signedPath("k", "/export.csv?resource=sample&limit=1"));
    expect(keys).toEqual([expect.stringMatching(/^sig:/)]);
  });

  it("holds MAX_ROWS when CKAN only estimates the count, ending the download as incomplete", async () => {
    const { get } = harness({
      env: { MAX_ROWS: "1500", PAGE_SIZE: "500", BUFFER_BYTES: "0" },
      fault: async (n, body) => {
        if (n !== 1) return undefined;
        const answer = (await (await harness().emulator.fetch(
          new Request("http://ckan.test/api/action/datastore_search", { method: "POST", body: JSON.stringify(body) }),
        )).json()) as { result: Record<string, unknown> };
        return Response.json({ ...answer, result: { ...answer.result, total: 900, total_was_estimated: true } });
      },
    });
    const res = await get("/export.csv?resource=sample&fields=id");
    const { text, error } = await readAll(res);
    expect(error).toBeDefined();
    const rows = Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data;
    expect(rows.at(-1)![0]).toMatch(/^#EXPORT INCOMPLETE: More than 1500 rows match/);
    expect(rows.length - 2).toBeLessThanOrEqual(1500);
  });

  it("stops the pages still in flight when one fails", async () => {
    const { get, calls } = harness({
      env: { PAGE_SIZE: "500", UPSTREAM_CONCURRENCY: "3", UPSTREAM_RETRIES: "0", BUFFER_BYTES: "0" },
      fault: async (n) => {
        if (n === 2) return new Response("down", { status: 500 });
        if (n > 2) await new Promise((resolve) => setTimeout(resolve, 100));
        return undefined;
      },
    });
    const res = await get("/export.csv?resource=sample&limit=5000&fields=id");
    const { error } = await readAll(res);
    expect(error).toBeDefined();
    const inFlight = calls.slice(2);
    expect(inFlight.length).toBeGreaterThan(0);
    expect(inFlight.every((c) => c.signal.aborted)).toBe(true);
  });

  it("writes a download name cut after 120 characters without splitting a character", async () => {
    const res = await harness().get(`/export.csv?resource=sample&limit=1&filename=${"a".repeat(119)}${encodeURIComponent("😀")}b`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-disposition")).toContain("%F0%9F%98%80.csv");
  });

  it("passes filters on columns named like JavaScript's own properties", async () => {
    const { get, calls } = harness();
    await get('/export.csv?resource=sample&filter.constructor=x&filters={"__proto__":"y"}');
    const filters = calls.at(-1)!.body.filters as Record<string, unknown>;
    expect(Object.keys(filters).sort()).toEqual(["__proto__", "constructor"]);
  });

  it("rewrites a one-column CSV page without commas", () => {
    const rewrite = csvPassthrough([{ id: "name", type: "text" }], 1, true);
    const page = Array.from({ length: 2000 }, (_, i) => (i % 2 ? `=x${i}` : `name ${i}`)).join("\n") + "\n";
    const { text, rows } = rewrite(page);
    expect(rows).toBe(2000);
    expect(text.split("\r\n")[1]).toBe("'=x1");
  });
});
