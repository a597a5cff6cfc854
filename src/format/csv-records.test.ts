import fc from "fast-check";
import { describe, expect, it } from "vitest";
import csvAnswer from "../../test/fixtures/ckan-2.12/records_csv.json";
import type { CopiedRecords } from "../rows/batch.ts";
import { memberAt } from "../rows/json-bytes.ts";
import { ownedBytes } from "../rows/owned-bytes.ts";
import type { Column } from "../rows/types.ts";
import { csvRecordsReader } from "./csv-passthrough.ts";
import { CsvRecordsStream, RowEndGuesses, SEGMENT_BYTES } from "./csv-records.ts";
import { jsonCsvReader } from "./json-from-csv.ts";
import { xlsxCsvReader } from "./xlsx-from-csv.ts";
import { anyText, copyCell } from "../../test/any-text.ts";

const utf8 = new TextEncoder();
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

/** Real CKAN 2.12: twelve edge-case rows (quotes, commas, line breaks, non-ASCII, nulls) as `records_format: "csv"`. */
const answer = utf8.encode(csvAnswer.raw_body_text);
const recordsAt = memberAt(answer, "result", "records");
const fields = csvAnswer.body.result.fields as Column[];

/** The answer's records string `times` over: a page of many rows, every edge case many times. */
function bigRecords(times: number): Uint8Array {
  const end = answer.indexOf(
    34,
    recordsAt + 1 + answer.subarray(recordsAt + 1).findIndex((_, k, b) => b[k] === 34 && b[k - 1] !== 92),
  );
  const rows = answer.subarray(recordsAt + 1, end);
  const out = new Uint8Array(rows.length * times + 2);
  out[0] = 34;
  for (let k = 0; k < times; k++) out.set(rows, 1 + k * rows.length);
  out[out.length - 1] = 34;
  return out;
}

/** How a stream reads: by the byte pass, or guessing row ends (the exports'), segments as small as given. */
type Reading = ConstructorParameters<typeof CsvRecordsStream>[1];

/** A records string (with its quotes) and what follows it, pushed in pieces cut at `cuts`, then finished. */
function streamed(
  read: ReturnType<typeof csvRecordsReader>,
  records: Uint8Array,
  cuts: number[],
  reading: Reading = {},
  after = utf8.encode(', "fields": []}}'),
): { text: string; rows: number; lastId: string | undefined; after: string } {
  const body = new Uint8Array(records.length - 1 + after.length);
  body.set(records.subarray(1));
  body.set(after, records.length - 1);
  const stream = new CsvRecordsStream(read, reading);
  const pages: CopiedRecords[] = [];
  let rest = "";
  const points = [...new Set(cuts.map((c) => Math.min(c, body.length)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...points, body.length]) {
    if (to <= from) continue;
    const piece = body.slice(from, to);
    from = to;
    if (stream.ended) {
      rest += text(piece);
      continue;
    }
    const got = stream.push(piece);
    if (got.records) pages.push(got.records);
    if (got.after) rest += text(got.after);
  }
  const last = stream.finish();
  if (last.records) pages.push(last.records);
  if (last.after) rest += text(last.after);
  expect(stream.ended).toBe(true);
  return {
    text: pages.map((p) => text(p.page.bytes)).join(""),
    rows: pages.reduce((n, p) => n + p.page.rows, 0),
    lastId: pages.findLast((p) => p.lastId !== undefined)?.lastId,
    after: rest,
  };
}

const whole = (
  read: ReturnType<typeof csvRecordsReader>,
  records: Uint8Array,
): { text: string; rows: number; lastId: string | undefined } => {
  const { page, lastId } = read(records, 0);
  return { text: text(page.bytes), rows: page.rows, lastId };
};

describe("CKAN's CSV records read as the answer arrives", () => {
  // The columns as the answer has them (`_id` first): kept all, the last cell's digits read as the page's last `_id` would be.
  const withId: Column[] = fields;

  it("writes the same CSV, rows and last cell as the whole page, wherever the body's chunks are cut", () => {
    const records = bigRecords(3);
    const reader = (): ReturnType<typeof csvRecordsReader> => csvRecordsReader(withId, withId.length, true);
    const want = whole(reader(), records);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: records.length + 20 }), { maxLength: 40 }), (cuts) => {
        const got = streamed(reader(), records, cuts);
        expect(got).toEqual({ ...want, after: ', "fields": []}}' });
      }),
      { numRuns: 300 },
    );
    // Every byte its own chunk: each escape and doubled quote cut in two.
    expect(streamed(reader(), records, [...records.keys()])).toEqual({ ...want, after: ', "fields": []}}' });
  });

  const anyTextCols: Column[] = [
    { id: "name", type: "text" },
    { id: "note", type: "text" },
    { id: "_id", type: "int" },
  ];
  /** Rows of any text (line breaks in quoted cells among them), as CKAN's records string, escaped as CKAN escapes or raw UTF-8. */
  const anyRecords = fc
    .tuple(fc.array(fc.tuple(anyText, anyText), { minLength: 1, maxLength: 8 }), fc.boolean())
    .map(([values, escaped]) => {
      const csv = values.map(([a, b], k) => `${copyCell(a)},${copyCell(b)},${k + 1}\n`).join("");
      const json = JSON.stringify(csv);
      return utf8.encode(
        escaped ? json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`) : json,
      );
    });

  it("reads any text as the whole page does, wherever the chunks are cut", () => {
    const reader = (): ReturnType<typeof csvRecordsReader> => csvRecordsReader(anyTextCols, 2, true);
    const cuts = fc.array(fc.nat({ max: 400 }), { maxLength: 12 });
    fc.assert(
      fc.property(anyRecords, cuts, (records, at) => {
        expect(streamed(reader(), records, at)).toEqual({ ...whole(reader(), records), after: ', "fields": []}}' });
      }),
      { numRuns: 300 },
    );
  });

  it("reads any text as the whole page does when it guesses where rows end, a `\\n` in a quoted cell or in the answer's rest", () => {
    // Every reader the exports stream with: CSV, JSON, NDJSON, sheet rows.
    const readers: Record<string, () => ReturnType<typeof csvRecordsReader>> = {
      csv: () => csvRecordsReader(anyTextCols, 2, true),
      json: () => jsonCsvReader(anyTextCols, 2, false),
      ndjson: () => jsonCsvReader(anyTextCols, 2, true),
      xlsx: () => xlsxCsvReader(anyTextCols, 2),
    };
    const cuts = fc.array(fc.nat({ max: 400 }), { maxLength: 12 });
    // After the records, a `\n` escape where a guess from the end would find it first.
    const rest = fc.constantFrom(', "fields": []}}', ', "fields": [{"id": "a\\nb"}]}}', ', "x": "\\\\n\\"\\n"}}');
    const format = fc.constantFrom(...Object.keys(readers));
    fc.assert(
      fc.property(
        anyRecords,
        cuts,
        fc.integer({ min: 1, max: 300 }),
        rest,
        format,
        (records, at, segmentBytes, after, f) => {
          const reader = readers[f]!;
          const got = streamed(reader(), records, at, { guess: new RowEndGuesses(), segmentBytes }, utf8.encode(after));
          expect(got).toEqual({ ...whole(reader(), records), after });
        },
      ),
      { numRuns: 800 },
    );
  });

  it("gives JSON rows too, and reads a large page in batches of whole rows before it ends", () => {
    const records = bigRecords(Math.ceil((3 * SEGMENT_BYTES) / answer.length) + 1);
    const json = (): ReturnType<typeof csvRecordsReader> => jsonCsvReader(withId, withId.length, false);
    const want = whole(json(), records);
    const stream = new CsvRecordsStream(json());
    const body = records.subarray(1);
    let early = 0;
    for (let at = 0; at < body.length - 2000; at += 1000) if (stream.push(body.slice(at, at + 1000)).records) early++;
    expect(early).toBeGreaterThanOrEqual(2);
    expect(streamed(json(), records, [7, 5000, 100_000])).toEqual({ ...want, after: ', "fields": []}}' });
    const guessing = new CsvRecordsStream(json(), { guess: new RowEndGuesses() });
    early = 0;
    for (let at = 0; at < body.length - 2000; at += 1000) if (guessing.push(body.slice(at, at + 1000)).records) early++;
    expect(early).toBeGreaterThanOrEqual(2);
    expect(streamed(json(), records, [7, 5000, 100_000], { guess: new RowEndGuesses() })).toEqual({
      ...want,
      after: ', "fields": []}}',
    });
  });

  it("refuses a row of another width, and tells an answer that ended inside its records, when it guesses too", () => {
    // JSON's reader checks each row's width.
    const reader = (): ReturnType<typeof csvRecordsReader> => jsonCsvReader(anyTextCols, 2, false);
    const rows = (n: number): string => Array.from({ length: n }, (_, k) => `a,b,${k + 1}\\n`).join("");
    const broken = utf8.encode(`${rows(50)}a,b\\n${rows(50)}", "fields": []}}`);
    for (const guess of [undefined, new RowEndGuesses()]) {
      const stream = new CsvRecordsStream(reader(), { guess, segmentBytes: 64 });
      expect(() => {
        for (let at = 0; at < broken.length && !stream.ended; at += 100) stream.push(broken.slice(at, at + 100));
        stream.finish();
      }).toThrow("a row has 2 cells for 3 columns");
      const cut = new CsvRecordsStream(reader(), { guess, segmentBytes: 64 });
      let rows10 = 0;
      for (const piece of [utf8.encode(rows(10)), utf8.encode("a,b,1")])
        rows10 += cut.push(piece).records?.page.rows ?? 0;
      rows10 += cut.finish().records?.page.rows ?? 0;
      expect(cut.ended).toBe(false);
      expect(rows10).toBe(10);
    }
  });

  it("stops guessing for an export once guesses failed on two of its pages (text with line breaks throughout)", () => {
    const reader = csvRecordsReader(anyTextCols, 2, true);
    let failed = 0;
    const counting: typeof reader = (b, at) => {
      try {
        return reader(b, at);
      } catch (error) {
        failed++;
        throw error;
      }
    };
    // Every row's note holds a line break: the last `\\n` of a segment is often inside it.
    const page = utf8.encode(`${Array.from({ length: 40 }, (_, k) => `a,\\"x\\ny\\",${k + 1}\\n`).join("")}", "x": 1}`);
    const guesses = new RowEndGuesses();
    const failedPerPage = [1, 2, 3, 4].map(() => {
      const before = failed;
      const stream = new CsvRecordsStream(counting, { guess: guesses, segmentBytes: 50 });
      let rows = 0;
      for (let at = 0; at < page.length && !stream.ended; at += 37)
        rows += stream.push(page.slice(at, at + 37)).records?.page.rows ?? 0;
      rows += stream.finish().records?.page.rows ?? 0;
      expect(rows).toBe(40);
      return failed - before;
    });
    expect(failedPerPage).toEqual([1, 1, 0, 0]);
  });

  it("frees the buffers a read made on a wrong guess (a page's worth, else left to a rare collection)", () => {
    const real = csvRecordsReader(anyTextCols, 2, true);
    const made: Uint8Array[] = [];
    const reader: typeof real = (b, at) => {
      made.push(ownedBytes(1000));
      return real(b, at);
    };
    const page = utf8.encode(`${Array.from({ length: 40 }, (_, k) => `a,\\"x\\ny\\",${k + 1}\\n`).join("")}", "x": 1}`);
    const stream = new CsvRecordsStream(reader, { guess: new RowEndGuesses(), segmentBytes: 50 });
    for (let at = 0; at < page.length && !stream.ended; at += 37) stream.push(page.slice(at, at + 37));
    stream.finish();
    expect(made.length).toBeGreaterThan(2);
    // The wrong guess's read is freed (detached: empty); the reads whose rows were handed on are not.
    expect(made.filter((bytes) => bytes.byteLength === 0)).toHaveLength(1);
  });

  it("reads an empty records string, and refuses bytes once it ended", () => {
    const stream = new CsvRecordsStream(csvRecordsReader(withId, withId.length, false));
    const got = stream.push(utf8.encode('", "fields": []}}'));
    expect(got.records?.page.rows).toBe(0);
    expect(text(got.after!)).toBe(', "fields": []}}');
    expect(() => stream.push(utf8.encode("x"))).toThrow();
    // Guessing, the end is found once the answer's bytes end.
    const guessing = new CsvRecordsStream(csvRecordsReader(withId, withId.length, false), {
      guess: new RowEndGuesses(),
    });
    expect(guessing.push(utf8.encode('", "fields": []}}'))).toEqual({ records: undefined, after: undefined });
    const finished = guessing.finish();
    expect(finished.records?.page.rows).toBe(0);
    expect(text(finished.after!)).toBe(', "fields": []}}');
  });
});
