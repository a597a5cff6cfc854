import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { createEmulator, EMULATOR_RESOURCES, type EmulatorOptions } from "../emulator/index.ts";
import { LruCache } from "../emulator/lru-cache.ts";
import { plan } from "../emulator/plan.ts";
import { findResource } from "../emulator/resources.ts";
import { rowAt } from "../emulator/sample-rows.ts";
import { select, type Matched } from "../emulator/search.ts";
import { validateSchema } from "../emulator/validate.ts";
import { FIXTURES } from "./fixtures/ckan-2.10.ts";

// The emulator is held against real CKAN 2.10.10 answers: same statuses, envelopes, key order,
// column types and error texts. Totals and cell values differ, since the data set is generated.

const TOKEN = "test-token";
const { sample, big } = EMULATOR_RESOURCES;
const ENDPOINT = "http://ckan.test/data/en/api/action/datastore_search";

type Json = Record<string, unknown>;
interface Field {
  id: string;
  type: string;
}
interface Result extends Json {
  fields: Field[];
  records: unknown;
  total?: number;
  next_page?: Json;
}

async function call(body: Json, options: EmulatorOptions & { authorization?: string } = {}) {
  const emulator = createEmulator({ token: TOKEN, version: "2.10", ...options });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.authorization !== undefined) headers["authorization"] = options.authorization;
  const response = await emulator.fetch(new Request(ENDPOINT, { method: "POST", headers, body: JSON.stringify(body) }));
  return { response, body: (await response.json()) as Json };
}

/** The result with every JSON number kept as its text (JSON.parse's reviver sees the source). */
async function searchLossless(body: Json, options: EmulatorOptions = {}): Promise<Result> {
  const response = await createEmulator({ token: TOKEN, version: "2.10", ...options }).fetch(
    new Request(ENDPOINT, { method: "POST", body: JSON.stringify(body) }),
  );
  expect(response.status).toBe(200);
  const keepText = (_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === "number" ? context?.source : value;
  return (JSON.parse(await response.text(), keepText as (key: string, value: unknown) => unknown) as { result: Result })
    .result;
}

async function search(body: Json, options: EmulatorOptions & { authorization?: string } = {}): Promise<Result> {
  const { response, body: json } = await call(body, options);
  expect(response.status, JSON.stringify(json)).toBe(200);
  return json["result"] as Result;
}

/** The JSON types a cell of each PostgreSQL type may take in `records`. */
const CELL_TYPES: Record<string, string[]> = {
  int: ["number"],
  int4: ["number", "null"],
  numeric: ["number", "null"],
  float8: ["number", "null"],
  float: ["number"],
  text: ["string", "null"],
  timestamp: ["string", "null"],
  bool: ["boolean", "null"],
};

function jsonType(value: unknown): string {
  return value === null ? "null" : typeof value;
}

/** Every record has the shape its fields promise: keys (or list positions) and JSON cell types. */
function expectRecordShapes(result: Result): void {
  const { fields: columns, records } = result;
  if (result["records_format"] === "csv" || result["records_format"] === "tsv") {
    expect(typeof records).toBe("string");
    if (records !== "") expect(String(records).endsWith("\n")).toBe(true);
    return;
  }
  expect(Array.isArray(records)).toBe(true);
  const ids = columns.map((f) => f.id).join();
  const problems: string[] = [];
  for (const [n, record] of (records as unknown[]).entries()) {
    const cells = Array.isArray(record) ? record : Object.values(record as Json);
    if (!Array.isArray(record) && Object.keys(record as Json).join() !== ids) problems.push(`record ${n}: keys`);
    if (cells.length !== columns.length) problems.push(`record ${n}: ${cells.length} cells`);
    cells.forEach((cell, i) => {
      const column = columns[i];
      if (!CELL_TYPES[column?.type ?? ""]?.includes(jsonType(cell)))
        problems.push(`record ${n}: ${column?.id} is ${jsonType(cell)}`);
    });
  }
  expect(problems).toEqual([]);
}

describe("side by side with real CKAN 2.10 answers", () => {
  for (const [name, fixture] of Object.entries(FIXTURES)) {
    it(name, async () => {
      const authorization =
        name === "private_with_token" ? TOKEN : name === "err_bad_token" ? "wrong-token" : undefined;
      const { response, body } = await call(fixture.request, { authorization });
      const expected = fixture.body as Json;
      expect(response.status).toBe(fixture.status);
      expect(response.headers.get("content-type")).toBe(fixture.content_type);
      expect(Object.keys(body)).toEqual(Object.keys(expected));
      if (expected["error"] !== undefined) {
        // Errors carry no data of ours, so they must match to the letter.
        expect(body).toEqual(expected);
        return;
      }
      const result = body["result"] as Result;
      const real = expected["result"] as Result;
      expect(Object.keys(result)).toEqual(Object.keys(real));
      // The recorded table had no data dictionary; the emulated one describes its columns (`info`).
      expect(result.fields.map(({ id, type }) => ({ id, type }))).toEqual(real.fields);
      for (const key of Object.keys(real)) {
        if (!["records", "fields", "total"].includes(key)) expect(result[key], key).toEqual(real[key]);
      }
      expectRecordShapes(real);
      expectRecordShapes(result);
    });
  }
});

describe("full-text search", () => {
  it("orders by rank, then _id, and every row holds every word", async () => {
    const result = await search({ resource_id: sample, q: "Glacier, river!", limit: 200 });
    expect(result.fields.at(-1)).toEqual({ id: "rank", type: "float" });
    const records = result.records as Json[];
    expect(records.length).toBe(200);
    for (const [i, record] of records.entries()) {
      const text = Object.values(record).join(" ").toLowerCase();
      expect(text).toMatch(/\bglacier\b/);
      expect(text).toMatch(/\briver\b/);
      const previous = records[i - 1];
      if (previous === undefined) continue;
      expect(previous["rank"] as number).toBeGreaterThanOrEqual(record["rank"] as number);
      if (previous["rank"] === record["rank"]) expect(previous["_id"] as number).toBeLessThan(record["_id"] as number);
    }
    expect(new Set(records.map((r) => r["rank"])).size).toBeGreaterThan(1);
  });

  it("searches one column with a q object and names the rank after it", async () => {
    const result = await search({ resource_id: sample, q: { name: "Zürich" }, limit: 20 });
    expect(result.fields.at(-1)).toEqual({ id: "rank name", type: "float" });
    for (const record of result.records as Json[]) expect(record["name"]).toMatch(/Zürich/);
  });

  it("adds no rank column when fields are chosen, unless rank is asked for", async () => {
    const plain = await search({ resource_id: sample, q: "glacier", fields: ["_id", "name"], limit: 5 });
    expect(plain.fields.map((f) => f.id)).toEqual(["_id", "name"]);
    expect(Object.keys((plain.records as Json[])[0] ?? {})).toEqual(["_id", "name"]);
    const withRank = await search({ resource_id: sample, q: "glacier", fields: "rank,_id", limit: 5 });
    expect(withRank.fields).toEqual([
      { id: "rank", type: "float" },
      { id: "_id", type: "int" },
    ]);
  });
});

describe("filters", () => {
  it("treats a list as IN and compares by the column's type", async () => {
    const result = await search({
      resource_id: sample,
      filters: { id: [4, "1", 2, 3, 99999999], category: ["alpha", "beta"] },
    });
    const records = result.records as Json[];
    expect(result.total).toBe(records.length);
    for (const record of records) {
      expect([1, 2, 3, 4]).toContain(record["_id"]);
      expect(["alpha", "beta"]).toContain(record["category"]);
    }
    const expected = [0, 1, 2, 3].filter((i) => ["alpha", "beta"].includes(String(rowAt(i)[4])));
    expect(records.map((r) => r["_id"])).toEqual(expected.map((i) => i + 1));
  });

  it("refuses a value the column's type cannot read, as PostgreSQL would", async () => {
    const { response, body } = await call({ resource_id: sample, filters: { id: "abc" } });
    expect(response.status).toBe(409);
    const error = body["error"] as Json;
    expect(error["query"]).toEqual(["Invalid query"]);
    expect(error["__type"]).toBe("Validation Error");
    const info = error["info"] as { statement: string[]; params: unknown[]; orig: string[] };
    // PostgreSQL's message, then the LINE excerpt libpq adds with a caret under the bad value.
    expect(info.orig[0]).toMatch(/^invalid input syntax for type integer: "abc"\nLINE 6: .*"id" = 'abc'\) .*\n +\^\n$/);
    expect(info.statement[0]).toContain('WHERE ("id" = %s) ORDER BY _id LIMIT 100 OFFSET 0');
    expect(info.params).toEqual([["abc"]]);
  });
});

describe("sort", () => {
  it("puts nulls first when descending and last when ascending", async () => {
    const desc = (await search({ resource_id: sample, sort: "amount desc", fields: ["_id", "amount"], limit: 6000 }))
      .records as Json[];
    const firstValue = desc.findIndex((r) => r["amount"] !== null);
    expect(firstValue).toBeGreaterThan(0);
    expect(desc.slice(firstValue).every((r) => r["amount"] !== null)).toBe(true);
    const amounts = desc.slice(firstValue).map((r) => r["amount"] as number);
    expect(amounts).toEqual([...amounts].sort((a, b) => b - a));

    const asc = await search({ resource_id: sample, sort: ["amount"], fields: ["amount"], limit: 10, offset: 99_990 });
    expect((asc.records as Json[]).every((r) => r["amount"] === null)).toBe(true);
  });

  it("accepts quoted names and mixed-case directions, and rejects the whole unknown clause", async () => {
    const result = await search({ resource_id: sample, sort: '"category" DESC, _id', fields: "category", limit: 1 });
    expect(result.records).toEqual([{ category: "gamma" }]);
    const { body } = await call({ resource_id: sample, sort: "amount desc, nope asc" });
    expect((body["error"] as Json)["sort"]).toEqual(['invalid value "nope asc"']);
  });
});

describe("paging", () => {
  it("returns every row exactly once across offsets in _id order", async () => {
    const ids: number[] = [];
    for (let offset = 0; offset < 100_000; offset += 32_000) {
      const page = await search({
        resource_id: sample,
        fields: ["_id"],
        records_format: "lists",
        limit: 50_000,
        offset,
      });
      expect(page["limit"]).toBe(32_000);
      ids.push(...(page.records as number[][]).map(([id]) => id ?? 0));
    }
    expect(ids).toEqual(Array.from({ length: 100_000 }, (_, i) => i + 1));
  });

  it("returns every row exactly once across offsets in another order", async () => {
    const seen = new Set<number>();
    let total = 0;
    for (let offset = 0; offset < 100_000; offset += 25_000) {
      const page = await search({
        resource_id: sample,
        sort: "category, created desc",
        fields: "_id",
        records_format: "lists",
        limit: 25_000,
        offset,
      });
      total = page.total ?? 0;
      for (const [id] of page.records as number[][]) seen.add(id ?? 0);
    }
    expect(total).toBe(100_000);
    expect(seen.size).toBe(100_000);
  });

  it("answers a deep offset into the million-row table without scanning it", async () => {
    const emulator = createEmulator({ version: "2.10" });
    const started = performance.now();
    for (let round = 0; round < 20; round++) {
      const request = new Request(ENDPOINT, {
        method: "POST",
        body: JSON.stringify({ resource_id: big, offset: 990_000 + round, limit: 5 }),
      });
      const result = ((await (await emulator.fetch(request)).json()) as { result: Result }).result;
      expect((result.records as Json[]).map((r) => r["_id"])).toEqual([1, 2, 3, 4, 5].map((n) => 990_000 + round + n));
      expect(result.total).toBe(1_000_000);
    }
    expect(performance.now() - started).toBeLessThan(1000);
    expect(emulator.requests).toBe(20);
    const last = await search({
      resource_id: big,
      offset: 990_000,
      limit: 32_000,
      fields: ["_id"],
      records_format: "lists",
    });
    expect((last.records as number[][]).length).toBe(10_000);
    expect((last.records as number[][]).at(-1)).toEqual([1_000_000]);
  });

  it("pages in _id order by arithmetic on row numbers, never by a scan", () => {
    const cache = new LruCache<Matched>(4);
    const run = (raw: Json) => {
      const params = validateSchema(raw, { rowsMax: 32_000, nextPage: true });
      return select(plan(params, findResource(params.resourceId)!, "2.12"), cache);
    };
    const deep = run({ resource_id: big, offset: 990_000, sort: "_id desc" });
    expect(deep.rows.map((row) => row.index + 1).slice(0, 2)).toEqual([10_000, 9_999]);
    const keyset = run({ resource_id: big, filters: { _id: { gt: 999_990, lte: 999_995 } }, limit: 32_000 });
    expect(keyset.matched).toBe(5);
    expect(cache.size).toBe(0);
    // A filter on another column has to scan, and the scan is kept for the next page.
    run({ resource_id: sample, filters: { category: "beta" }, limit: 1 });
    expect(cache.size).toBe(1);
  });

  it("links pages like CKAN 2.10: next always, prev only past the first two", async () => {
    const links = async (offset: number) => (await search({ resource_id: sample, limit: 10, offset }))["_links"];
    expect(await links(10)).toEqual({
      start: "/api/action/datastore_search",
      next: "/api/action/datastore_search?offset=20",
    });
    expect((await links(25)) as Json).toHaveProperty("prev", "/api/action/datastore_search?offset=15");
    expect((await links(99_995)) as Json).toHaveProperty("next", "/api/action/datastore_search?offset=100005");
  });
});

describe("CKAN 2.12 mode", () => {
  it("hands out next_page until the last page, and the pages cover the match exactly", async () => {
    const filters: Json = { category: "beta" };
    const ids: number[] = [];
    let expected = -1;
    for (let guard = 0; guard < 100; guard++) {
      const page = await search(
        { resource_id: sample, filters, fields: ["_id"], limit: 5000, include_next_page: true },
        { version: "2.12" },
      );
      expect(page).not.toHaveProperty("_links");
      if (expected < 0) expected = page.total ?? 0;
      ids.push(...(page.records as Json[]).map((r) => r["_id"] as number));
      if (page.next_page === undefined) break;
      expect(page.next_page).toEqual({ _id: { gt: ids.at(-1) } });
      Object.assign(filters, page.next_page);
    }
    expect(ids.length).toBe(expected);
    expect(new Set(ids).size).toBe(expected);
  });

  it("takes range filters, which 2.10 cannot bind", async () => {
    const range = { resource_id: sample, filters: { _id: { gte: 5, lt: 8 } }, fields: "_id" };
    expect((await search(range, { version: "2.12" })).records).toEqual([{ _id: 5 }, { _id: 6 }, { _id: 7 }]);
    const { response } = await call(range);
    expect(response.status).toBe(409);
  });

  it("is refused by 2.10 as an unknown parameter", async () => {
    const { response, body } = await call({ resource_id: sample, include_next_page: true });
    expect(response.status).toBe(409);
    expect(body["error"]).toEqual({ __extras: ['invalid value "include_next_page"'], __type: "Validation Error" });
  });
});

describe("records_format csv and tsv", () => {
  const pgText = (value: unknown): string =>
    value === null ? "" : value === true ? "t" : value === false ? "f" : String(value);

  for (const [format, delimiter] of [
    ["csv", ","],
    ["tsv", "\t"],
  ] as const) {
    it(`${format} reads back equal to the lists format`, async () => {
      const request = { resource_id: sample, limit: 3000, offset: 17 };
      // Numbers as their JSON text: CSV keeps every digit and trailing zero ("1274.30").
      const lists = (await searchLossless({ ...request, records_format: "lists" })).records as unknown[][];
      const text = (await search({ ...request, records_format: format })).records as string;
      const parsed = Papa.parse<string[]>(text.slice(0, -1), { delimiter, newline: "\n", quoteChar: '"' });
      expect(parsed.errors).toEqual([]);
      expect(parsed.data).toEqual(lists.map((row) => row.map(pgText)));
    });
  }

  it("writes COPY style: t/f, empty for null, quoted empty string, doubled quotes", async () => {
    const text = (await search({ resource_id: sample, records_format: "csv", limit: 1000 })).records as string;
    expect(text).toMatch(/,t\n/);
    expect(text).toMatch(/,f\n/);
    expect(text).toMatch(/,,/);
    expect(text).toMatch(/,"",/);
    expect(text).toContain('"He said ""');
  });
});

describe("requests and routes", () => {
  it("reads GET query strings, JSON-encoded filters included", async () => {
    const emulator = createEmulator({ version: "2.10" });
    const url = `${ENDPOINT}?resource_id=${sample}&limit=2&filters=${encodeURIComponent('{"category":"beta"}')}`;
    const body = (await (await emulator.fetch(new Request(url))).json()) as { result: Result };
    expect(body.result["filters"]).toEqual({ category: "beta" });
    expect((body.result.records as Json[]).every((r) => r["category"] === "beta")).toBe(true);
    expect((body.result["_links"] as Json)["next"]).toMatch(/&offset=2$/);
  });

  it("answers an unreadable body with a bare JSON string, and other paths with 404", async () => {
    const emulator = createEmulator({ version: "2.10" });
    const bad = await emulator.fetch(new Request(ENDPOINT, { method: "POST", body: "{not json" }));
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatch(/^Bad request - JSON Error: /);
    const elsewhere = await emulator.fetch(new Request("http://ckan.test/dataset/sample"));
    expect(elsewhere.status).toBe(404);
    expect(elsewhere.headers.get("content-type")).toBe("application/json;charset=utf-8");
    expect(emulator.requests).toBe(1);
  });

  it("caps limit at rowsMax and echoes the cap", async () => {
    const result = await search({ resource_id: sample, limit: 500, fields: "_id" }, { rowsMax: 300 });
    expect(result["limit"]).toBe(300);
    expect((result.records as unknown[]).length).toBe(300);
  });
});

describe("generated rows", () => {
  it("are a pure function of the index with the awkward values an export must survive", () => {
    expect(rowAt(12345)).toEqual(rowAt(12345));
    const rows = Array.from({ length: 3000 }, (_, i) => rowAt(i));
    const column = (n: number) => rows.map((row) => row[n]);
    const texts = [...column(5), ...column(7)].filter((v): v is string => typeof v === "string");
    for (const pattern of [
      /^=/,
      /^-\d+$/,
      /^-[a-z]/,
      /^\+/,
      /^@/,
      /^\d+$/,
      /\r\n/,
      /[^\r]\n/,
      /"/,
      /,/,
      /Ñandú/,
      /Zürich/,
      /\p{Extended_Pictographic}/u,
    ]) {
      expect(
        texts.some((text) => pattern.test(text)),
        String(pattern),
      ).toBe(true);
    }
    for (const n of [2, 5, 6, 8, 9]) expect(column(n)).toContain(null);
    // numeric as PostgreSQL's text: two decimals kept, and now and then more digits than a double holds.
    const amounts = column(2).filter((v): v is string => typeof v === "string");
    expect(amounts.every((v) => /^-?\d+\.\d+$/.test(v))).toBe(true);
    expect(amounts.some((v) => v.startsWith("-"))).toBe(true);
    expect(amounts.some((v) => v.endsWith("0"))).toBe(true);
    expect(amounts.some((v) => v.replace(/\D/g, "").length >= 18 && String(Number(v)) !== v)).toBe(true);
    // Amounts in Canadian dollars a grant may be (the page heads them "Amount (CAD)"): -6,000 to
    // 10,000, at most 19 digits; the 29-digit values are the edge table's.
    expect(
      amounts.every(
        (v) => /^-?\d{1,5}\.\d+$/.test(v) && Math.abs(Number(v)) <= 10_000 && v.replace(/\D/g, "").length <= 19,
      ),
    ).toBe(true);
    const created = column(8).filter((v): v is string => v !== null);
    expect(created).toEqual([...created].sort());
    expect(new Set(created).size).toBe(created.length);
    expect(created[0]).toMatch(/^2020-01-01T\d\d:\d\d:\d\d$/);
  });
});
