// Issue 25, item 8: a download name cannot spoof what the user sees, and a local CKAN not started
// yet is not reported as a deployed worker's misconfiguration.
import { describe, expect, it } from "vitest";
import { harness } from "./harness.ts";

describe("download names", () => {
  it.each([
    ["a right-to-left override", "invoice\u202Efdp.exe", "invoicefdp.exe.csv"],
    ["bidi isolates and embeddings", "\u2066report\u2069\u202Bx\u202C", "reportx.csv"],
    ["zero-width characters and a BOM", "re\u200Bport\u200D\uFEFF", "report.csv"],
    ["C1 controls and line separators", "a\u0085b\u2028c\u2029d", "abcd.csv"],
  ])("strips %s from Content-Disposition", async (_, filename, expected) => {
    const { get } = harness();
    const res = await get(`/export.csv?resource=sample&limit=1&filename=${encodeURIComponent(filename)}`);
    expect(res.status).toBe(200);
    const disposition = res.headers.get("content-disposition") ?? "";
    expect(disposition).toBe(`attachment; filename="${expected}"; filename*=UTF-8''${encodeURIComponent(expected)}`);
    expect(decodeURIComponent(disposition.split("''")[1]!)).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  });

  it("a name of nothing but such characters is a 400 naming filename", async () => {
    const { get } = harness();
    const res = await get(`/export.csv?resource=sample&filename=${encodeURIComponent("\u202E\u200B")}`);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { parameter: string } }).error.parameter).toBe("filename");
  });
});

describe("a refused connection to a CKAN_BASE_URL on this machine", () => {
  const refused = () => Promise.reject(new TypeError("connect ECONNREFUSED 127.0.0.1:8788"));

  it("in local development (the worker served at a loopback address): a retryable 502 naming CKAN_BASE_URL and the address", async () => {
    const { get, calls } = harness({
      warm: false,
      env: { CKAN_BASE_URL: "http://127.0.0.1:8788/data/en", UPSTREAM_RETRIES: "1" },
      fault: refused,
    });
    const res = await get("http://127.0.0.1:8787/export.csv?resource=sample&limit=5");
    expect(res.status).toBe(502);
    expect(res.headers.get("retry-after")).toBe("5");
    const { error } = (await res.json()) as { error: { message: string; setting?: string } };
    expect(error.setting).toBeUndefined();
    expect(error.message).toContain("127.0.0.1:8788");
    expect(error.message).toContain("CKAN_BASE_URL");
    // Retried like any network error (UPSTREAM_RETRIES is 1), where the deployed case gives up at once.
    expect(calls.length).toBeGreaterThan(1);
  });

  it("in a deployed worker: still the 503 that names the setting", async () => {
    const { get } = harness({
      warm: false,
      env: { CKAN_BASE_URL: "http://127.0.0.1:8788/data/en", UPSTREAM_RETRIES: "1" },
      fault: refused,
    });
    const res = await get("https://export.example.org/export.csv?resource=sample&limit=5");
    expect(res.status).toBe(503);
    expect(((await res.json()) as { error: { setting: string } }).error.setting).toBe("CKAN_BASE_URL");
  });
});
