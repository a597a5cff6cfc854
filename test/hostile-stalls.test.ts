// Issue 25, item 2: clients that start downloads and stop reading. A stalled download is stopped
// (its upstream requests aborted, its place in the isolate freed), and one client cannot take every
// place the isolate has.
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_EXPORTS_PER_CLIENT, MAX_EXPORTS_PER_ISOLATE } from "../src/ckan/page-budget.ts";
import { harness } from "./harness.ts";

const open: ReadableStreamDefaultReader<Uint8Array>[] = [];
afterEach(async () => {
  await Promise.allSettled(open.splice(0).map((reader) => reader.cancel()));
  vi.restoreAllMocks();
});

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("never held");
}

/** A download started and read once, then never again. */
async function stall(get: (path: string, init?: RequestInit) => Promise<Response>, client: string): Promise<Response> {
  const response = await get("/export.csv?resource=sample&limit=50000", { headers: { "cf-connecting-ip": client } });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  await reader.read();
  open.push(reader);
  return response;
}

describe("downloads whose clients stop reading", () => {
  it("are stopped after STALL_SECONDS: their upstream requests aborted, their places freed, logged as 408", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    const { get, calls } = harness({ emulator: { version: "2.12" }, env: { BUFFER_BYTES: "0", STALL_SECONDS: "1" } });
    await get("/");
    // As many stalled downloads as the isolate holds, from as many clients.
    for (let i = 0; i < MAX_EXPORTS_PER_ISOLATE; i++) await stall(get, `192.0.2.${i + 1}`);
    expect(
      (await get("/export.csv?resource=sample&limit=10", { headers: { "cf-connecting-ip": "192.0.2.99" } })).status,
    ).toBe(503);
    // Once they are found stalled, every one of their upstream requests is aborted...
    await until(() => lines.filter((line) => line.includes('"status":408')).length === MAX_EXPORTS_PER_ISOLATE);
    const stalledCalls = calls.filter((call) => call.body.limit !== 10 && call.body.limit !== 1);
    expect(stalledCalls.length).toBeGreaterThanOrEqual(MAX_EXPORTS_PER_ISOLATE);
    expect(stalledCalls.filter((call) => !call.signal.aborted)).toEqual([]);
    // ...and another client is served at once.
    const next = await get("/export.csv?resource=sample&limit=10", { headers: { "cf-connecting-ip": "192.0.2.99" } });
    expect(next.status).toBe(200);
    const text = await next.text();
    expect(text.startsWith("id,")).toBe(true);
    expect(text).toContain("\r\n10,");
    const logged = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((entry) => entry.status === 408);
    expect(logged[0]).toMatchObject({
      event: "request",
      route: "/export.csv",
      error: expect.stringMatching(/no progress for 1 s/),
    });
  });

  it("end with the #EXPORT INCOMPLETE line for a reader that comes back, then a broken transfer", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    const { get } = harness({ emulator: { version: "2.12" }, env: { BUFFER_BYTES: "0", STALL_SECONDS: "1" } });
    await stall(get, "198.51.100.1");
    const reader = open.at(-1)!;
    await until(() => lines.some((line) => line.includes('"status":408')));
    let text = "";
    const decoder = new TextDecoder();
    const error = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        text += decoder.decode(value, { stream: true });
      }
    })().catch((e: unknown) => e);
    expect(error).toMatchObject({ message: expect.stringMatching(/download cut short|no progress/) });
    expect(text.trimEnd().split("\n").at(-1)).toMatch(
      /^"?#EXPORT INCOMPLETE: The download made no progress for 1 s \(the client stopped reading\)/,
    );
  });
});

describe("one client's downloads", () => {
  it(`at most ${MAX_EXPORTS_PER_CLIENT} at once per client: the next is a 429 with Retry-After, while another client is served at once`, async () => {
    const { get } = harness({ emulator: { version: "2.12" }, env: { BUFFER_BYTES: "0" } });
    for (let i = 0; i < MAX_EXPORTS_PER_CLIENT; i++) await stall(get, "203.0.113.7");
    const refused = await get("/export.csv?resource=sample&limit=10", {
      headers: { "cf-connecting-ip": "203.0.113.7" },
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /already running 3 exports at once/,
    );
    const other = await get("/export.csv?resource=sample&limit=10", { headers: { "cf-connecting-ip": "203.0.113.8" } });
    expect(other.status).toBe(200);
    await other.text();
    // One of the first client's downloads given up: it may start another.
    await open.shift()!.cancel();
    await until(async () => {
      const again = await get("/export.csv?resource=sample&limit=10", {
        headers: { "cf-connecting-ip": "203.0.113.7" },
      });
      await again.arrayBuffer();
      return again.status === 200;
    });
  });
});
