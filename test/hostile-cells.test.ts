// Issue 25, items 4 and 5: cells an upstream should never send, through the whole worker. JSON and
// NDJSON never let a cell close its record; CSV guards every cell a spreadsheet could run, by its
// value and whatever its column's type, past leading spaces and invisible characters.
import { describe, expect, it } from "vitest";
import { harness } from "./harness.ts";

const FIELDS = [
  { id: "_id", type: "int" },
  { id: "amount", type: "numeric" },
  { id: "flag", type: "bool" },
  { id: "doc", type: "json" },
  { id: "note", type: "text" },
];

/** Three plain rows (the first page, read as rows), then the hostile ones (later pages, read from CKAN's CSV). */
const ROWS: string[][] = [
  ["10", "1", "t", "{}", "a"],
  ["11", "2", "f", "[]", "b"],
  ["12", "3", "t", "2", "c"],
  ["1", '1","isAdmin":true,"x":"', "t", '{"a":1}', "plain"],
  ["2", '1,"evil":true', 'f","evil":"', '1},"evil":{"b":2', "=1+1"],
  ["3", "=1+1", "=cmd|' /C calc'!A0", "1", '\u00a0=HYPERLINK("http://evil.example")'],
  ["4", "-12.5", "t", "null", "\u3000=1+1"],
  ["5", " +1+cmd", "", "", "\u200b@SUM(A1)"],
  ["6", "\ufe661+1", "t", "[1,2]", "\ufeff=1"],
  ["7", "\uff1d1+1", "f", '"s"', " -3"],
];

const csvCell = (cell: string): string => (/[",\n\r]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell);

/** A cell as CKAN's lists give it: null for an empty cell, numbers and booleans as JSON, else text. */
function listValue(cell: string, type: string): unknown {
  if (cell === "") return null;
  if (type === "bool" && (cell === "t" || cell === "f")) return cell === "t";
  if ((type === "int" || type === "numeric") && /^-?\d+(\.\d+)?$/.test(cell)) return Number(cell);
  return cell;
}

/** datastore_search's answer with these rows, in the records format asked for, the fields asked for. */
function hostileAnswer(body: Record<string, unknown>): Response {
  const asked = Array.isArray(body.fields) ? (body.fields as string[]) : FIELDS.map((f) => f.id);
  const fields = asked.map((id) => FIELDS.find((f) => f.id === id) ?? { id, type: "text" });
  const pick = (row: string[]): string[] => asked.map((id) => row[FIELDS.findIndex((f) => f.id === id)] ?? "");
  const limit = typeof body.limit === "number" ? body.limit : 100;
  const offset = typeof body.offset === "number" ? body.offset : 0;
  const rows = ROWS.slice(offset, offset + limit).map(pick);
  const records =
    body.records_format === "csv"
      ? rows.map((row) => `${row.map(csvCell).join(",")}\n`).join("")
      : rows.map((row) => row.map((cell, i) => listValue(cell, fields[i]!.type)));
  return Response.json({ help: "", success: true, result: { fields, records, total: ROWS.length, limit } });
}

describe("hostile cells from the upstream", () => {
  const cases = [
    ["JSON from CKAN's CSV pages", "json", {}],
    ["NDJSON from CKAN's CSV pages", "ndjson", {}],
    ["JSON from rows", "json", { JSON_PASSTHROUGH: "false" }],
  ] as const;
  for (const [name, format, env] of cases) {
    it(`${name}: every record parses, with exactly its columns; a number cell that is no number is a string`, async () => {
      const { get } = harness({
        env: { ...env, PAGE_SIZE: "3" },
        fault: (_, body) => (body.resource_id !== undefined ? hostileAnswer(body) : undefined),
      });
      const res = await get(`/export.${format}?resource=sample&limit=${ROWS.length}`);
      expect(res.status).toBe(200);
      const text = await res.text();
      const records = (
        format === "json"
          ? JSON.parse(text)
          : text
              .trim()
              .split("\n")
              .map((line) => JSON.parse(line))
      ) as Record<string, unknown>[];
      expect(records).toHaveLength(ROWS.length);
      for (const record of records) expect(Object.keys(record)).toEqual(["amount", "flag", "doc", "note"]);
      expect(records.map((r) => r.amount)).toEqual([
        1,
        2,
        3,
        '1","isAdmin":true,"x":"',
        '1,"evil":true',
        "=1+1",
        -12.5,
        " +1+cmd",
        "\ufe661+1",
        "\uff1d1+1",
      ]);
      expect(records[4]!.flag).toBe('f","evil":"');
      expect(records[4]!.doc).toBe('1},"evil":{"b":2');
      expect(text).not.toMatch(/"isAdmin":true,|"evil":true|"evil":\{/);
    });
  }

  for (const [name, env] of [
    ["CKAN's CSV pages rewritten", {}],
    ["rows encoded", { CSV_PASSTHROUGH: "false" }],
  ] as const) {
    it(`CSV, ${name}: every cell a spreadsheet could run is guarded, whatever its column's type`, async () => {
      const { get } = harness({
        env: { ...env, PAGE_SIZE: "3" },
        fault: (_, body) => (body.resource_id !== undefined ? hostileAnswer(body) : undefined),
      });
      const res = await get(`/export.csv?resource=sample&limit=${ROWS.length}&fields=amount,flag,note`);
      expect(res.status).toBe(200);
      const lines = (await res.text()).trimEnd().split("\r\n");
      expect(lines).toEqual([
        "amount,flag,note",
        "1,true,a",
        "2,false,b",
        "3,true,c",
        `"1"",""isAdmin"":true,""x"":""",true,plain`,
        `"1,""evil"":true","f"",""evil"":""",'=1+1`,
        `'=1+1,'=cmd|' /C calc'!A0,"'\u00a0=HYPERLINK(""http://evil.example"")"`,
        "-12.5,true,'\u3000=1+1",
        "' +1+cmd,,'\u200b@SUM(A1)",
        `'\ufe661+1,true,"'\ufeff=1"`,
        `'\uff1d1+1,false," -3"`,
      ]);
    });
  }
});
