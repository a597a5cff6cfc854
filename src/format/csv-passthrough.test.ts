import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { csvEncoder } from "./csv.ts";
import { csvPassthrough } from "./csv-passthrough.ts";
import { pgArrayToJson } from "./pg-array.ts";
import type { Column } from "./types.ts";

const columns: Column[] = [
  { id: "id", type: "int4" },
  { id: "name", type: "text" },
  { id: "amount", type: "numeric" },
  { id: "active", type: "bool" },
  { id: "tags", type: "_text" },
  { id: "scores", type: "_int4" },
  { id: "meta", type: "json" },
  { id: "_id", type: "int" },
];

// What PostgreSQL COPY (and so CKAN's records_format=csv) writes for these rows.
const copy =
  '1,"He said ""hi"", twice",-12.5,t,"{a,""b c"",NULL}","{1,2}","{""k"": [1, 2]}",11\n' +
  '2,"line\nbreak",,f,,{},,12\n' +
  '3,=SUM(A1),1e-07,,"{""x,y""}",{NULL},"""""",13\n' +
  '4,-403,0,t,{},"{{1,2},{3,4}}","{}",14\n' +
  '5,"",3,f,{},{},null,15\n';

// The same rows as CKAN's JSON would carry them.
const rows: unknown[][] = [
  [1, 'He said "hi", twice', -12.5, true, ["a", "b c", null], [1, 2], { k: [1, 2] }],
  [2, "line\nbreak", null, false, null, [], null],
  [3, "=SUM(A1)", 1e-7, null, ["x,y"], [null], ""],
  [4, "-403", 0, true, [], [[1, 2], [3, 4]], {}],
  [5, "", 3, false, [], [], null],
];

const parse = (text: string): string[][] => Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data;

describe("CSV pass-through", () => {
  it("rewrites COPY output to what the row encoder writes for the same values, in meaning", () => {
    const passed = csvPassthrough(columns, 7, true)(copy);
    expect(passed.rows).toBe(5);
    expect(passed.text.split("\r\n")).toHaveLength(6);
    const encoded = csvEncoder(columns.slice(0, 7), { bom: false, header: false, delimiter: ",", formulaGuard: true }).page(
      rows.map((r) => [...r]),
    );
    const normalise = (cells: string[][]): string[][] =>
      cells.map((row) =>
        row.map((cell, i) => {
          const type = columns[i]!.type;
          if (type === "numeric" && cell !== "") return String(Number(cell));
          if (type === "json" && cell !== "" && cell !== "null") return JSON.stringify(JSON.parse(cell));
          return cell;
        }),
      );
    expect(normalise(parse(passed.text))).toEqual(normalise(parse(encoded)));
  });

  it("guards formulas at cell starts, keeps plain numbers, maps t/f, drops the trailing columns", () => {
    const { text } = csvPassthrough(columns, 7, true)(copy);
    const cells = parse(text);
    expect(cells[2]![1]).toBe("'=SUM(A1)");
    expect(cells[3]![1]).toBe("-403");
    expect(cells.map((r) => r[3])).toEqual(["true", "false", "", "true", "false"]);
    expect(cells.every((r) => r.length === 7)).toBe(true);
    expect(csvPassthrough(columns, 7, false)(copy).text).toContain("\r\n3,=SUM(A1),");
  });

  it("turns PostgreSQL array literals into JSON", () => {
    expect(pgArrayToJson('{a,"b c",NULL,"q\\"x"}', "text")).toBe('["a","b c",null,"q\\"x"]');
    expect(pgArrayToJson("{{1,2},{3,4}}", "int4")).toBe("[[1,2],[3,4]]");
    expect(pgArrayToJson("{t,f}", "bool")).toBe("[true,false]");
    expect(pgArrayToJson("[0:1]={7,8}", "int4")).toBe("[7,8]");
    expect(pgArrayToJson("{}", "text")).toBe("[]");
  });
});

describe("pass-through edge cases", () => {
  it("rewrites a one-column CSV page without commas", () => {
    const rewrite = csvPassthrough([{ id: "name", type: "text" }], 1, true);
    const page = Array.from({ length: 2000 }, (_, i) => (i % 2 ? `=x${i}` : `name ${i}`)).join("\n") + "\n";
    const { text, rows } = rewrite(page);
    expect(rows).toBe(2000);
    expect(text.split("\r\n")[1]).toBe("'=x1");
  });
});
