import { parquetReadObjects } from "hyparquet";
import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { EMULATOR_RESOURCES } from "../emulator/index.ts";
import { asCsvText, exactJson, harness } from "./harness.ts";

// The edge-case table (every column type, CKAN's own edge values, 4321 rows) exported through every
// path: several pages of each kind, keyset (2.12) and offset (2.10) paging, CKAN's CSV pages
// rewritten and JSON pages encoded. Every value must leave as CKAN wrote it, by one rule per format.

const EDGE = EMULATOR_RESOURCES.edge;
const ROWS = 4321;
const COLUMNS = [
  "id",
  "amount",
  "ratio",
  "category",
  "name",
  "note",
  "formula",
  "created",
  "day",
  "active",
  "tags",
  "meta",
];
const JSON_COLUMNS = new Set(["tags", "meta"]);

/** What CKAN itself says, asked directly in one call: each value's JSON and its CSV text. */
async function ckanSays(version: "2.10" | "2.12") {
  const { emulator } = harness({ emulator: { version } });
  const ask = async (records_format: string) => {
    const request = new Request("http://ckan.test/api/action/datastore_search", {
      method: "POST",
      body: JSON.stringify({ resource_id: EDGE, limit: 32000, sort: "_id", fields: COLUMNS, records_format }),
    });
    return (await emulator.fetch(request)).text();
  };
  const lists = (exactJson(await ask("lists")) as { result: { records: unknown[][] } }).result.records;
  const csv = JSON.parse(await ask("csv")) as { result: { records: string } };
  // CKAN's CSV holds arrays and json exactly as CKAN wrote them (spacing, escapes).
  const csvCells = Papa.parse<string[]>(csv.result.records, { newline: "\n" }).data.filter((r) => r.length > 1);
  return { lists, csvCells };
}

/** The CSV cell our rule writes for CKAN's value (formula guard off: the guard has its own specs). */
const expectedCell = (value: unknown, csvCell: string, column: string): string =>
  value === null ? "" : JSON_COLUMNS.has(column) ? csvCell : asCsvText(value);

describe.each(["2.12", "2.10"] as const)("exact values on CKAN %s", (version) => {
  const env = { PAGE_SIZE: "500", BUFFER_BYTES: "0" };

  it("CSV: every cell is CKAN's text, and CKAN's CSV pages give the same bytes as its JSON pages", async () => {
    const { lists, csvCells } = await ckanSays(version);
    expect(lists).toHaveLength(ROWS);
    const path = "/export.csv?resource=edge&formula_guard=0";
    const passthrough = harness({ emulator: { version }, env });
    const rows = harness({ emulator: { version }, env: { ...env, CSV_PASSTHROUGH: "false" } });
    const [viaCsv, viaJson] = [await (await passthrough.get(path)).text(), await (await rows.get(path)).text()];
    // Several pages of each kind: CKAN's CSV text rewritten, and JSON rows encoded.
    expect(passthrough.calls.filter((c) => c.body.records_format === "csv").length).toBeGreaterThan(3);
    expect(rows.calls.filter((c) => c.body.records_format === "csv")).toHaveLength(0);
    expect(viaCsv).toBe(viaJson);

    const cells = Papa.parse<string[]>(viaCsv.trimEnd(), { newline: "\r\n" }).data;
    expect(cells[0]).toEqual(COLUMNS);
    expect(cells).toHaveLength(ROWS + 1);
    for (const [i, value] of lists.entries()) {
      expect(cells[i + 1], `row ${i + 1}`).toEqual(value.map((v, c) => expectedCell(v, csvCells[i]![c]!, COLUMNS[c]!)));
    }
    // Null and the empty string stay apart: an empty cell, and "".
    expect(viaCsv).toMatch(/\r\n9,-50697\.42,[^\r\n]*,epsilon,"",/);
    expect(viaCsv).toContain(",12345678901234567890.123456789,");
  });

  it("CSV: a text column last, with nulls, reads the same on CKAN's CSV pages as on its JSON pages", async () => {
    const path = "/export.csv?resource=edge&fields=id,tags,note";
    const [viaCsv, viaJson] = await Promise.all([
      harness({ emulator: { version }, env })
        .get(path)
        .then((r) => r.text()),
      harness({ emulator: { version }, env: { ...env, CSV_PASSTHROUGH: "false" } })
        .get(path)
        .then((r) => r.text()),
    ]);
    expect(viaCsv).toBe(viaJson);
    expect(viaCsv).toMatch(/\r\n11,[^\r\n]*,\r\n/);
  });

  it("TSV, semicolons and pipes: CKAN's CSV pages give the same bytes as its JSON pages, guard on and off", async () => {
    for (const path of [
      "/export.tsv?resource=edge",
      "/export.tsv?resource=edge&formula_guard=0",
      "/export.csv?resource=edge&delimiter=%3B",
      "/export.csv?resource=edge&delimiter=%7C&formula_guard=0",
    ]) {
      const passthrough = harness({ emulator: { version }, env });
      const [viaCsv, viaJson] = [
        await (await passthrough.get(path)).text(),
        await (await harness({ emulator: { version }, env: { ...env, CSV_PASSTHROUGH: "false" } }).get(path)).text(),
      ];
      expect(passthrough.calls.filter((c) => c.body.records_format === "csv").length, path).toBeGreaterThan(3);
      expect(viaCsv, path).toBe(viaJson);
    }
  });

  it("TSV: the same cells as the CSV", async () => {
    const h = harness({ emulator: { version }, env });
    const csv = Papa.parse<string[]>(
      (await (await h.get("/export.csv?resource=edge&formula_guard=0")).text()).trimEnd(),
      { newline: "\r\n" },
    ).data;
    const tsv = await (await h.get("/export.tsv?resource=edge&formula_guard=0")).text();
    expect(Papa.parse<string[]>(tsv.trimEnd(), { newline: "\r\n", delimiter: "\t" }).data).toEqual(csv);
  });

  it("JSON and NDJSON: every value is CKAN's JSON text, numbers and json spacing included", async () => {
    const { lists, csvCells } = await ckanSays(version);
    const h = harness({ emulator: { version }, env });
    const text = await (await h.get("/export.json?resource=edge")).text();
    const records = exactJson(text) as Record<string, unknown>[];
    expect(records).toHaveLength(ROWS);
    for (const [i, value] of lists.entries()) {
      expect(Object.keys(records[i]!)).toEqual(COLUMNS);
      expect(Object.values(records[i]!), `row ${i + 1}`).toEqual(value);
    }
    const lines = text
      .split("\n")
      .slice(1, -2)
      .map((line) => line.replace(/,$/, ""));
    expect(lines).toHaveLength(ROWS);
    for (const [i, line] of lines.entries()) {
      const meta = csvCells[i]![11]!;
      expect(line, `row ${i + 1}`).toContain(`"meta":${meta === "null" ? "null" : meta}}`);
    }
    const ndjson = new TextDecoder().decode(await (await h.get("/export.ndjson?resource=edge")).arrayBuffer());
    expect(ndjson.trimEnd().split("\n")).toEqual(lines);
  });

  it("JSON and NDJSON: pages copied from CKAN's answer bytes are byte for byte those encoded from its records", async () => {
    const copied = harness({ emulator: { version }, env });
    const encoded = harness({ emulator: { version }, env: { ...env, JSON_PASSTHROUGH: "false" } });
    for (const path of [
      "/export.json?resource=edge",
      "/export.ndjson?resource=edge",
      "/export.json?resource=edge&fields=meta,id,name",
      "/export.ndjson?resource=edge&fields=meta",
    ]) {
      // Decoded by hand: workerd warns on .text() of a type it does not know as text (application/x-ndjson).
      const text = async (response: Promise<Response>): Promise<string> =>
        new TextDecoder().decode(await (await response).arrayBuffer());
      const [a, b] = [await text(copied.get(path)), await text(encoded.get(path))];
      expect(a.length, path).toBeGreaterThan(100_000);
      expect(a === b, path).toBe(true);
    }
    // Later pages come as CKAN's CSV (its cheapest format), each value written as the JSON lists would give it.
    expect(copied.calls.filter((c) => c.body.records_format === "csv").length).toBeGreaterThan(12);
    expect(encoded.calls.filter((c) => c.body.records_format === "csv")).toHaveLength(0);
  });

  it("Parquet: files written from CKAN's CSV pages are byte for byte those written from its JSON pages", async () => {
    const fromCsv = harness({ emulator: { version }, env });
    const fromLists = harness({ emulator: { version }, env: { ...env, CSV_PASSTHROUGH: "false" } });
    for (const path of [
      "/export.parquet?resource=edge",
      "/export.parquet?resource=edge&numeric=double",
      "/export.parquet?resource=edge&fields=meta,id,note,tags",
      "/export.parquet?resource=edge&header=label",
    ]) {
      const [a, b] = [await (await fromCsv.get(path)).bytes(), await (await fromLists.get(path)).bytes()];
      expect(a.length, path).toBeGreaterThan(20_000);
      expect(Buffer.from(a).equals(Buffer.from(b)), path).toBe(true);
      // Read back, every row is there.
      expect((await parquetReadObjects({ file: a.buffer as ArrayBuffer })).length, path).toBe(ROWS);
    }
    // Pages after the first come as CKAN's CSV, their cells read as bytes; before 2.12, those past the
    // middle from the table's end, held and handed on reversed.
    expect(fromCsv.calls.filter((c) => c.body.records_format === "csv").length).toBeGreaterThan(12);
    if (version === "2.10") expect(fromCsv.calls.some((c) => c.body.sort === "_id desc")).toBe(true);
    expect(fromLists.calls.filter((c) => c.body.records_format === "csv")).toHaveLength(0);
  });
});

describe("q and totals on a CKAN that answers like the real one", () => {
  it("exports a q search without fields, which CKAN's lists would refuse with a 409", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" } });
    const res = await get("/export.csv?resource=edge&q=glacier");
    expect(res.status).toBe(200);
    const rows = Papa.parse<string[]>((await res.text()).trimEnd(), { newline: "\r\n" }).data;
    expect(rows[0]).toEqual(COLUMNS);
    expect(rows.length).toBeGreaterThan(10);
    expect(
      calls.every((c) => !(c.body.q !== undefined && c.body.records_format === "lists" && c.body.fields === undefined)),
    ).toBe(true);
  });

  it("loses no row when CKAN's cached count is lower than the rows there are", async () => {
    for (const sort of ["", "&sort=id desc"]) {
      const { get } = harness({
        emulator: { version: "2.12", staleTotal: 10 },
        env: { PAGE_SIZE: "1000", BUFFER_BYTES: "0" },
      });
      const res = await get(`/export.csv?resource=edge&fields=id${sort}`);
      expect(res.headers.get("x-total-count"), sort).toBe(String(ROWS - 10));
      const ids = (await res.text()).trimEnd().split("\r\n").slice(1);
      expect(ids, sort).toHaveLength(ROWS);
      expect(new Set(ids).size, sort).toBe(ROWS);
    }
  });
});

describe("range filters", () => {
  it("pass on to CKAN 2.12, from the URL form and from filters JSON", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" } });
    const res = await get("/export.csv?resource=edge&fields=id,amount&filter.id[gte]=100&filter.id[lt]=110");
    expect(res.status).toBe(200);
    const ids = (await res.text())
      .trimEnd()
      .split("\r\n")
      .slice(1)
      .map((line) => Number(line.split(",")[0]));
    expect(ids).toEqual(Array.from({ length: 10 }, (_, i) => 100 + i));
    expect(calls[0]!.body.filters).toEqual({ id: { gte: "100", lt: "110" } });
    const json = await get('/export.json?resource=edge&fields=id&filters={"id":{"gt":4319}}');
    expect(await json.json()).toEqual([{ id: 4320 }, { id: 4321 }]);
  });

  it("match numbers a double cannot hold exactly as written", async () => {
    const { get, calls } = harness({ emulator: { version: "2.12" } });
    const res = await get(
      '/export.csv?resource=edge&fields=id,amount&filters={"amount":12345678901234567890.123456789}',
    );
    const rows = (await res.text()).trimEnd().split("\r\n").slice(1);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.endsWith(",12345678901234567890.123456789"))).toBe(true);
    expect(JSON.stringify(calls[0]!.body.filters)).toBe('{"amount":"12345678901234567890.123456789"}');
  });

  it("get a 400 that says why on a CKAN older than 2.12", async () => {
    const { get } = harness({ emulator: { version: "2.10" } });
    const res = await get("/export.csv?resource=sample&filter.id[gte]=100");
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { message: string; parameter: string } };
    expect(error.parameter).toBe("filters");
    expect(error.message).toMatch(/does not support range filters.*CKAN 2\.12/);
    expect(error.message).not.toMatch(/SELECT|adapt/);
  });
});
