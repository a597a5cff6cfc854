import { describe, expect, it } from "vitest";
import { parseAnswer } from "../ckan/raw-json.ts";
import type { RawRecord } from "../ckan/raw-json.ts";
import listsAnswer from "../../test/fixtures/ckan-2.12/records_lists.json";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import { jsonListsReader } from "./json-passthrough.ts";
import { memberAt, NotTheJson } from "./json-scan.ts";
import type { Column } from "./types.ts";

/** Real CKAN 2.12 bytes: twelve edge-case rows as lists (numerics of 29 digits, json with `\u00d1`, arrays, CRLF text). */
const answer = new TextEncoder().encode(listsAnswer.raw_body_text);
const parsed = parseAnswer(listsAnswer.raw_body_text) as { result: { records: RawRecord[]; fields: Column[] } };
const fields = parsed.result.fields;
const rows = parsed.result.records.map((r) => [...(r as string[])]);
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** What the row encoder writes for these rows as a later page (after a first record). */
function viaRows(ndjson: boolean, columns: Column[], keep: number): string {
  const encoder = ndjson ? ndjsonEncoder(columns.slice(0, keep)) : jsonEncoder(columns.slice(0, keep));
  encoder.begin();
  if (!ndjson) encoder.page([rows[0]!.slice(0, keep)]);
  return encoder.page(rows.map((r) => r.slice(0, keep)));
}

describe("JSON records copied from CKAN's answer bytes", () => {
  it("writes exactly the bytes the row encoder writes from the same answer, JSON and NDJSON, with the last column's text", () => {
    const at = memberAt(answer, "result", "records");
    for (const ndjson of [false, true]) {
      const copied = jsonListsReader(fields, fields.length, ndjson)(answer, at);
      expect(text(copied.page.bytes)).toBe(viaRows(ndjson, fields, fields.length));
      expect(copied.page.rows).toBe(12);
      expect(answer[copied.end - 1]).toBe(93);
      expect(text(answer.subarray(copied.end, copied.end + 12))).toBe(', "fields": ');
      expect(copied.lastId).toBe(rows.at(-1)!.at(-1));
    }
  });

  it("leaves out the columns from `dropFrom` on (`_id` asked only to page by) and ends each row where it says", () => {
    const at = memberAt(answer, "result", "records");
    const copied = jsonListsReader(fields, 3, false)(answer, at);
    const out = text(copied.page.bytes);
    expect(out).toBe(viaRows(false, fields, 3));
    expect(copied.lastId).toBe(rows.at(-1)!.at(-1));
    const ends = [...copied.page.ends];
    expect(ends).toHaveLength(12);
    expect(text(copied.page.bytes.subarray(0, ends[1]))).toBe(out.split(",\n").slice(0, 3).join(",\n"));
  });

  it("finds the records by walking the answer, not by their name in an echoed filter", () => {
    const tricky = new TextEncoder().encode('{"help": "x", "result": {"filters": {"records": "[1]"}, "records": [[1, "a"]], "fields": []}}');
    const at = memberAt(tricky, "result", "records");
    expect(text(tricky.subarray(at, at + 10))).toBe('[[1, "a"]]');
    expect(memberAt(new TextEncoder().encode('{"success": false, "error": {}}'), "result", "records")).toBe(-1);
  });

  it("refuses records of another shape, for the client to read them another way", () => {
    const columns: Column[] = [{ id: "a", type: "int4" }];
    const read = jsonListsReader(columns, 1, false);
    const bytes = (s: string) => new TextEncoder().encode(s);
    expect(() => read(bytes('[{"a": 1}]'), 0)).toThrow(NotTheJson);
    expect(() => read(bytes("[[1, 2]]"), 0)).toThrow(NotTheJson);
    expect(() => read(bytes('"1\\n2"'), 0)).toThrow(NotTheJson);
    expect(text(read(bytes("[ [1] , [2]\n]"), 0).page.bytes)).toBe(',\n{"a":1},\n{"a":2}');
  });
});
