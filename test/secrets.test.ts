import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { harness, readAll, TOKEN } from "./harness.ts";

/** Every route and error path we know of, each with an upstream fault where one applies. */
const scenarios: { name: string; path: string; method?: string; fault?: (n: number) => Response | Promise<Response> | undefined; env?: Record<string, string> }[] = [
  { name: "csv", path: "/export.csv?resource=sample&limit=5" },
  { name: "json", path: "/export.json?resource=private&limit=5" },
  { name: "head", path: "/export.csv?resource=sample", method: "HEAD" },
  { name: "post", path: "/export.csv?resource=sample", method: "POST" },
  { name: "index", path: "/" },
  { name: "404", path: "/nope" },
  { name: "bad param", path: `/export.csv?resource=sample&limit=${TOKEN}` },
  { name: "unknown param", path: `/export.csv?resource=sample&${TOKEN}=1` },
  { name: "upstream 409", path: "/export.csv?resource=sample&filter.nope=1" },
  { name: "upstream type error", path: "/export.csv?resource=sample&filter.id=abc" },
  { name: "upstream 404", path: "/export.csv?resource_id=00000000-0000-4000-8000-000000000000" },
  {
    name: "upstream echoes the token",
    path: "/export.csv?resource=sample",
    fault: () => Response.json({ success: false, error: { __type: "Weird", message: `Authorization: ${TOKEN}` } }, { status: 418 }),
  },
  {
    name: "upstream 409 echoes the token",
    path: "/export.csv?resource=sample",
    fault: () => Response.json({ success: false, error: { __type: "Validation Error", q: [`bad ${TOKEN}`] } }, { status: 409 }),
  },
  { name: "upstream 500", path: "/export.csv?resource=sample", fault: () => new Response(TOKEN, { status: 500 }) },
  { name: "network", path: "/export.csv?resource=sample", fault: () => Promise.reject(new TypeError(`refused ${TOKEN}`)) },
  { name: "late failure", path: "/export.csv?resource=sample&limit=3000", env: { BUFFER_BYTES: "0" }, fault: (n) => (n > 1 ? new Response(TOKEN, { status: 503 }) : undefined) },
  { name: "bad config", path: "/export.csv?resource=sample", env: { MAX_ROWS: TOKEN } },
];

describe("the upstream token never leaves the worker", () => {
  let logged: string[];
  beforeEach(() => {
    logged = [];
    for (const level of ["log", "info", "warn", "error", "debug"] as const) {
      vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
        logged.push(args.map((a) => (a instanceof Error ? `${a.message} ${a.stack}` : String(a))).join(" "));
      });
    }
  });
  afterEach(() => vi.restoreAllMocks());

  for (const scenario of scenarios) {
    it(`on ${scenario.name}`, async () => {
      const { get, calls } = harness({ env: { UPSTREAM_RETRIES: "0", ...scenario.env }, ...(scenario.fault ? { fault: scenario.fault } : {}) });
      const res = await get(scenario.path, { method: scenario.method ?? "GET" });
      const { text } = await readAll(res);
      expect(text).not.toContain(TOKEN);
      for (const [name, value] of res.headers) expect(`${name}: ${value}`).not.toContain(TOKEN);
      // The token did go upstream, where it belongs, whenever CKAN was called.
      for (const call of calls) expect(call.authorization).toBe(TOKEN);
      await new Promise((resolve) => setTimeout(resolve, 10));
      for (const line of logged) expect(line).not.toContain(TOKEN);
    });
  }
});
