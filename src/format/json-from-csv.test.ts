import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAnswer } from "../ckan/raw-json.ts";
import type { RawRecord } from "../ckan/raw-json.ts";
import csvAnswer from "../../test/fixtures/ckan-2.12/records_csv.json";
import listsAnswer from "../../test/fixtures/ckan-2.12/records_lists.json";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import { jsonCsvReader } from "./json-from-csv.ts";
import { memberAt, NotTheJson } from "../rows/json-bytes.ts";
import type { Column } from "../rows/types.ts";
import { anyText, copyCell, jsonText } from "../../test/any-text.ts";

const utf8 = new TextEncoder();
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** Real CKAN 2.12: the same twelve edge-case rows as CSV records and as lists (numerics of 29 digits, json with `\u00d1`, arrays, CRLF text, quotes). */
const csvBytes = utf8.encode(csvAnswer.raw_body_text);
const lists = parseAnswer(utf8.encode(listsAnswer.raw_body_text)) as {
  result: { records: RawRecord[]; fields: Column[] };
};
const fields = lists.result.fields;
const rows = lists.result.records.map((r) => [...(r as string[])]);

/** What the row encoder writes from CKAN's lists for these rows, as a later page (after a first record). */
function viaRows(ndjson: boolean, columns: Column[], values: (string | undefined)[][]): string {
  const encoder = ndjson ? ndjsonEncoder(columns) : jsonEncoder(columns);
  encoder.begin();
  if (!ndjson) encoder.page([values[0]!]);
  return encoder.page(values);
}

/** CKAN's CSV records as its Python writes them into an answer: a JSON string, non-ASCII as \uXXXX. */
const answerOf = (csv: string): Uint8Array =>
  utf8.encode(
    JSON.stringify(csv).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`),
  );

describe("JSON records written from CKAN's CSV answer bytes", () => {
  it("writes exactly the bytes the row encoder writes from CKAN's lists of the same rows, JSON and NDJSON", () => {
    const at = memberAt(csvBytes, "result", "records");
    for (const ndjson of [false, true]) {
      const copied = jsonCsvReader(fields, fields.length, ndjson)(csvBytes, at);
      expect(text(copied.page.bytes)).toBe(viaRows(ndjson, fields, rows));
      expect(copied.page.rows).toBe(12);
      expect(text(csvBytes.subarray(copied.end, copied.end + 12))).toBe(', "fields": ');
    }
  });

  it("leaves out the columns from `dropFrom` on and reads the last one's text (the `_id` it pages by)", () => {
    const at = memberAt(csvBytes, "result", "records");
    const copied = jsonCsvReader(fields, 3, false)(csvBytes, at);
    expect(text(copied.page.bytes)).toBe(
      viaRows(
        false,
        fields.slice(0, 3),
        rows.map((r) => r.slice(0, 3)),
      ),
    );
    expect(copied.page.ends).toHaveLength(12);
    const withId: Column[] = [
      { id: "name", type: "text" },
      { id: "_id", type: "int" },
    ];
    expect(jsonCsvReader(withId, 1, true)(answerOf("a,7\nb,8\n"), 0)).toMatchObject({ lastId: "8", page: { rows: 2 } });
  });

  it("escapes strings as to_json does and keeps numbers, booleans, nulls and empty strings apart", () => {
    const columns: Column[] = [
      { id: "t", type: "text" },
      { id: "n", type: "numeric" },
      { id: "f", type: "float8" },
      { id: "b", type: "bool" },
      { id: "j", type: "json" },
      { id: "a", type: "_text" },
    ];
    const csv =
      '"say ""hi""\\, \\\\ \u0001\u00d1 \ud83d\ude00 \u007f",-0.50,NaN,t,"{""k"": ""\\u00d1""}","[""x"",null]"\n,,,,null,null\n"",1e-07,,f,[],[]\n';
    const out = text(jsonCsvReader(columns, columns.length, true)(answerOf(csv), 0).page.bytes);
    expect(out).toBe(
      '{"t":"say \\"hi\\"\\\\, \\\\\\\\ \\u0001\u00d1 \ud83d\ude00 \u007f","n":-0.50,"f":"NaN","b":true,"j":{"k": "\\u00d1"},"a":["x",null]}\n' +
        '{"t":null,"n":null,"f":null,"b":null,"j":null,"a":null}\n' +
        '{"t":"","n":1e-07,"f":null,"b":false,"j":[],"a":[]}\n',
    );
    for (const line of out.trimEnd().split("\n")) expect(() => JSON.parse(line)).not.toThrow();
    // NDJSON keeps a json value on its line; JSON keeps its line breaks.
    const breaks = answerOf('"{\n""a"": 1}"\n');
    expect(text(jsonCsvReader([{ id: "j", type: "json" }], 1, true)(breaks, 0).page.bytes)).toBe('{"j":{ "a": 1}}\n');
    expect(text(jsonCsvReader([{ id: "j", type: "json" }], 1, false)(breaks, 0).page.bytes)).toBe(
      ',\n{"j":{\n"a": 1}}',
    );
  });

  it("writes any text as the row encoder does, wherever the bytes that mean something fall", () => {
    const cols: Column[] = [
      { id: "name", type: "text" },
      { id: "note", type: "text" },
      { id: "n", type: "int4" },
      { id: "_id", type: "int" },
    ];
    const rows = fc.array(fc.tuple(anyText, anyText), { minLength: 1, maxLength: 6 });
    fc.assert(
      fc.property(rows, fc.boolean(), fc.boolean(), (values, ndjson, escaped) => {
        const csv = values.map(([a, b], k) => `${copyCell(a)},${copyCell(b)},${k},${k + 1}\n`).join("");
        const expected = viaRows(
          ndjson,
          cols.slice(0, 3),
          values.map(([a, b], k) => [jsonText(a), jsonText(b), String(k)]),
        );
        // Escaped as CKAN's Python does, or with UTF-8 as it is.
        const answer = escaped ? answerOf(csv) : utf8.encode(JSON.stringify(csv));
        const copied = jsonCsvReader(cols, 3, ndjson)(answer, 0);
        expect(text(copied.page.bytes)).toBe(expected);
        expect(copied.lastId).toBe(String(values.length));
      }),
      { numRuns: 300 },
    );
  });

  it("refuses records of another shape, for the client to read them another way", () => {
    const read = jsonCsvReader([{ id: "a", type: "int4" }], 1, false);
    expect(() => read(utf8.encode("[[1]]"), 0)).toThrow(NotTheJson);
    expect(() => read(utf8.encode('"1,2\\n"'), 0)).toThrow(NotTheJson);
    expect(() => read(utf8.encode('"1\\n'), 0)).toThrow(NotTheJson);
  });
});
