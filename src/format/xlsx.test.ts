import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readWorkbook } from "../../test/xlsx-reader.ts";
import type { Column, Row } from "../rows/types.ts";
import { excelDate, excelDateOfAnyText, exactDouble, MAX_CELL_TEXT } from "./xlsx-cells.ts";
import { xlsxEncoder, xlsxPackage } from "./xlsx.ts";

/** The sheet's text or bytes streamed into its package, as the export pipeline does, a page per chunk. */
const packed = (pieces: (string | Uint8Array)[]): Promise<ArrayBuffer> => {
  const utf8 = new TextEncoder();
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      const piece = pieces.shift();
      if (piece !== undefined) controller.enqueue(typeof piece === "string" ? utf8.encode(piece) : piece);
      else controller.close();
    },
  });
  return new Response(source.pipeThrough(xlsxPackage())).arrayBuffer();
};

async function workbook(columns: Column[], pages: Row[][]) {
  const encoder = xlsxEncoder(columns, { header: columns.map((c) => c.id) });
  const all = new Uint8Array(
    await packed([encoder.begin(), ...pages.map((rows) => encoder.page(rows)), encoder.end()]),
  );
  return { bytes: all, ...(await readWorkbook(all)) };
}

describe("XLSX cells", () => {
  it("writes a number as a number only when a double holds it exactly", () => {
    expect(exactDouble("-0.50")).toBe("-0.5");
    expect(exactDouble("1.738914190048968e+16")).toBe("17389141900489680");
    expect(exactDouble("24044285744692.574")).toBe("24044285744692.574");
    expect(exactDouble("0.000001")).toBe("0.000001");
    expect(exactDouble("1e-07")).toBe("1e-7");
    expect(exactDouble("12345678901234567890.123456789")).toBeUndefined();
    expect(exactDouble("12345678901234567890")).toBeUndefined();
    // An integer or numeric past 15 significant digits is text, even where a double holds it.
    expect(exactDouble("9007199254740992", 15)).toBeUndefined();
    expect(exactDouble("123456789012345", 15)).toBe("123456789012345");
    expect(exactDouble("1000000000000000000", 15)).toBe("1000000000000000000");
    expect(exactDouble("9007199254740993")).toBeUndefined();
    expect(exactDouble("1e400")).toBeUndefined();
    expect(exactDouble("NaN")).toBeUndefined();
  });

  it("writes dates and timestamps as Excel serials, and keeps text Excel cannot hold as a date", () => {
    expect(excelDate("2020-01-01")).toEqual({ serial: "43831", style: 2 });
    expect(excelDate("2020-01-01T12:00:00")).toEqual({ serial: "43831.5", style: 3 });
    expect(excelDate("2020-01-01T00:16:17.500000")?.style).toBe(4);
    expect(excelDate("2020-01-01T00:00:00.000001")).toBeUndefined();
    expect(excelDate("1900-02-28")).toBeUndefined();
    expect(excelDate("0099-01-02T03:04:05")).toBeUndefined();
    expect(excelDate("2021-02-29")).toBeUndefined();
    expect(excelDate("2020-01-01T10:00:00+02:00")).toBeUndefined();
  });

  it("reads CKAN's usual timestamps digit by digit to the same serial as any other date text", () => {
    const digits = (n: number, max: number): fc.Arbitrary<string> =>
      fc.integer({ min: 0, max }).map((v) => String(v).padStart(n, "0"));
    const timestamp = fc
      .tuple(
        digits(4, 9999),
        digits(2, 19),
        digits(2, 39),
        fc.constantFrom("T", " "),
        digits(2, 29),
        digits(2, 69),
        digits(2, 69),
        fc.constantFrom("", ".", ".5", ".120", ".000", ".999000", ".0000001", ".12a"),
      )
      .map(([y, mo, d, t, h, mi, s, fraction]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${fraction}`);
    fc.assert(
      fc.property(timestamp, (text) => {
        expect(excelDate(text)).toEqual(excelDateOfAnyText(text));
      }),
      { numRuns: 2000 },
    );
    // Rows in time order: the day kept from the row before never leaks into the next.
    expect(excelDate("2020-02-29T00:00:00")).toEqual(excelDateOfAnyText("2020-02-29T00:00:00"));
    expect(excelDate("2021-02-29T00:00:00")).toBeUndefined();
  });
});

const columns: Column[] = [
  { id: "id", type: "int4" },
  { id: "amount", type: "numeric" },
  { id: "name", type: "text" },
  { id: "active", type: "bool" },
  { id: "day", type: "date" },
  { id: "tags", type: "_text" },
];

describe("XLSX encoder", () => {
  it("writes typed cells, a bold frozen header and widths from the first page", async () => {
    const { rows, rowNumbers, parts } = await workbook(columns, [
      [
        ["1", "-0.50", '"=HYPERLINK(\\"http://x\\")"', "true", '"2020-01-02"', '["a","b"]'],
        ["2", "12345678901234567890.5", '" <b>&amp; \\r\\n _x0041_ \\u0001 "', "false", "null", "null"],
      ],
      [["3", '"7"', '""', "null", '"not a date"', "[]"]],
    ]);
    expect(rowNumbers).toEqual([1, 2, 3, 4]);
    expect(rows[0]!.map((c) => [c.type, c.value, c.style])).toEqual(columns.map((c) => ["inlineStr", c.id, 1]));
    expect(rows[1]).toEqual([
      { type: "n", value: "1", style: 0 },
      { type: "n", value: "-0.5", style: 0 },
      // Text is an inline string: shown as it is, never run as a formula, so it needs no guard.
      { type: "inlineStr", value: '=HYPERLINK("http://x")', style: 0 },
      { type: "b", value: "1", style: 0 },
      { type: "n", value: "43832", style: 2 },
      { type: "inlineStr", value: '["a","b"]', style: 0 },
    ]);
    expect(rows[2]!.map((c) => [c.type, c.value])).toEqual([
      ["n", "2"],
      ["inlineStr", "12345678901234567890.5"],
      ["inlineStr", " <b>&amp; \r\n _x0041_ \u0001 "],
      ["b", "0"],
      ["", ""],
      ["", ""],
    ]);
    expect(rows[3]!.map((c) => [c.type, c.value])).toEqual([
      ["n", "3"],
      ["n", "7"],
      ["inlineStr", ""],
      ["", ""],
      ["inlineStr", "not a date"],
      ["inlineStr", "[]"],
    ]);
    const sheet = parts.get("xl/worksheets/sheet1.xml")!;
    expect(sheet).toContain('<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>');
    // The longest first-page text (23 characters) and a margin; the second page does not count.
    expect(sheet).toContain('<col min="3" max="3" width="25" customWidth="1"/>');
    expect(sheet).not.toContain("<f>");
    expect(parts.get("xl/styles.xml")).toContain("<b/>");
  });
});

describe("XLSX workbooks", () => {
  it("writes a workbook with only the header when there are no rows, and the same bytes every time", async () => {
    const first = await workbook(columns, []);
    expect(first.rows).toHaveLength(1);
    expect((await workbook(columns, [])).bytes).toEqual(first.bytes);
  });

  it("cuts a text longer than an Excel cell holds, and says so in the cell", async () => {
    const { rows } = await workbook([{ id: "t", type: "text" }], [[[JSON.stringify("x".repeat(40000))]]]);
    expect(rows[1]![0]!.value).toHaveLength(MAX_CELL_TEXT);
    expect(rows[1]![0]!.value).toMatch(/\[cut: 40000 characters; an Excel cell holds 32767\]$/);
  });

  it("leaves no central directory when the export fails: not a ZIP a reader accepts", async () => {
    const encoder = xlsxEncoder(columns, { header: columns.map((c) => c.id) });
    const pieces = [
      encoder.begin(),
      encoder.page([["1", "2", '"x"', "true", "null", "null"]]),
      encoder.failure("upstream failed"),
    ];
    expect(pieces[2]).toBe("");
    const chunks: Uint8Array[] = [];
    const utf8 = new TextEncoder();
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        const piece = pieces.shift();
        if (piece !== undefined) controller.enqueue(typeof piece === "string" ? utf8.encode(piece) : piece);
        else controller.error(new Error("upstream failed"));
      },
    });
    const reader = source.pipeThrough(xlsxPackage()).getReader();
    await expect(
      (async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          chunks.push(value);
        }
      })(),
    ).rejects.toThrow("upstream failed");
    await expect(readWorkbook(new Uint8Array(await new Blob(chunks).arrayBuffer()))).rejects.toThrow(
      /not a complete ZIP/,
    );
  });
});
