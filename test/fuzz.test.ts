import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { harness } from "./harness.ts";

const NAMES = [
  "resource",
  "resource_id",
  "q",
  "filters",
  "limit",
  "offset",
  "fields",
  "sort",
  "filename",
  "bom",
  "header",
  "delimiter",
  "formula_guard",
  "sig",
  "exp",
  "_",
  "filter.category",
  "filter.id",
  "filter.",
  "filter.name",
  "colour",
  "bom",
  "header",
  "delimiter",
  "formula_guard",
  "fields",
  "sort",
  "q",
  "offset",
];
const ROUTES = [
  "/export.csv",
  "/export.tsv",
  "/export.json",
  "/export.ndjson",
  "/export.xml",
  "/export.",
  "/",
  "/snapshots",
  "/snapshots/daily/latest.csv",
  "/snapshots/daily/manifest.json",
  "/snapshots/daily/../../x",
  "/snapshots/%00/latest.csv",
  "/nope",
];
const METHODS = ["GET", "HEAD", "POST", "OPTIONS", "DELETE"];

/** Values a hostile or careless link might carry. */
const value = fc.oneof(
  fc.constantFrom(
    "sample",
    "private",
    "big",
    "5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2",
    "0",
    "1",
    "-1",
    "1e3",
    "NaN",
    "25",
    "99999999999999999999",
  ),
  fc.constantFrom(
    '{"category":"alpha"}',
    '{"id":[1,2,"x"]}',
    '{"a":{"b":{"c":1}}}',
    "[1]",
    "null",
    '{"id":null}',
    "{",
    '"x"',
  ),
  fc.constantFrom("id desc", "amount desc, id", '"a""b"', "id sideways", "id,,", "rank", "_id", "id,name,id"),
  fc.constantFrom(
    "%",
    "%ZZ",
    "%00",
    "%C0%AF",
    "%E2%82",
    "\u0000",
    "\ud800",
    "=HYPERLINK()",
    "'; DROP TABLE x;--",
    "../../etc",
  ),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.json({ maxDepth: 4 }),
  fc.nat({ max: 3000 }).map(String),
  fc.integer({ min: 1, max: 20_000 }).map((n) => "x".repeat(n)),
);

/** Percent-encoding, or the raw text where it cannot be encoded (a lone surrogate). */
const percent = (text: string): string => {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[&#]/g, "");
  }
};

/** Sometimes encoded properly, sometimes raw: the worker must cope with both. */
const encoded = fc.tuple(value, fc.boolean()).map(([v, raw]) => (raw ? v.replace(/[&#]/g, "") : percent(v)));
const pair = fc
  .tuple(fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 12 })), encoded)
  .map(([n, v]) => `${percent(n)}=${v}`);
/** Usually a valid start, so the random part reaches the deeper checks, not just the first one. */
const base = fc.constantFrom(
  "resource=sample&",
  "resource=sample&limit=5&",
  "resource_id=5bdeaf06-c4e9-4f62-a1e1-b297b8a783a2&",
  "",
);
const queryString = fc.tuple(base, fc.array(pair, { maxLength: 4 })).map(([start, pairs]) => start + pairs.join("&"));

describe("hostile query strings", () => {
  it("only ever get a 2xx/3xx/4xx, and every 4xx is a JSON error", async () => {
    const { get } = harness({
      emulator: { version: "2.12" },
      env: {
        MAX_ROWS: "2000",
        ADMIN_TOKEN: "admin-x",
        SNAPSHOT_JOBS: JSON.stringify([{ name: "daily", resource: "sample", limit: 5 }]),
      },
    });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ROUTES),
        fc.constantFrom(...METHODS),
        queryString,
        async (route, method, query) => {
          let res: Response;
          try {
            res = await get(`${route}?${query}`, { method });
          } catch (error) {
            // The Request constructor itself may refuse a URL; that never reaches the worker.
            if (error instanceof TypeError) return;
            throw error;
          }
          const body = new TextDecoder().decode(await res.arrayBuffer());
          expect(res.status, `${method} ${route}?${query}: ${body.slice(0, 300)}`).toBeLessThan(500);
          if (res.status >= 400) {
            expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
            const parsed = JSON.parse(body) as { error: { status: number; message: string } };
            expect(parsed.error.status).toBe(res.status);
            expect(parsed.error.message.length).toBeGreaterThan(10);
          }
        },
      ),
      { numRuns: 2500 },
    );
  });
});
