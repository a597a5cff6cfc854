import fc from "fast-check";
import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { parseAnswer } from "../ckan/raw-json.ts";
import type { RawRecord } from "../ckan/raw-json.ts";
import csvAnswer from "../../test/fixtures/ckan-2.12/records_csv.json";
import listsAnswer from "../../test/fixtures/ckan-2.12/records_lists.json";
import { csvEncoder } from "./csv.ts";
import { csvRecordsReader } from "./csv-passthrough.ts";
import { memberAt } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";
import { anyText, copyCell, jsonText } from "../../test/any-text.ts";

const utf8 = new TextEncoder();

/** CKAN's CSV records as its Python writes them into the answer: a JSON string, non-ASCII as \uXXXX. */
const asCkanString = (text: string): string =>
  JSON.stringify(text).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** The pass-through of CSV records sent as `text` (escaped as CKAN does, or with UTF-8 as it is): output text and rows. */
const csvPassthrough =
  (columns: Column[], dropFrom: number, guard: boolean, escaped = true) =>
  (text: string): { text: string; rows: number; lastId: string | undefined } => {
    const { page, lastId } = csvRecordsReader(
      columns,
      dropFrom,
      guard,
    )(utf8.encode(escaped ? asCkanString(text) : JSON.stringify(text)), 0);
    return { text: new TextDecoder().decode(page.bytes), rows: page.rows, lastId };
  };

/** Real CKAN 2.12: the same twelve edge-case rows as `records_format: "csv"` and as lists. */
const csvBytes = utf8.encode(csvAnswer.raw_body_text);
const lists = parseAnswer(utf8.encode(listsAnswer.raw_body_text)) as {
  result: { records: RawRecord[]; fields: Column[] };
};
const fields = lists.result.fields;

const viaRows = (guard: boolean, delimiter = ","): string =>
  csvEncoder(fields, { bom: false, header: "none", delimiter, formulaGuard: guard, decimal: "." }).page(
    lists.result.records.map((row) => [...(row as string[])]),
  );

const columns: Column[] = [
  { id: "id", type: "int4" },
  { id: "name", type: "text" },
  { id: "amount", type: "numeric" },
  { id: "active", type: "bool" },
  { id: "tags", type: "_text" },
  { id: "meta", type: "json" },
  { id: "_id", type: "int" },
];

// What CKAN's records_format=csv writes: arrays and json as JSON text, a null one as `null`, t/f.
const page =
  '1,"He said ""hi"", twice",-12.50,t,"[""a"",""b c"",null]","{""k"": [1, 2]}",11\n' +
  '2,"line\nbreak",,f,null,null,12\n' +
  '3,=SUM(A1),1e-07,,[],"""""",13\n' +
  '4,-403,0,t,"[""x,y""]",{},14\n' +
  '5,"",3,f,[], padded ,15\n';

const parse = (text: string): string[][] => Papa.parse<string[]>(text.trimEnd(), { newline: "\r\n" }).data;

describe("CSV pass-through", () => {
  it("turns real CKAN's CSV page into exactly the bytes the row encoder writes from its JSON, guard on and off", () => {
    const at = memberAt(csvBytes, "result", "records");
    for (const guard of [true, false]) {
      const copied = csvRecordsReader(fields, fields.length, guard)(csvBytes, at);
      expect(new TextDecoder().decode(copied.page.bytes)).toBe(viaRows(guard));
      expect(copied.page.rows).toBe(12);
      expect(new TextDecoder().decode(csvBytes.subarray(copied.end, copied.end + 12))).toBe(', "fields": ');
    }
  });

  it("guards formulas at cell starts, keeps numbers as CKAN wrote them, maps t/f and null literals, drops trailing columns", () => {
    const { text, rows, lastId } = csvPassthrough(columns, 6, true)(page);
    expect(rows).toBe(5);
    expect(lastId).toBe("15");
    expect(text).toBe(
      '1,"He said ""hi"", twice",-12.50,true,"[""a"",""b c"",null]","{""k"": [1, 2]}"\r\n' +
        '2,"line\nbreak",,false,,\r\n' +
        '3,\'=SUM(A1),1e-07,,[],""""""\r\n' +
        '4,-403,0,true,"[""x,y""]",{}\r\n' +
        '5,"",3,false,[]," padded "\r\n',
    );
    expect(csvPassthrough(columns, 6, false)(page).text).toContain("\r\n3,=SUM(A1),");
  });

  it("quotes what papaparse quotes and CKAN does not: edge spaces and a BOM", () => {
    for (const escaped of [true, false]) {
      const text = csvPassthrough(
        [{ id: "name", type: "text" }],
        1,
        false,
        escaped,
      )("  padded  \nx\ufeffy\nplain\n").text;
      expect(text).toBe('"  padded  "\r\n"x\ufeffy"\r\nplain\r\n');
      expect(parse(text).map((r) => r[0])).toEqual(["  padded  ", "x\ufeffy", "plain"]);
    }
  });
});

describe("pass-through with other delimiters", () => {
  it("writes real CKAN's CSV page with a tab, a semicolon or a pipe between cells exactly as the row encoder does", () => {
    const at = memberAt(csvBytes, "result", "records");
    for (const delimiter of ["\t", ";", "|"]) {
      for (const guard of [true, false]) {
        const copied = csvRecordsReader(fields, fields.length, guard, delimiter)(csvBytes, at);
        expect(new TextDecoder().decode(copied.page.bytes), JSON.stringify(delimiter)).toBe(viaRows(guard, delimiter));
      }
    }
  });

  it("quotes for the delimiter it writes: CKAN's quotes kept only where papaparse needs them, a bare tab quoted", () => {
    const cols: Column[] = [
      { id: "name", type: "text" },
      { id: "amount", type: "money" },
      { id: "tags", type: "_text" },
    ];
    const tsv =
      (guard: boolean, delimiter = "\t") =>
      (text: string): string =>
        new TextDecoder().decode(
          csvRecordsReader(cols, 3, guard, delimiter)(utf8.encode(asCkanString(text)), 0).page.bytes,
        );
    expect(tsv(false)('"a,b","$1,234.50","[1,2]"\n')).toBe("a,b\t$1,234.50\t[1,2]\r\n");
    expect(tsv(false)('"x ""y""",,"[""a"",""b""]"\n')).toBe('"x ""y"""\t\t"[""a"",""b""]"\r\n');
    expect(tsv(false)('tab\there,"",\n" lead, x",1,\n')).toBe('"tab\there"\t""\t\r\n" lead, x"\t1\t\r\n');
    expect(tsv(false)('"line\nbreak, x",1,\n')).toBe('"line\nbreak, x"\t1\t\r\n');
    expect(tsv(true)('\t=x,1,\n"=a,b",1,\n')).toBe("\"'\t=x\"\t1\t\r\n'=a,b\t1\t\r\n");
    expect(tsv(false, ";")('a;b,"c,d",\n')).toBe('"a;b";c,d;\r\n');
    // The row encoder's bytes for the same values.
    const viaEncoder = csvEncoder(cols, {
      bom: false,
      header: "none",
      delimiter: "\t",
      formulaGuard: true,
      decimal: ".",
    }).page([
      ['"\\t=x"', '"1"', "null"],
      ['"=a,b"', '"1"', "null"],
    ]);
    expect(tsv(true)('\t=x,1,\n"=a,b",1,\n')).toBe(viaEncoder);
  });
});

describe("pass-through edge cases", () => {
  it("unquotes the `\\.` PostgreSQL quotes when it is a lone column's value, as papaparse writes it", () => {
    for (const guard of [true, false])
      expect(csvPassthrough([{ id: "name", type: "text" }], 1, guard)('"\\."\na\n').text).toBe("\\.\r\na\r\n");
    expect(
      csvPassthrough(
        [
          { id: "id", type: "int4" },
          { id: "name", type: "text" },
        ],
        2,
        false,
      )("1,\\.\n").text,
    ).toBe("1,\\.\r\n");
  });

  it("keeps a null in the last column an empty cell, guard on or off (not a quoted empty string)", () => {
    const cols: Column[] = [
      { id: "id", type: "int4" },
      { id: "note", type: "text" },
    ];
    for (const guard of [true, false]) {
      expect(csvPassthrough(cols, 2, guard)("1,\n2,x\n3,\n").text).toBe("1,\r\n2,x\r\n3,\r\n");
      expect(csvPassthrough(cols, 2, guard)('1,""\n').text).toBe('1,""\r\n');
    }
  });

  it("judges a formula past leading whitespace of any kind as the row encoder does", () => {
    const guarded = csvPassthrough([{ id: "name", type: "text" }], 1, true);
    // A vertical tab or a line break before `=` leads it; a tab after a space leads plain text.
    expect(guarded('\u000b=1\n" \n=x"\n" \tx"\n"\ufeff\n"\n\t=x\n').text).toBe(
      `'\u000b=1\r\n"' \n=x"\r\n" \tx"\r\n"\ufeff\n"\r\n'\t=x\r\n`,
    );
  });

  it("rewrites a one-column CSV page without commas", () => {
    const rewrite = csvPassthrough([{ id: "name", type: "text" }], 1, true);
    expect(rewrite("\uff1dx,y\n").text).toBe("'\uff1dx\r\n");
    expect(csvPassthrough([{ id: "name", type: "text" }], 1, true, false)("\uff1dx\n\ud83d\ude00 \n").text).toBe(
      '\'\uff1dx\r\n"\ud83d\ude00 "\r\n',
    );
    const lines = `${Array.from({ length: 2000 }, (_, i) => (i % 2 ? `=x${i}` : `name ${i}`)).join("\n")}\n`;
    const { text, rows } = rewrite(lines);
    expect(rows).toBe(2000);
    expect(text.split("\r\n")[1]).toBe("'=x1");
  });
});

describe("pass-through of any text", () => {
  it("writes any cells as the row encoder does, wherever the bytes that mean something fall", () => {
    // A hostile CKAN's numeric column may hold any text too.
    const cols: Column[] = [
      { id: "name", type: "text" },
      { id: "note", type: "numeric" },
      { id: "active", type: "bool" },
      { id: "_id", type: "int" },
    ];
    const rows = fc.array(fc.tuple(anyText, anyText, fc.boolean()), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(rows, fc.boolean(), fc.boolean(), (values, guard, escaped) => {
        const csv = values.map(([a, b, t], k) => `${copyCell(a)},${copyCell(b)},${t ? "t" : "f"},${k + 1}\n`).join("");
        const expected = csvEncoder(cols.slice(0, 3), {
          bom: false,
          header: "none",
          delimiter: ",",
          formulaGuard: guard,
          decimal: ".",
        }).page(values.map(([a, b, t]) => [jsonText(a), jsonText(b), t ? "true" : "false"]));
        const got = csvPassthrough(cols, 3, guard, escaped)(csv);
        expect(got.text).toBe(expected);
        expect(got.lastId).toBe(String(values.length));
      }),
      { numRuns: 300 },
    );
  });
});
