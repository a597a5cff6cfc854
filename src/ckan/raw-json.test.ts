import fc from "fast-check";
import { describe, expect, it } from "vitest";
import csvAnswer from "../../test/fixtures/ckan-2.12/records_csv.json";
import listsAnswer from "../../test/fixtures/ckan-2.12/records_lists.json";
import { freedWhile } from "../../test/freed-buffers.ts";
import { csvRecordsReader } from "../format/csv-passthrough.ts";
import { CsvRecordsStream, RowEndGuesses } from "../format/csv-records.ts";
import type { Column } from "../rows/types.ts";
import { memberAt } from "../rows/json-bytes.ts";
import { parseAnswer, StreamedAnswer } from "./raw-json.ts";

type Answer = {
  success: boolean;
  result: { records: unknown; total?: number; fields: unknown[]; next_page?: unknown };
};
const utf8 = new TextEncoder();
/** CKAN's answer as it comes: UTF-8 bytes. */
const parse = (text: string): Answer => parseAnswer(utf8.encode(text)) as Answer;

describe("reading CKAN's answers without losing a digit", () => {
  it("keeps every value of real CKAN 2.12 records as the exact JSON text CKAN wrote", () => {
    const { result } = parse(listsAnswer.raw_body_text);
    const rows = result.records as string[][];
    expect(rows).toHaveLength(12);
    expect(result.total).toBe(12);
    expect(rows[3]!.slice(0, 4)).toEqual(["4", "4", "12345678901234567890.123456789", "0.05991945753341821"]);
    expect(rows[4]![2]).toBe("-0.50");
    expect(rows[1]![3]).toBe("1.738914190048968e+16");
    expect(rows[1]![11]).toBe('["a,b","say \\"hi\\""]');
    expect(rows[0]![12]).toBe(
      '{"k": 1, "w": "glacier", "f": 1.0, "u": "\\u00d1and\\u00fa", "nested": {"a": [1, "x", null, true]}, "big": 12345678901234567890}',
    );
    expect(rows[4]![12]).toBe("null");
    // Every value is valid JSON on its own, and the rest of the answer parses as usual.
    for (const row of rows) for (const cell of row) expect(() => JSON.parse(cell)).not.toThrow();
  });

  it("reads objects by key, CSV records as text, and strings ending in escaped quotes and backslashes", () => {
    const text =
      '{"help": "h", "success": true, "result": {"q": "\\"records\\": [", "records": [{"_id":1,"a":"x\\\\","b":"say \\"hi\\"","__proto__":-0.50}, {"_id":2,"a":null}], ' +
      '"fields": [{"id": "a", "type": "text"}], "total": 2, "next_page": {"_id": {"gt": 2}}}}';
    const { result } = parse(text);
    const records = result.records as Record<string, string>[];
    expect({ ...records[0] }).toEqual({ _id: "1", a: '"x\\\\"', b: '"say \\"hi\\""', ["__proto__"]: "-0.50" });
    expect(Object.keys(records[0]!)).toContain("__proto__");
    expect({ ...records[1] }).toEqual({ _id: "2", a: "null" });
    expect(result.next_page).toEqual({ _id: { gt: 2 } });
    const csv = parse('{"success": true, "result": {"records": "1,\\"a\\"\\"b\\"\\n", "fields": []}}');
    expect(csv.result.records).toBe('1,"a""b"\n');
  });

  it("leaves answers without records to JSON.parse, and refuses text that is not JSON", () => {
    expect(parse('{"success": false, "error": {"__type": "Validation Error"}}')).toEqual({
      success: false,
      error: { __type: "Validation Error" },
    });
    expect(parse('"Bad request"')).toBe("Bad request");
    expect(() => parse("<html>oops</html>")).toThrow(SyntaxError);
    expect(() => parse('{"success": true, "result": {"records": [[1,2]')).toThrow(SyntaxError);
  });

  it("keeps the exact text of values after characters of two, three and four UTF-8 bytes, in keys and values", () => {
    const text =
      '{"success": true, "help": "Ñandú ☃ 😀", "result": {"records": [[1,"Zürich","東京 – ☃","😀 𝄞x",{"ö":"😀"},2.50,"\u00d1"],' +
      '{"_id":2,"città":"Ω😀Ω","名前":-0.0}], "fields": [{"id": "città"}], "total": 2}}';
    const { result } = parse(text);
    const records = result.records as [string[], Record<string, string>];
    expect(records[0]).toEqual(["1", '"Zürich"', '"東京 – ☃"', '"😀 𝄞x"', '{"ö":"😀"}', "2.50", '"\u00d1"']);
    expect({ ...records[1] }).toEqual({ _id: "2", città: '"Ω😀Ω"', 名前: "-0.0" });
    expect(result.fields).toEqual([{ id: "città" }]);
    expect(result.total).toBe(2);
  });

  it("reads bytes that are not UTF-8 as a decoder replaces them, and an answer after a byte order mark", () => {
    const bytes = utf8.encode('{"success": true, "result": {"records": [["aXb", 1.50]], "fields": []}}');
    bytes[bytes.indexOf(88)] = 0xff;
    expect((parseAnswer(bytes) as Answer).result.records).toEqual([['"a\ufffdb"', "1.50"]]);
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...utf8.encode('{"result": {"records": [["é", 0.10]]}}')]);
    expect((parseAnswer(bom) as Answer).result.records).toEqual([['"é"', "0.10"]]);
  });
});

describe("an answer read as it arrives", () => {
  const fields = csvAnswer.body.result.fields as Column[];
  const reader = () => csvRecordsReader(fields, fields.length, false);
  const answer = utf8.encode(csvAnswer.raw_body_text);

  /** The answer pushed in pieces cut at `cuts`: the rows' bytes as they came out, and how it ended. */
  function streamed(
    bytes: Uint8Array,
    cuts: number[],
    guess = false,
  ): { csv: string; rows: number; ended: ReturnType<StreamedAnswer["end"]> } {
    const stream = new StreamedAnswer(
      new CsvRecordsStream(reader(), { guess: guess ? new RowEndGuesses() : undefined, segmentBytes: 300 }),
    );
    let csv = "";
    let rows = 0;
    let from = 0;
    for (const to of [
      ...[...new Set(cuts)].sort((a, b) => a - b).filter((c) => c > 0 && c < bytes.length),
      bytes.length,
    ]) {
      const got = stream.push(bytes.slice(from, to));
      from = to;
      if (got) {
        csv += new TextDecoder().decode(got.page.bytes);
        rows += got.page.rows;
      }
    }
    const last = stream.finish();
    if (last) {
      csv += new TextDecoder().decode(last.page.bytes);
      rows += last.page.rows;
    }
    expect(stream.bytes).toBe(bytes.length);
    return { csv, rows, ended: stream.end() };
  }

  it("gives real CKAN 2.12's CSV records as the whole answer's reader does, and the rest as JSON, wherever it is cut", () => {
    const whole = reader()(answer, memberAt(answer, "result", "records"));
    const want = new TextDecoder().decode(whole.page.bytes);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: answer.length }), { maxLength: 12 }),
        fc.boolean(),
        (cuts, guess) => {
          const { csv, rows, ended } = streamed(answer, cuts, guess);
          expect({ csv, rows }).toEqual({ csv: want, rows: 12 });
          const envelope = JSON.parse((ended as { envelope: string }).envelope) as Answer;
          expect(envelope.result.records).toBeNull();
          expect(envelope.result.fields).toEqual(csvAnswer.body.result.fields);
          expect(envelope.result.total).toBe(csvAnswer.body.result.total);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("gathers an answer whose records are not one string (lists, an error) whole, to be read as before", () => {
    const lists = utf8.encode(listsAnswer.raw_body_text);
    const { rows, ended } = streamed(lists, [10, 200, 2000]);
    expect(rows).toBe(0);
    expect((ended as { whole: Uint8Array }).whole).toEqual(lists);
    const error = utf8.encode('{"help": "h", "success": false, "error": {"__type": "Not Found Error"}}');
    expect((streamed(error, [5]).ended as { whole: Uint8Array }).whole).toEqual(error);
  });

  it("frees the buffer the answer's head was gathered in once the records begin, not at the answer's end", async () => {
    // The head is gathered from a whole read (256 KB from fetch): freed as the records begin, not
    // kept for the small rest after them until the page ends; and the records' first bytes go on
    // from it, not from a copy (one a page, left to the collector, had piled up).
    const at = memberAt(answer, "result", "records");
    const end = new TextDecoder().decode(answer).indexOf('", "fields"');
    const rows = answer.subarray(at + 1, end);
    const big = new Uint8Array([
      ...answer.subarray(0, at + 1),
      ...Array(30)
        .fill([...rows])
        .flat(),
      ...answer.subarray(end),
    ]);
    const stream = new StreamedAnswer(new CsvRecordsStream(reader()));
    const first = 40_000;
    const { freed } = await freedWhile(() => stream.push(big.slice(0, first)));
    // Gathered into a buffer of just its size (past twice the first 16 KB): freed as the records began.
    expect(freed).toContain(first);
    stream.push(big.slice(first));
    expect(JSON.parse((stream.end() as { envelope: string }).envelope).result.total).toBe(csvAnswer.body.result.total);
  });

  it("says so when the answer ends inside its records", () => {
    const cut = answer.subarray(0, memberAt(answer, "result", "records") + 40);
    expect(() => streamed(cut, [])).toThrow(/inside its records/);
    // Guessing where rows end, the string's end is looked for when the answer ends: not found, the same.
    expect(() => streamed(cut, [], true)).toThrow(/inside its records/);
    const recordsEnd = new TextDecoder().decode(answer).indexOf('", "fields"');
    expect(() => streamed(answer.subarray(0, recordsEnd - 3), [100, 900], true)).toThrow(/inside its records/);
  });
});
