// GET /health, as an operator opens it after deploying: 200 when an export can work, 503 naming
// each cause otherwise, and never the token.
import { describe, expect, it } from "vitest";
import { harness, TOKEN } from "./harness.ts";

interface Health {
  ok: boolean;
  ckan: {
    base: string;
    reachable: boolean;
    version: string | null;
    datastore: boolean | null;
    range_filters: boolean | null;
  };
  token: { configured: boolean; accepted: boolean | null; note?: string };
  resources: { name: string; ok: boolean; private: boolean | null; error?: string }[];
  snapshots: { r2_binding: boolean; jobs: number };
  problems: string[];
  warnings: string[];
}

async function health(options: Parameters<typeof harness>[0]): Promise<{ status: number; body: Health; text: string }> {
  const response = await harness({ warm: false, ...options }).get("/health");
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) as Health, text };
}

describe("GET /health", () => {
  it("is 200 on a healthy CKAN 2.12: its version, the DataStore, range filters, every alias, a token that unlocked the private table", async () => {
    const { status, body, text } = await health({ emulator: { version: "2.12" } });
    expect(status).toBe(200);
    expect(body.ok).toBe(true);
    expect(body.ckan).toMatchObject({ reachable: true, datastore: true, range_filters: true });
    expect(body.ckan.version).toMatch(/^2\.12/);
    expect(body.ckan.base).toMatch(/^http:\/\/ckan-\d+\.test\/data\/en$/);
    expect(body.token).toEqual({ configured: true, accepted: true });
    expect(body.resources.map((r) => [r.name, r.ok, r.private])).toEqual([
      ["big", true, false],
      ["edge", true, false],
      ["private", true, true],
      ["sample", true, false],
    ]);
    expect(body.problems).toEqual([]);
    expect(text).not.toContain(TOKEN);
  });

  it("says range filters are missing on CKAN 2.10", async () => {
    const { status, body } = await health({ emulator: { version: "2.10" } });
    expect(status).toBe(200);
    expect(body.ckan.range_filters).toBe(false);
  });

  it("is 503 when CKAN refuses the token: it unlocks nothing, so it is judged wrong", async () => {
    const { status, body, text } = await health({
      emulator: { version: "2.12" },
      env: { CKAN_API_TOKEN: "not-the-token-9c2e" },
    });
    expect(status).toBe(503);
    expect(body.token.accepted).toBe(false);
    expect(body.problems).toHaveLength(1);
    expect(body.problems[0]).toContain("Alias private");
    expect(body.problems[0]).toContain("wrangler secret put CKAN_API_TOKEN");
    expect(text).not.toContain("not-the-token-9c2e");
  });

  it("cannot judge a token when every published table is public, and says why", async () => {
    const { status, body } = await health({
      emulator: { version: "2.12" },
      env: { RESOURCES: JSON.stringify({ sample: "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2" }) },
    });
    expect(status).toBe(200);
    expect(body.token.accepted).toBeNull();
    expect(body.token.note).toContain("as if none were sent");
  });

  it("is 503 naming the private alias when no token is set", async () => {
    const { status, body } = await health({ emulator: { version: "2.12" }, env: { CKAN_API_TOKEN: undefined } });
    expect(status).toBe(503);
    expect(body.token).toEqual({ configured: false, accepted: null });
    expect(body.problems.join("\n")).toMatch(/Alias private .* It is private: set a token/);
  });

  it("is 503 when CKAN does not answer, naming the base URL to check", async () => {
    const { status, body } = await health({
      fault: () => {
        throw new TypeError("connection refused");
      },
    });
    expect(status).toBe(503);
    expect(body.ckan.reachable).toBe(false);
    expect(body.problems[0]).toMatch(
      /^CKAN did not answer at http:\/\/ckan-\d+\.test\/data\/en \(the connection failed\)\. Check CKAN_BASE_URL/,
    );
  });

  it("is 503 when the base URL leads to something that is not CKAN (a missing language segment, say)", async () => {
    const { status, body } = await health({
      fault: () =>
        new Response("<html>Page not found</html>", { status: 404, headers: { "content-type": "text/html" } }),
    });
    expect(status).toBe(503);
    expect(body.ckan.reachable).toBe(true);
    expect(body.problems[0]).toContain("is not CKAN's status_show");
    expect(body.problems[0]).toContain("language segment");
  });

  it("is 503 when the site runs without the DataStore", async () => {
    const { status, body } = await health({ emulator: { version: "2.12", datastore: false } });
    expect(status).toBe(503);
    expect(body.ckan.datastore).toBe(false);
    expect(body.problems[0]).toContain("runs without the DataStore");
  });

  it("is 503 naming CKAN_BASE_URL when it is not set", async () => {
    const response = await harness({ warm: false, env: { CKAN_BASE_URL: undefined } }).get("/health");
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { setting: string } }).error.setting).toBe("CKAN_BASE_URL");
  });

  it("lists snapshot problems as warnings, which stop no export", async () => {
    const { status, body } = await health({
      emulator: { version: "2.12" },
      env: {
        SNAPSHOTS: undefined,
        SNAPSHOT_JOBS: JSON.stringify([
          { name: "daily", resource: "sample", cron: "0 3 * * *" },
          { name: "bad", resource: "nope" },
        ]),
      },
    });
    expect(status).toBe(200);
    expect(body.snapshots).toEqual({ r2_binding: false, jobs: 1 });
    const bad = body.warnings.find((w) => w.startsWith("Snapshot job bad"));
    // Named once, one sentence: no "Snapshot job bad: Snapshot job bad", no ".;".
    expect(bad).toMatch(/^Snapshot job bad: No resource .*"nope".*; it is skipped\.$/);
    expect(bad).not.toContain(".;");
    expect(bad!.split("Snapshot job").length).toBe(2);
    expect(body.warnings.some((w) => w.includes("SNAPSHOTS R2 binding is missing"))).toBe(true);
  });

  it("is for operators when links are signed: it would reveal what exists", async () => {
    const response = await harness({
      warm: false,
      env: { LINK_SIGNING_KEY: "k".repeat(32), ADMIN_TOKEN: "admin-token-1234" },
    }).get("/health");
    expect(response.status).toBe(401);
  });
});
