import { afterEach, describe, expect, it, vi } from "vitest";
import { BUSY_RETRY_SECONDS, MAX_EXPORTS_PER_ISOLATE } from "../src/ckan/page-budget.ts";
import { harness } from "./harness.ts";

// An isolate's 128 MB are shared by every request it runs: past the exports it can hold, the next
// one is refused with a 503 before any upstream request, rather than an isolate killed mid-export
// taking every other request in it along.

const open: Response[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.body?.cancel()));
});

/** Polls until `check` holds: a cancelled body lets go of its export a few ticks later. */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("never held");
}

describe("an isolate running as many exports as it holds", () => {
  it("answers the next export 503 with Retry-After, says why in the request log, and takes exports again once one ends", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" }, env: { BUFFER_BYTES: "0" } });
    await get("/"); // the harness's first request lets the worker meet the site
    // Streaming downloads whose readers are slow (here: not reading at all) hold their place; from
    // as many clients (one client alone may run only MAX_EXPORTS_PER_CLIENT).
    for (let i = 0; i < MAX_EXPORTS_PER_ISOLATE; i++) {
      const response = await get(`/export.${["csv", "json", "xlsx", "ndjson"][i % 4]}?resource=sample&limit=50000`, {
        headers: { "cf-connecting-ip": `192.0.2.${i + 1}` },
      });
      expect(response.status).toBe(200);
      open.push(response);
    }

    const upstreamBefore = calls.length;
    const lines: string[] = [];
    const spy = vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    let refused: Response;
    try {
      refused = await get("/export.csv?resource=sample&limit=10");
      await refused.clone().text();
    } finally {
      spy.mockRestore();
    }
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe(String(BUSY_RETRY_SECONDS));
    expect(((await refused.json()) as { error: { message: string } }).error.message).toContain(
      `already running ${MAX_EXPORTS_PER_ISOLATE} exports`,
    );
    // Refused before its first page: the calls since are the open exports' pages ahead.
    expect(calls.slice(upstreamBefore).filter((c) => c.body.limit === 10)).toEqual([]);
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.event === "request");
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ route: "/export.csv", status: 503, refused: "isolate busy" });

    // One download given up: its place is free again.
    await open.shift()!.body!.cancel();
    await eventually(async () => {
      const response = await get("/export.csv?resource=sample&limit=10");
      const text = await response.text();
      return response.status === 200 && text.startsWith("id,");
    });
  });

  it("counts an export that ended, however it ended, no longer", async () => {
    const { get } = harness({ emulator: { version: "2.12" }, env: { BUFFER_BYTES: "0" } });
    // Twice as many whole exports, one after another, as the isolate holds at once: none is refused.
    for (let i = 0; i < 2 * MAX_EXPORTS_PER_ISOLATE; i++) {
      const response = await get(`/export.${i % 2 ? "xlsx" : "json"}?resource=sample&limit=3000`);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    // And after a failed one (an unknown column: refused before any row).
    expect((await get("/export.csv?resource=sample&fields=nope")).status).toBe(400);
    for (let i = 0; i < MAX_EXPORTS_PER_ISOLATE; i++)
      open.push(
        await get("/export.csv?resource=sample&limit=50000", { headers: { "cf-connecting-ip": `192.0.2.${i + 1}` } }),
      );
    expect(open.every((r) => r.status === 200)).toBe(true);
  });
});
