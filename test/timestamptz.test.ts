// A column whose CSV text CKAN writes otherwise than its JSON text: a timestamptz goes through
// to_json in `lists` (`2020-06-01T10:30:00.25+00:00`) and through PostgreSQL's own text in `csv`
// (`2020-06-01 10:30:00.25+00`), since CKAN formats only `timestamp` columns itself
// (ckanext/datastore/backend/postgres.py, datastore_search). An export or aggregate over such a
// table reads every page as JSON, so each value is written the one way the first page writes it.
import { describe, expect, it } from "vitest";
import { harness } from "./harness.ts";

const FIELDS = [
  { id: "_id", type: "int" },
  { id: "at", type: "timestamptz" },
  { id: "n", type: "int" },
];

/** PostgreSQL's text of each row's timestamptz (null: SQL NULL): two instants, and nulls. */
const AT = [
  "2020-06-01 10:30:00.25+00",
  "2020-06-01 11:00:00+00",
  null,
  "2020-06-01 10:30:00.25+00",
  "2020-06-01 11:00:00+00",
  "2020-06-01 10:30:00.25+00",
  null,
  "2020-06-01 11:00:00+00",
];

/** to_json's text of the same instant: ISO 8601 with a T and the offset's minutes. */
const json = (text: string): string => text.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00");

/** datastore_search's answer for these rows, as CKAN 2.10 gives it in either records format. */
function answer(body: Record<string, unknown>): Response {
  const asked = Array.isArray(body.fields) ? (body.fields as string[]) : FIELDS.map((f) => f.id);
  const fields = asked.map((id) => FIELDS.find((f) => f.id === id)!);
  const limit = typeof body.limit === "number" ? body.limit : 100;
  const offset = typeof body.offset === "number" ? body.offset : 0;
  const all = AT.map((at, i) => ({ _id: i + 1, at, n: i * 10 }));
  if (body.sort === "_id desc") all.reverse();
  const rows = all.slice(offset, offset + limit);
  const records =
    body.records_format === "csv"
      ? rows.map((row) => `${asked.map((id) => row[id as keyof typeof row] ?? "").join(",")}\n`).join("")
      : rows.map((row) =>
          asked.map((id) => (id === "at" ? (row.at === null ? null : json(row.at)) : row[id as keyof typeof row])),
        );
  return Response.json({ help: "", success: true, result: { fields, records, total: AT.length, limit } });
}

const site = () =>
  harness({
    env: { PAGE_SIZE: "3" },
    fault: (_, body) => (body.resource_id !== undefined ? answer(body) : undefined),
  });

/** A wide table of `rows` rows with a timestamptz column, as lists (the only way its pages come). */
function wideAnswer(rows: number, body: Record<string, unknown>): Response {
  const fields = [
    { id: "_id", type: "int" },
    { id: "at", type: "timestamptz" },
    { id: "note", type: "text" },
  ];
  const limit = Math.min(typeof body.limit === "number" ? body.limit : 100, 32000);
  const offset = typeof body.offset === "number" ? body.offset : 0;
  const ids = Array.from({ length: Math.max(0, Math.min(limit, rows - offset)) }, (_, k) => offset + k + 1);
  if (body.sort === "_id desc") ids.forEach((id, k) => (ids[k] = rows + 1 - id));
  const note = "x".repeat(1000);
  const records = ids.map((id) => [id, json("2020-06-01 10:30:00+00"), note]);
  return Response.json({ help: "", success: true, result: { fields, records, total: rows, limit } });
}

describe("a timestamptz column (CKAN writes its CSV text otherwise than its JSON)", () => {
  it("pages of rows are sized as pages of rows (about 1 MiB of answer), not as CKAN's CSV pages", async () => {
    const rows = 6000;
    const { get, calls } = harness({
      env: { PAGE_SIZE: "32000" },
      fault: (_, body) => (body.resource_id !== undefined ? wideAnswer(rows, body) : undefined),
    });
    const res = await get(`/export.csv?resource=sample&limit=${rows}`);
    expect(res.status).toBe(200);
    expect((await res.text()).trimEnd().split("\r\n")).toHaveLength(rows + 1);
    const pages = calls.filter((c) => c.body.resource_id !== undefined && c.body.limit !== 0);
    expect(pages.map((c) => c.body.records_format)).not.toContain("csv");
    // A row is about 1 KB of answer: pages of rows hold about a thousand.
    for (const page of pages) expect(page.body.limit as number).toBeLessThanOrEqual(1500);
  });

  it("CSV: every page's value as CKAN's JSON writes it", async () => {
    const res = await site().get(`/export.csv?resource=sample&limit=${AT.length}`);
    expect(res.status).toBe(200);
    const lines = (await res.text()).trimEnd().split("\r\n");
    expect(lines).toEqual(["at,n", ...AT.map((at, i) => `${at === null ? "" : json(at)},${i * 10}`)]);
  });

  it("JSON: every page's value as CKAN's JSON writes it", async () => {
    const res = await site().get(`/export.json?resource=sample&limit=${AT.length}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(AT.map((at, i) => ({ at: at === null ? null : json(at), n: i * 10 })));
  });

  it("aggregate: one group per instant, whichever page a row came on", async () => {
    const res = await site().get("/aggregate.json?resource=sample&group_by=at&measures=count,sum(n)&sort=at");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([
      { at: json("2020-06-01 10:30:00.25+00"), count: 3, "sum(n)": 80 },
      { at: json("2020-06-01 11:00:00+00"), count: 3, "sum(n)": 120 },
      { at: null, count: 2, "sum(n)": 80 },
    ]);
  });
});
