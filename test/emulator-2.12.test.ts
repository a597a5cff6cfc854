import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { float8Text } from "../emulator/number-text.ts";
import { EDGE_COLUMNS, EDGE_ROWS } from "../emulator/edge-rows.ts";
import { createEmulator, EMULATOR_RESOURCES, type EmulatorOptions } from "../emulator/index.ts";
import { pyDumps } from "../emulator/py-json.ts";
import { FIXTURES, RECORDED_TABLE_ID, RECORDED_TABLE_TAIL, type Fixture } from "./fixtures/ckan-2.12.ts";
import { csvRows, edgeRows, holdsWord, members, rowsOf, splitRecords, TOTALS } from "./recorded-answers.ts";

// The emulator in 2.12 mode, on its `edge` resource, held against real CKAN 2.12 answers over the
// table it copies: same status, same bytes. Where the recording holds CKAN's exact text
// (`raw_body_text`), records are compared as text; the envelope is compared as text everywhere.
// Two things cannot match and are compared for what they are instead:
// - `total` of a query whose count depends on the rows the recording did not show (the real table
//   has 200000 rows, the emulated one EDGE_ROWS): held against a count made here from the data;
// - the order of rows that tie on rank in a full-text search, which PostgreSQL leaves open: the
//   rows are compared as a set.

const TOKEN = "test-token";
const { edge } = EMULATOR_RESOURCES;
const ENDPOINT = "http://ckan.test/api/3/action/datastore_search";

type Json = Record<string, unknown>;

async function call(body: unknown, options: EmulatorOptions & { authorization?: boolean } = {}) {
  const emulator = createEmulator({ token: TOKEN, version: "2.12", ...options });
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.authorization !== false) headers["authorization"] = TOKEN;
  const response = await emulator.fetch(new Request(ENDPOINT, { method: "POST", headers, body: JSON.stringify(body) }));
  return { response, text: await response.text() };
}

async function result(body: Json, options: EmulatorOptions = {}): Promise<Json> {
  const { response, text } = await call(body, options);
  expect(response.status, text.slice(0, 2000)).toBe(200);
  return (JSON.parse(text) as { result: Json }).result;
}

/** The recording's text for the emulated table: its resource id, and the real table's name in excerpts. */
function forEdge(text: string): string {
  return text
    .replaceAll(RECORDED_TABLE_ID, edge)
    .replaceAll(RECORDED_TABLE_TAIL, edge.slice(-RECORDED_TABLE_TAIL.length));
}

describe("side by side with real CKAN 2.12 answers", () => {
  it("covers every recording", () => {
    expect(Object.keys(FIXTURES).length).toBe(21);
  });

  for (const [name, fixture] of Object.entries(FIXTURES) as [string, Fixture][]) {
    it(name, async () => {
      const request = JSON.parse(forEdge(JSON.stringify(fixture.request))) as Json;
      const { response, text } = await call(request, { authorization: fixture.authorization });
      expect(response.status).toBe(fixture.status);
      expect(response.headers.get("content-type")).toBe(fixture.content_type);

      const body = fixture.body as Json;
      if (body["error"] !== undefined) {
        // Errors carry no data of ours: byte for byte, the SQL and PostgreSQL's excerpt included.
        expect(text).toBe(forEdge(fixture.raw_body_text ?? pyDumps(body)));
        return;
      }

      let recorded = forEdge(fixture.raw_body_text ?? pyDumps(body));
      const total = TOTALS[name];
      if (total !== undefined) recorded = recorded.replace(/"total": \d+/, `"total": ${total()}`);
      const mine = splitRecords(text);
      const real = splitRecords(recorded);
      expect(mine.envelope).toBe(real.envelope);

      const records = (body["result"] as Json)["records"];
      if (fixture.raw_body_text === undefined) {
        // Records went through Python floats: compare values, and only as many rows as were kept.
        const kept = records as unknown[];
        const parsed = JSON.parse(mine.records) as unknown[];
        expect(parsed.slice(0, kept.length)).toEqual(kept);
        expect(parsed.length).toBe(
          Math.min(32000, total?.() ?? kept.length, (fixture.request["limit"] as number | undefined) ?? 100),
        );
      } else if (typeof fixture.request["q"] === "string") {
        // Rows that tie on rank come in an order PostgreSQL does not define.
        expect(rowsOf(mine.records).sort()).toEqual(rowsOf(real.records).sort());
      } else {
        expect(mine.records).toBe(real.records);
      }
    });
  }
});

describe("records text, every edge row", () => {
  /** A lists cell as COPY writes it: JSON text for arrays, json and numbers; t/f; empty for null. */
  function copyCellFromJson(cell: string, column: string): string {
    if (cell === "null") return column === "tags" || column === "meta" ? "null" : "";
    if (cell === "true") return "t";
    if (cell === "false") return "f";
    return cell.startsWith('"') ? (JSON.parse(cell) as string) : cell;
  }

  for (const [format, delimiter] of [
    ["csv", ","],
    ["tsv", "\t"],
  ] as const) {
    it(`${format} holds the same text as lists, cell for cell, across pages`, async () => {
      for (let offset = 0; offset < EDGE_ROWS; offset += 1000) {
        const request = { resource_id: edge, limit: 1000, offset };
        const lists = splitRecords((await call({ ...request, records_format: "lists" })).text).records;
        const copy = (await result({ ...request, records_format: format }))["records"] as string;
        const expected = members(lists).map((row) =>
          members(row).map((cell, i) => copyCellFromJson(cell, EDGE_COLUMNS[i]?.id ?? "")),
        );
        const parsed = Papa.parse<string[]>(copy.slice(0, -1), { delimiter, newline: "\n", quoteChar: '"' });
        expect(parsed.errors).toEqual([]);
        expect(parsed.data).toEqual(expected);
        expect(copy.endsWith("\n")).toBe(true);
      }
    });
  }

  it("quotes in CSV only what needs quoting: an empty string, and cells with a comma, quote, CR or LF", async () => {
    const csv = (await result({ resource_id: edge, records_format: "csv", limit: 12 }))["records"] as string;
    const rows = csvRows(csv);
    expect(rows[8]).toContain(',"",'); // row 9's empty name; its null cells are bare
    expect(rows[10]).toContain(",,-,"); // row 11's null note
    expect(rows[5]).toContain(",\tTabbed,"); // a tab needs no quotes in CSV
    expect(rows[6]).toContain(',"\r\nstarts CRLF",');
    expect(rows[7]).toContain(",f,null,"); // a null array is the text null
    expect(rows[4]?.endsWith(",null\n")).toBe(true); // and so is a null json value
  });

  it("writes numbers in JSON with every digit PostgreSQL prints", async () => {
    const { text } = await call({
      resource_id: edge,
      filters: { id: [4, 5, 7] },
      fields: "amount,ratio",
      records_format: "lists",
    });
    expect(splitRecords(text).records).toBe(
      "[[12345678901234567890.123456789,0.05991945753341821],[-0.50,-3.407019206677593e+17],[42583.010,-3.6762611479600606e-10]]",
    );
  });

  it("agrees with 2.10 on every value but the timestamps' milliseconds", async () => {
    const request = { resource_id: edge, limit: 400, offset: 30, records_format: "objects" };
    const v212 = splitRecords((await call(request)).text).records;
    const v210 = splitRecords((await call(request, { version: "2.10" })).text).records;
    expect(v212).toMatch(/"created":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}"/);
    expect(v210).not.toMatch(/"created":"[^"]*\./);
    expect(v212.replace(/("created":"[^".]*)\.\d{3}"/g, '$1"')).toBe(v210);
  });

  it("answers by alias with the resource id", async () => {
    const answer = await result({ resource_id: "edge", limit: 1 });
    expect(answer["resource_id"]).toBe(edge);
  });
});

describe("generated edge rows", () => {
  const after37 = edgeRows.slice(37);
  const column = (id: string) => after37.map((row) => row[EDGE_COLUMNS.findIndex((c) => c.id === id) - 1]);
  const texts = [...column("name"), ...column("formula")].filter((v): v is string => typeof v === "string");

  it("mix the recorded kinds of values into thousands of rows", () => {
    expect(EDGE_ROWS).toBeGreaterThan(3000);
    const amounts = column("amount").filter((v): v is string => typeof v === "string");
    expect(amounts.some((v) => v.replace(/\D/g, "").length >= 29)).toBe(true);
    expect(amounts.some((v) => /\.\d*0$/.test(v))).toBe(true);
    const ratios = column("ratio").filter((v): v is number => typeof v === "number");
    expect(ratios.some((v) => float8Text(v).includes("e+"))).toBe(true);
    expect(ratios.some((v) => float8Text(v).includes("e-"))).toBe(true);
    for (const pattern of [
      /\r\n/,
      /[^\r]\n/,
      /"/,
      /,/,
      /\t/,
      /^=/,
      /^\+/,
      /^-/,
      /^@/,
      /^$/,
      /Ñandú/,
      /\p{Extended_Pictographic}/u,
    ]) {
      expect(
        texts.some((text) => pattern.test(text)),
        String(pattern),
      ).toBe(true);
    }
    const tags = column("tags").filter((v): v is (string | null)[] => Array.isArray(v));
    expect(tags.some((t) => t.some((item) => item?.includes("{")))).toBe(true);
    expect(tags.some((t) => t.includes("NULL"))).toBe(true);
    expect(tags.some((t) => t.includes(null))).toBe(true);
    expect(tags.some((t) => t.some((item) => item?.includes('"')))).toBe(true);
    const metas = column("meta").filter((v): v is string => typeof v === "string");
    expect(metas.some((m) => /\d{20}/.test(m) && m.includes("\\u00d1"))).toBe(true);
    for (const { id } of EDGE_COLUMNS.slice(2)) {
      if (id !== "category") expect(column(id), id).toContain(null);
    }
  });
});

describe("CKAN 2.12 behaviour", () => {
  it("counts an unfiltered table from a cache that can be stale, and anything filtered exactly", async () => {
    const stale = { staleTotal: 321 };
    expect((await result({ resource_id: edge, limit: 0 }, stale))["total"]).toBe(EDGE_ROWS - 321);
    expect(
      (await result({ resource_id: edge, limit: 0, include_total: true, total_estimation_threshold: 1 }, stale))[
        "total"
      ],
    ).toBe(EDGE_ROWS - 321);
    expect((await result({ resource_id: edge, limit: 0, filters: { category: "beta" } }, stale))["total"]).toBe(
      edgeRows.filter((row) => row[3] === "beta").length,
    );
    expect((await result({ resource_id: edge, limit: 0, q: "canyon" }, stale))["total"]).toBe(
      edgeRows.filter(holdsWord("canyon")).length,
    );
    const all = await result({ resource_id: edge, limit: 32000, fields: "_id", records_format: "lists" }, stale);
    expect((all["records"] as unknown[]).length).toBe(EDGE_ROWS);
    expect(all).not.toHaveProperty("total_was_estimated");
  });

  it("pages the whole table by keyset, 1000 rows a page", async () => {
    const ids: number[] = [];
    let filters: Json = {};
    for (let page = 0; page < 10; page++) {
      const answer = await result({
        resource_id: edge,
        limit: 1000,
        fields: ["_id"],
        records_format: "lists",
        include_next_page: true,
        include_total: false,
        filters,
      });
      const rows = answer["records"] as number[][];
      ids.push(...rows.map(([id]) => id ?? 0));
      if (rows.length < 1000) {
        expect(answer).not.toHaveProperty("next_page");
        break;
      }
      expect(answer["next_page"]).toEqual({ _id: { gt: ids.at(-1) } });
      filters = answer["next_page"] as Json;
    }
    expect(ids).toEqual(Array.from({ length: EDGE_ROWS }, (_, i) => i + 1));
  });

  it("takes range filters on any column, numeric ones compared with every digit", async () => {
    const ids = async (filters: Json) =>
      (
        (await result({ resource_id: edge, filters, fields: "_id", limit: 32000, records_format: "lists" }))[
          "records"
        ] as number[][]
      ).map(([id]) => id);
    // A double cannot tell 12345678901234567890.123456789 from 12345678901234567890.12345678.
    expect(await ids({ id: { lte: 12 }, amount: { gt: "12345678901234567890.12345678" } })).toEqual([4]);
    expect(await ids({ id: { lte: 12 }, amount: { gte: "-0.5", lte: "0" } })).toEqual([5, 8]);
    expect(await ids({ created: { lt: "2000-01-01" } })).toEqual([7]);
    expect(await ids({ id: { lt: 40 }, day: { gte: "2000-02-05", lt: "2000-02-07" } })).toEqual([36, 37]);
    expect(await ids({ name: { gte: "canyon", lt: "crlf" }, id: { lte: 12 } })).toEqual([10, 11]);
  });

  it("echoes the parsed filters as filterops, $or and lists of dicts included", async () => {
    const answer = await result({
      resource_id: edge,
      filters: [{ id: 3 }, { id: { gte: 11 }, category: ["beta", "gamma"] }],
      fields: "_id",
      limit: 3,
    });
    expect(answer["filterops"]).toEqual({
      op: "$or",
      field: null,
      value: [
        { op: "eq", field: "id", value: 3 },
        {
          op: "$and",
          field: null,
          value: [
            { op: "gte", field: "id", value: 11 },
            { op: "in", field: "category", value: ["beta", "gamma"] },
          ],
        },
      ],
    });
    expect(answer["records"]).toEqual([{ _id: 3 }, { _id: 11 }, { _id: 12 }]);
    expect(answer["total"]).toBe(
      1 + edgeRows.slice(10).filter((row) => row[3] === "beta" || row[3] === "gamma").length,
    );
  });

  it("refuses an unknown operation, and every unknown field at once", async () => {
    const bad = await call({ resource_id: edge, filters: { id: { near: 3 } } });
    expect(bad.response.status).toBe(409);
    expect(JSON.parse(bad.text).error).toEqual({
      filters: ["Unknown filter operation: 'near'"],
      __type: "Validation Error",
    });
    const unknown = await call({ resource_id: edge, filters: { nope: 1, id: 2, also: { gt: 1 } } });
    expect(JSON.parse(unknown.text).error).toEqual({
      filters: ["Unknown field: nope", "Unknown field: also"],
      __type: "Validation Error",
    });
  });

  it("answers a value PostgreSQL cannot read with the statement, the bound values and PostgreSQL's words", async () => {
    const { response, text } = await call({
      resource_id: edge,
      filters: { active: 1 },
      records_format: "lists",
      limit: 2,
    });
    expect(response.status).toBe(409);
    const info = JSON.parse(text).error.info as { statement: string[]; params: unknown[]; orig: string[] };
    expect(info.params).toEqual([{ value_0: 1 }]);
    expect(info.statement[0]).toContain('WHERE ("active" = %(value_0)s) ORDER BY "_id" asc LIMIT 2 OFFSET 0');
    expect(info.orig[0]).toBe(
      "operator does not exist: boolean = integer\n" +
        'LINE 3: ...5a7-12c0-4b6e-9a3f-5c2d8e7f4b10"  WHERE ("active" = 1) ORDER...\n' +
        "                                                             ^\n" +
        "HINT:  No operator matches the given name and argument types. You might need to add explicit type casts.\n",
    );
  });
});

describe("CKAN's traps, in both versions", () => {
  for (const version of ["2.10", "2.12"] as const) {
    it(`${version}: q with records_format lists and no fields is invalid SQL; with fields it works`, async () => {
      const broken = await call({ resource_id: edge, q: "river", records_format: "lists", limit: 2 }, { version });
      expect(broken.response.status).toBe(409);
      const error = JSON.parse(broken.text).error as { query: string[]; info: { orig: string[]; statement: string[] } };
      expect(error.query).toEqual(["Invalid query"]);
      expect(error.info.orig[0]).toMatch(/^syntax error at or near "\|\|"\nLINE \d: \.\.\..*as "rank" \|\| '\]' v/);
      expect(error.info.statement[0]).toContain(
        `coalesce(to_json(ts_rank(_full_text, "query", 32)),'null') as "rank" || ']' v`,
      );
      // Asking for rank among the fields writes the same broken SQL.
      expect(
        (await call({ resource_id: edge, q: "river", records_format: "lists", fields: "id,rank" }, { version }))
          .response.status,
      ).toBe(409);
      const fine = await result(
        { resource_id: edge, q: "river", records_format: "lists", fields: "id,name", limit: 2 },
        { version },
      );
      expect(fine["fields"]).toEqual([
        { id: "id", type: "int4" },
        { id: "name", type: "text" },
      ]);
      for (const format of ["objects", "csv"]) {
        const ranked = await result({ resource_id: edge, q: "river", records_format: format, limit: 2 }, { version });
        expect((ranked["fields"] as { id: string }[]).at(-1)).toEqual({ id: "rank", type: "float" });
      }
    });
  }

  it("2.10 cannot bind a range filter: psycopg2 cannot adapt the dict, CKAN answers Invalid query", async () => {
    const { response, text } = await call(
      { resource_id: edge, filters: { id: { gte: 10, lt: 13 } }, limit: 3 },
      { version: "2.10" },
    );
    expect(response.status).toBe(409);
    const error = JSON.parse(text).error as Json;
    expect(error).toEqual({
      query: ["Invalid query"],
      info: {
        statement: [expect.stringContaining('WHERE ("id" = %s) ORDER BY _id LIMIT 3 OFFSET 0')],
        params: [[{ gte: 10, lt: 13 }]],
        orig: ["can't adapt type 'dict'"],
      },
      __type: "Validation Error",
    });
  });

  it("2.10 writes timestamps to the second and keeps _links and total_was_estimated", async () => {
    const answer = await result({ resource_id: edge, filters: { id: 3 } }, { version: "2.10" });
    expect((answer["records"] as Json[])[0]?.["created"]).toBe("2020-01-01T00:48:51");
    expect(answer).toHaveProperty("_links");
    expect(answer["total_was_estimated"]).toBe(false);
    expect(answer).not.toHaveProperty("filterops");
  });
});
