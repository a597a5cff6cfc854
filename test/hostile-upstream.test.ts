// Issue 25, items 3 and 7: an upstream that redirects, and answers that say CKAN failed. A redirect
// is never followed (it would re-send the query and the token elsewhere) and nothing that carries an
// upstream error is kept in a cache, so the answer after CKAN recovers is CKAN's again.
import { describe, expect, it } from "vitest";
import { harness, readAll } from "./harness.ts";

const redirect = (status = 307): Response =>
  new Response(null, {
    status,
    headers: { location: "https://elsewhere.example/api/action/datastore_search?steal=tok-SECRET-4f1d9a7e" },
  });

describe("an upstream answering with a redirect", () => {
  for (const status of [301, 302, 303, 307, 308]) {
    it(`HTTP ${status}: a 502 naming the status and the location's origin, no other request`, async () => {
      const { get, calls } = harness({ env: { UPSTREAM_RETRIES: "3" }, fault: () => redirect(status) });
      const res = await get("/export.csv?resource=sample&limit=5");
      expect(res.status).toBe(502);
      expect(res.headers.get("cache-control")).toBe("no-store");
      const { error } = (await res.json()) as { error: { message: string } };
      expect(error.message).toContain(`HTTP ${status}`);
      expect(error.message).toContain("https://elsewhere.example");
      // The location's path and query are not quoted.
      expect(error.message).not.toContain("steal");
      // Not retried, and never sent on to the other host.
      expect(calls).toHaveLength(1);
      expect(calls.every((call) => call.redirect === "manual" && call.url.startsWith("http://ckan-"))).toBe(true);
    });
  }

  it("every upstream request asks for redirects not to be followed (exports, discovery, health)", async () => {
    const { get, calls } = harness({ env: { CACHE_TTL_SECONDS: "0" } });
    for (const path of ["/export.csv?resource=sample&limit=5", "/resources", "/resources/sample", "/health"])
      await (await get(path)).arrayBuffer();
    expect(calls.length).toBeGreaterThan(5);
    expect(calls.filter((call) => call.redirect !== "manual").map((call) => call.url)).toEqual([]);
  });

  it("a redirect in the middle of an export cuts it with the #EXPORT INCOMPLETE line naming the redirect", async () => {
    const { get } = harness({ env: { BUFFER_BYTES: "0" }, fault: (n) => (n > 1 ? redirect() : undefined) });
    const { text, error } = await readAll(await get("/export.csv?resource=sample&limit=3000"));
    expect(error).toBeDefined();
    expect(text.trimEnd().split("\n").at(-1)).toMatch(
      /^"?#EXPORT INCOMPLETE: CKAN answered HTTP 307, a redirect to https:\/\/elsewhere\.example, /,
    );
    expect(text).not.toContain("steal");
  });

  it("is not cached: once the site answers again, so does the export", async () => {
    let redirecting = true;
    const { get } = harness({ env: { CACHE_TTL_SECONDS: "300" }, fault: () => (redirecting ? redirect() : undefined) });
    expect((await get("/export.csv?resource=sample&limit=5")).status).toBe(502);
    redirecting = false;
    const res = await get("/export.csv?resource=sample&limit=5");
    expect(res.status).toBe(200);
    expect(res.headers.get("x-cache")).toBe("MISS");
  });

  it("/health names the redirect of status_show as the problem", async () => {
    const { get } = harness({ fault: () => redirect(302) });
    const res = await get("/health");
    expect(res.status).toBe(503);
    const body = (await res.json()) as { problems: string[] };
    expect(body.problems.join(" ")).toMatch(/HTTP 302, a redirect to https:\/\/elsewhere\.example\b/);
  });
});

describe("answers that carry an upstream error are never cached", () => {
  it("/resources while CKAN fails is no-store, and the next request after CKAN recovers asks CKAN again", async () => {
    let failing = true;
    const { get, settle } = harness({
      env: { CACHE_TTL_SECONDS: "300", UPSTREAM_RETRIES: "0" },
      fault: (_, body) =>
        failing && body.resource_id !== undefined ? new Response("down", { status: 503 }) : undefined,
    });
    const during = await get("/resources");
    expect(during.status).toBe(200);
    expect(during.headers.get("cache-control")).toBe("private, no-store");
    expect(during.headers.get("x-cache")).toBeNull();
    expect(JSON.stringify(await during.json())).toContain('"error"');
    await settle();
    failing = false;
    const after = await get("/resources");
    expect(after.headers.get("x-cache")).toBe("MISS");
    expect(JSON.stringify(await after.json())).not.toContain('"error"');
    expect((await get("/resources")).headers.get("x-cache")).toBe("HIT");
  });

  it("/health that finds a problem is no-store", async () => {
    const { get } = harness({ fault: () => new Response("down", { status: 503 }) });
    const res = await get("/health");
    expect(res.status).toBe(503);
    expect(res.headers.get("cache-control")).toBe("private, no-store");
  });

  it("a discovery route refuses unknown parameters with a 400 naming them, and takes _ cache busters", async () => {
    const { get, calls } = harness({ env: { CACHE_TTL_SECONDS: "300" } });
    for (const path of ["/resources?x=1", "/resources/sample?limit=5", "/resources/sample?fresh=1&_=2"]) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      const { error } = (await res.json()) as { error: { parameter: string; message: string } };
      expect(error.message).toMatch(/^Unknown parameter/);
      expect(["x", "limit", "fresh"]).toContain(error.parameter);
    }
    expect(calls).toHaveLength(0);
    expect((await get("/resources?_=123")).status).toBe(200);
  });
});
