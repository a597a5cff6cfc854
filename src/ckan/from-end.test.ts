import { describe, expect, it } from "vitest";
import { csvRecordsReader } from "../format/csv-passthrough.ts";
import type { Column } from "../rows/types.ts";
import { asksFromEnd, fromEndRequest, HeldPage } from "./from-end.ts";

const columns: Column[] = [
  { id: "name", type: "text" },
  { id: "_id", type: "int" },
];
const read = csvRecordsReader(columns, 1, true);
const utf8 = new TextEncoder();
/** CKAN's CSV records of rows `[name, _id]`, as the JSON string its answer holds. */
const records = (rows: [string, number][]) =>
  read(utf8.encode(JSON.stringify(rows.map(([name, id]) => `${name},${id}\n`).join(""))), 0);
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

describe("a page asked from the table's end", () => {
  it("asks the rows nearer the end than the start from there, with the row before them", () => {
    const ends = { total: 100, off: false, outputPerRow: 10 };
    expect(asksFromEnd(ends, { offset: 60, count: 20 }, 1000)).toBe(true);
    expect(fromEndRequest({ resource_id: "r", limit: 0, sort: "_id" }, { offset: 60, count: 20 }, 100)).toEqual({
      resource_id: "r",
      limit: 21,
      offset: 20,
      sort: "_id desc",
    });
    // Nearer the start; past the count; too large for the room; before a row's size is known; turned off.
    expect(asksFromEnd(ends, { offset: 30, count: 20 }, 1000)).toBe(false);
    expect(asksFromEnd(ends, { offset: 90, count: 20 }, 1000)).toBe(false);
    expect(asksFromEnd(ends, { offset: 60, count: 20 }, 199)).toBe(false);
    expect(asksFromEnd({ ...ends, outputPerRow: undefined }, { offset: 60, count: 20 }, 1000)).toBe(false);
    expect(asksFromEnd({ ...ends, off: true }, { offset: 60, count: 20 }, 1000)).toBe(false);
  });

  it("hands its rows on in table order, without the row before them, when that row is where it should be", () => {
    const held = new HeldPage();
    // Two batches as CKAN sends them, largest `_id` first; `_id`s with gaps (a filter) are fine.
    held.hold(
      records([
        ["e", 40],
        ["d", 31],
      ]),
    );
    held.hold(
      records([
        ["c", 30],
        ["b", 12],
        ["a", 7],
      ]),
    );
    expect(held.follows(7, 4)).toBe(40);
    const out = [...held.inOrder()].map(({ batch, lastId }) => ({ text: text(batch.bytes), rows: batch.rows, lastId }));
    expect(out).toEqual([
      { text: "b\r\nc\r\n", rows: 2, lastId: 30 },
      { text: "d\r\ne\r\n", rows: 2, lastId: 40 },
    ]);
  });

  it("is not used when the row before it is not the last row handed on, or rows are missing", () => {
    const held = new HeldPage();
    held.hold(
      records([
        ["c", 30],
        ["b", 12],
        ["a", 7],
      ]),
    );
    // A row added at the end since CKAN counted moves every row one place: the row before is another.
    expect(held.follows(12, 2)).toBeUndefined();
    // Fewer rows than asked (a row deleted, a site serving fewer).
    expect(held.follows(7, 3)).toBeUndefined();
    expect(held.follows(undefined, 2)).toBeUndefined();
    expect(held.follows(7, 2)).toBe(30);
  });

  it("holds each batch reversed in buffers of its size, the reader's freed at once", () => {
    const held = new HeldPage();
    const batch = records([
      ["b", 2],
      ["a", 1],
    ]);
    const allocated = batch.page.bytes.buffer.byteLength;
    held.hold(batch);
    expect(batch.page.bytes.length).toBe(0);
    // "a\r\nb\r\n" and two row ends.
    expect(held.bytes).toBe(6 + 8);
    expect(allocated).toBeGreaterThan(6);
  });
});
