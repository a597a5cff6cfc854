import { describe, expect, it } from "vitest";
import { csvEncoder } from "./csv.ts";
import type { Column } from "../rows/types.ts";
import type { CsvOptions } from "../query/formats.ts";

const columns: Column[] = [
  { id: "id", type: "int4" },
  { id: "name", type: "text" },
  { id: "amount", type: "numeric" },
  { id: "active", type: "bool" },
  { id: "tags", type: "_text" },
];
const defaults: CsvOptions = { bom: false, header: "id", delimiter: ",", formulaGuard: true, decimal: "." };

/** Rows given as JavaScript values, handed to the encoder as the JSON text CKAN would write for them. */
function write(rows: unknown[][], options: Partial<CsvOptions> = {}, cols = columns): string {
  return writeRaw(
    rows.map((row) => row.map((value) => JSON.stringify(value))),
    options,
    cols,
  );
}

function writeRaw(rows: (string | undefined)[][], options: Partial<CsvOptions> = {}, cols = columns): string {
  const encoder = csvEncoder(cols, { ...defaults, ...options });
  return encoder.begin() + encoder.page(rows) + encoder.end();
}

describe("CSV encoder", () => {
  it("writes RFC 4180 with CRLF after every row and quotes only where needed", () => {
    const out = write([
      [1, 'He said "hi", twice', -12.5, true, ["a", "b"]],
      [2, "line\nbreak", null, false, null],
      [3, "crlf\r\ninside", 0.1, null, { k: 1 }],
    ]);
    expect(out).toBe(
      "id,name,amount,active,tags\r\n" +
        '1,"He said ""hi"", twice",-12.5,true,"[""a"",""b""]"\r\n' +
        '2,"line\nbreak",,false,\r\n' +
        '3,"crlf\r\ninside",0.1,,"{""k"":1}"\r\n',
    );
  });

  it("guards text cells and header cells but never numbers", () => {
    const cols: Column[] = [
      { id: "=evil", type: "text" },
      { id: "n", type: "numeric" },
    ];
    expect(
      write(
        [
          ["=1+1", -5],
          ["-403", "-7"],
        ],
        {},
        cols,
      ),
    ).toBe("'=evil,n\r\n'=1+1,-5\r\n-403,-7\r\n");
  });

  it("turns the guard off with formulaGuard false", () => {
    expect(write([[1, "=HYPERLINK()", 1, true, null]], { formulaGuard: false })).toContain(
      "1,=HYPERLINK(),1,true,\r\n",
    );
  });

  it("writes a BOM, no header, and other delimiters on request", () => {
    expect(write([[1, "a;b", 2, true, null]], { bom: true, header: "none", delimiter: ";" })).toBe(
      '\ufeff1;"a;b";2;true;\r\n',
    );
  });

  it("writes TSV with a tab delimiter", () => {
    expect(write([[1, "a\tb", 2, true, null]], { delimiter: "\t", header: "none" })).toBe('1\t"a\tb"\t2\ttrue\t\r\n');
  });

  it('writes numbers, arrays and json exactly as CKAN wrote them, null as an empty cell and an empty string as ""', () => {
    const cols: Column[] = [
      { id: "amount", type: "numeric" },
      { id: "ratio", type: "float8" },
      { id: "name", type: "text" },
      { id: "tags", type: "_text" },
      { id: "meta", type: "json" },
    ];
    const raw = [
      [
        "12345678901234567890.123456789",
        "1.738914190048968e+16",
        '""',
        '["a,b","say \\"hi\\""]',
        '{"k": 1, "big": 12345678901234567890}',
      ],
      ["-0.50", "-3.6762611479600606e-10", "null", "null", "null"],
      [undefined, "0.1", '"\\u00d1and\\u00fa  "', "[]", '"just text"'],
    ];
    expect(writeRaw(raw, { header: "none" }, cols)).toBe(
      '12345678901234567890.123456789,1.738914190048968e+16,"","[""a,b"",""say \\""hi\\""""]","{""k"": 1, ""big"": 12345678901234567890}"\r\n' +
        "-0.50,-3.6762611479600606e-10,,,\r\n" +
        ',0.1,"\u00d1and\u00fa  ",[],"""just text"""\r\n',
    );
  });

  it("writes the header even when there are no rows", () => {
    expect(write([])).toBe("id,name,amount,active,tags\r\n");
  });

  it("writes numbers of numeric columns with a decimal comma on request, and nothing else", () => {
    const cols: Column[] = [
      { id: "amount", type: "numeric" },
      { id: "ratio", type: "float8" },
      { id: "name", type: "text" },
      { id: "tags", type: "_text" },
    ];
    const raw = [
      ["-0.50", "1.738914190048968e+16", '"1.5"', '["2.5"]'],
      ["12345678901234567890.123456789", "-3.6762611479600606e-10", "null", "null"],
      ['"7.25"', "3", '"a.b"', "[]"],
    ];
    expect(writeRaw(raw, { header: "none", delimiter: ";", decimal: "," }, cols)).toBe(
      '-0,50;1,738914190048968e+16;1.5;"[""2.5""]"\r\n' +
        "12345678901234567890,123456789;-3,6762611479600606e-10;;\r\n" +
        "7,25;3;a.b;[]\r\n",
    );
  });
});
