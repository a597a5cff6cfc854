import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { RawRecord } from "../ckan/raw-json.ts";
import { parseAnswer } from "../ckan/raw-json.ts";
import csvAnswer from "../../test/fixtures/ckan-2.12/records_csv.json";
import listsAnswer from "../../test/fixtures/ckan-2.12/records_lists.json";
import { memberAt, NotTheJson } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";
import { anyText, copyCell, jsonText } from "../../test/any-text.ts";
import { xlsxEncoder } from "./xlsx.ts";
import { xlsxCsvReader } from "./xlsx-from-csv.ts";

const utf8 = new TextEncoder();
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** What the row encoder writes from CKAN's lists for these rows, on a page after the first. */
function viaRows(columns: Column[], values: (string | undefined)[][]): string {
  const encoder = xlsxEncoder(columns, { header: columns.map((c) => c.id) }, { rows: 1 });
  return text(encoder.page(values) as Uint8Array);
}

const viaBytes = (columns: Column[], csv: Uint8Array, at = 0, dropFrom = columns.length): string =>
  text(xlsxCsvReader(columns, dropFrom)(csv, at).page.bytes);

/** CKAN's CSV records as its Python writes them into an answer: a JSON string, non-ASCII as \uXXXX. */
const answerOf = (csv: string): Uint8Array =>
  utf8.encode(
    JSON.stringify(csv).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );

/** A value as PostgreSQL's CSV writes it: null an empty unquoted cell (`null` for json), quoted when it must be. */
function csvCell(value: string | null, type: string): string {
  if (value === null) return type === "json" || type.startsWith("_") ? "null" : "";
  if (type === "bool") return value === "true" ? "t" : "f";
  return value === "" || /[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** The same value as CKAN's lists give it: JSON text. */
function listsValue(value: string | null, type: string): string {
  if (value === null) return "null";
  if (["int", "int4", "numeric", "float8", "bool", "json", "_text"].includes(type)) {
    // A number column's text that is not a JSON number (hostile, or NaN) comes as a string.
    if (type === "bool" || type === "json" || type === "_text") return value;
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value) ? value : JSON.stringify(value);
  }
  return JSON.stringify(value);
}

const CASES: [Column, (string | null)[]][] = [
  [
    { id: "n", type: "numeric" },
    [
      "1",
      "-0",
      "0",
      "1.50",
      "-82469.50",
      "123456789012345",
      "1234567890123456",
      "0.000001",
      "0.0000001",
      "1e5",
      // Not a number: what a hostile upstream might send, kept as UTF-8 text.
      "é1",
      "12345678901234567890½",
    ],
  ],
  [
    { id: "f", type: "float8" },
    [
      "0.24304664903320372",
      "1.738914190048968e+16",
      "24044285744692.574",
      "9007199254740993",
      "0.1",
      "NaN",
      "-0",
      "-.5123456789012345",
      "-0.5123456789012345",
      "00.24304664903320372",
    ],
  ],
  [{ id: "i", type: "int4" }, ["7", "-2147483648", "0", null, "007", "12345678901234567890", "1", "2", "3", "4"]],
  [{ id: "b", type: "bool" }, ["true", "false", null, "true", "false", "true", "true", "false", "true", "false"]],
  [
    { id: "d", type: "date" },
    ["2000-01-01", "1899-12-31", "1900-02-29", "2020-02-30", "2020-13-01", "not a date", "1900-03-01", null],
  ],
  [
    { id: "t", type: "timestamp" },
    [
      "2020-01-01T00:16:17.500",
      "2020-01-01T00:16:17",
      "2020-01-01 12:00:00",
      "2020-01-01T23:59:59.999",
      "2020-01-01T00:00:00.0001",
      "2020-01-01T00:00:00.000000",
      "2020-01-01T24:00:00",
      "1900-01-01T00:00:00",
      "2020-01-01T00:00:00.001",
      "2020-01-01T00:00",
    ],
  ],
  [
    { id: "s", type: "text" },
    [
      "",
      " lead",
      "trail ",
      "\u00a0nbsp",
      "x\u3000",
      "a&b<c>",
      "_x0041_",
      "line\r\nbreak",
      "tab\there",
      "\u0001ctl",
      "東京 😀",
      "\ufeffbom",
      "\uffff",
      "y".repeat(40_000),
      '=HYPERLINK("x")',
      'He said "hi", twice',
    ],
  ],
  [{ id: "j", type: "json" }, ['{"a": 1, "b": [1.0, null]}', '"str"', null, "[1, 2]", "3"]],
  [{ id: "a", type: "_text" }, ['["a", "b"]', null, "[]"]],
];

describe("XLSX rows written from CKAN's CSV answer bytes", () => {
  it("writes exactly the cells the row encoder writes from CKAN's lists of the same rows (real CKAN 2.12)", () => {
    const csv = utf8.encode(csvAnswer.raw_body_text);
    const lists = parseAnswer(utf8.encode(listsAnswer.raw_body_text)) as {
      result: { records: RawRecord[]; fields: Column[] };
    };
    const fields = lists.result.fields;
    const rows = lists.result.records.map((r) => [...(r as string[])]);
    const copied = xlsxCsvReader(fields, fields.length)(csv, memberAt(csv, "result", "records"));
    expect(text(copied.page.bytes)).toBe(viaRows(fields, rows));
    expect(copied.page.rows).toBe(12);
    expect(text(copied.page.bytes)).toMatch(/^<row><c><v>1<\/v><\/c>/);
  });

  it("agrees with the row encoder on every kind of cell: numbers exact or text, dates, escapes, edge spaces, long text, nulls", () => {
    for (const [column, values] of CASES) {
      const csv = values.map((v) => `${csvCell(v, column.type)}\n`).join("");
      const rows = values.map((v) => [listsValue(v, column.type)]);
      expect(viaBytes([column], answerOf(csv)), `${column.type}: ${csv.slice(0, 200)}`).toBe(viaRows([column], rows));
    }
  });

  it("agrees with the row encoder on float8 texts of every length, PostgreSQL's shortest and others", () => {
    const column: Column = { id: "f", type: "float8" };
    const values: string[] = [];
    let seed = 7;
    for (let i = 0; i < 3000; i++) {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      const text = String((seed / 2 ** 32) * 10 ** ((seed % 19) - 5));
      values.push(text, `${text}1`, text.slice(0, -1));
    }
    const csv = values.map((v) => `${v}\n`).join("");
    expect(viaBytes([column], answerOf(csv))).toBe(
      viaRows(
        [column],
        values.map((v) => [v]),
      ),
    );
  });

  it("writes numbers a spreadsheet holds exactly as number cells, as CKAN wrote them, and the rest as text", () => {
    const out = viaBytes([{ id: "n", type: "numeric" }], answerOf("-82469.50\n1234567890123456\n0.25\n"));
    expect(out).toBe(
      "<row><c><v>-82469.5</v></c></row>" +
        '<row><c t="inlineStr"><is><t>1234567890123456</t></is></c></row>' +
        "<row><c><v>0.25</v></c></row>",
    );
    const dates = viaBytes([{ id: "t", type: "timestamp" }], answerOf("2020-01-01T12:00:00.001\n2000-01-01\n"));
    expect(dates).toBe('<row><c s="4"><v>43831.500000011574</v></c></row><row><c s="2"><v>36526</v></c></row>');
  });

  it("leaves out the columns from `dropFrom` on and reads the last one's text (the `_id` it pages by)", () => {
    const columns: Column[] = [
      { id: "name", type: "text" },
      { id: "_id", type: "int" },
    ];
    const copied = xlsxCsvReader(columns, 1)(answerOf("a,7\nb,8\n"), 0);
    expect(copied).toMatchObject({ lastId: "8", page: { rows: 2 } });
    expect(text(copied.page.bytes)).toBe(
      '<row><c t="inlineStr"><is><t>a</t></is></c></row><row><c t="inlineStr"><is><t>b</t></is></c></row>',
    );
  });

  it("grows its buffer for cells whose escapes take more room than their bytes", () => {
    const amp = "&".repeat(50_000);
    const out = viaBytes([{ id: "s", type: "text" }], answerOf(`${amp}\n${amp}\n`));
    expect(out).toBe(viaRows([{ id: "s", type: "text" }], [[JSON.stringify(amp)], [JSON.stringify(amp)]]));
  });

  it("makes room for a long cell after one whose escapes grew, on a page after pages of plain text", () => {
    const columns: Column[] = [
      { id: "a", type: "text" },
      { id: "b", type: "text" },
    ];
    const read = xlsxCsvReader(columns, 2);
    const plain = "p".repeat(5000);
    read(answerOf(`${plain},${plain}\n`.repeat(20)), 0);
    const [amp, long] = ["&".repeat(400), "x".repeat(3000)];
    const out = text(read(answerOf(`${amp},${long}\n`), 0).page.bytes);
    expect(out.split("_x0000_").length - 1).toBe(0);
    expect(out).toBe(viaRows(columns, [[JSON.stringify(amp), JSON.stringify(long)]]));
  });

  it("refuses records of another shape, for the client to read them another way", () => {
    const read = xlsxCsvReader([{ id: "a", type: "int4" }], 1);
    expect(() => read(utf8.encode("[[1]]"), 0)).toThrow(NotTheJson);
    expect(() => read(utf8.encode('"1,2\\n"'), 0)).toThrow(NotTheJson);
    expect(() => read(utf8.encode('"1\\n'), 0)).toThrow(NotTheJson);
  });
});

describe("sheet rows of any text", () => {
  it("writes any text cells as the row encoder does, wherever the bytes that mean something fall", () => {
    const cols: Column[] = [
      { id: "name", type: "text" },
      { id: "note", type: "text" },
    ];
    const rows = fc.array(fc.tuple(anyText, anyText), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(rows, fc.boolean(), (values, escaped) => {
        const csv = values.map(([a, b]) => `${copyCell(a)},${copyCell(b)}\n`).join("");
        const expected = viaRows(
          cols,
          values.map(([a, b]) => [jsonText(a), jsonText(b)]),
        );
        // Escaped as CKAN's Python does, or with UTF-8 as it is.
        expect(viaBytes(cols, escaped ? answerOf(csv) : utf8.encode(JSON.stringify(csv)))).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });
});
