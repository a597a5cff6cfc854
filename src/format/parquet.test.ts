import fc from "fast-check";
import { parquetMetadata, parquetReadObjects } from "hyparquet";
import { describe, expect, it } from "vitest";
import { FormatSizeExceeded } from "../errors.ts";
import type { Column, Row } from "../rows/types.ts";
import { footerEntriesRefusal, MAX_FOOTER_ENTRIES, parquetEncoder, parquetEnd } from "./parquet.ts";
import { textUtf8 } from "./parquet-text.ts";
import type { Continued, EncoderCarry } from "./types.ts";

// The Parquet encoder's files read back by an independent reader (hyparquet): every value as CKAN
// wrote it, each row group's statistics, and a file written over several invocations.

const COLUMNS: Column[] = [
  { id: "id", type: "int4" },
  { id: "big", type: "int8" },
  { id: "amount", type: "numeric" },
  { id: "ratio", type: "float8" },
  { id: "name", type: "text" },
  { id: "city", type: "text" },
  { id: "at", type: "timestamp" },
  { id: "day", type: "date" },
  { id: "ok", type: "bool" },
  { id: "meta", type: "json" },
  { id: "small", type: "int2" },
  { id: "f4", type: "float4" },
];

const CITIES = ['"Zürich"', '"東京"', '"Reykjav\\u00edk"', '"😀 \\ud83d\\ude00"', "null"];

/** Row `i`: repeated cities (a dictionary), unique names (past the dictionary's limit), nulls here and there. */
const row = (i: number): Row => [
  String(i),
  i % 7 === 0 ? "null" : String(BigInt(i) * 1_000_000_000_007n),
  i % 5 === 0 ? "null" : `${i}.${String(i % 100).padStart(2, "0")}0`,
  i % 11 === 0 ? "null" : String(i / 8),
  `"name \\"${i}\\" ½"`,
  CITIES[i % CITIES.length]!,
  `"2020-01-${String(1 + (i % 28)).padStart(2, "0")}T12:34:56.${String(i % 1_000_000).padStart(6, "0")}"`,
  `"1969-12-${String(1 + (i % 31)).padStart(2, "0")}"`,
  i % 3 === 0 ? "null" : i % 2 === 0 ? "true" : "false",
  i % 4 === 0 ? undefined : `{"k": ${i}, "s": "\\u00e9"}`,
  String((i % 30_000) - 15_000),
  String((i + 1) / 3),
];

const options = { names: COLUMNS.map((c) => c.id), numeric: "text" as const };

function joined(parts: (string | Uint8Array)[]): ArrayBuffer {
  const bytes = parts.filter((p): p is Uint8Array => typeof p !== "string");
  const out = new Uint8Array(bytes.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of bytes) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out.buffer;
}

function pages(from: number, to: number, size: number): Row[][] {
  const out: Row[][] = [];
  for (let s = from; s < to; s += size) out.push(Array.from({ length: Math.min(size, to - s) }, (_, k) => row(s + k)));
  return out;
}

/** A whole file of rows [0, n) in pages of `size`, in one go. */
function file(n: number, size: number): ArrayBuffer {
  const encoder = parquetEncoder(COLUMNS, options);
  return joined([encoder.begin(), ...pages(0, n, size).map((p) => encoder.page(p)), encoder.end()]);
}

const read = (buffer: ArrayBuffer) =>
  parquetReadObjects({
    file: buffer,
    parsers: {
      timestampFromMicroseconds: (v: bigint) => v,
      dateFromDays: (d: number) => d,
      stringFromBytes: (b: Uint8Array) => new TextDecoder().decode(b),
      jsonFromBytes: (b: Uint8Array) => new TextDecoder().decode(b),
    } as never,
  });

/** What a reader should see of row `i`. */
function expected(i: number): Record<string, unknown> {
  const r = row(i);
  const json = (raw: string | undefined) => (raw === undefined || raw === "null" ? null : JSON.parse(raw));
  return {
    id: i,
    big: r[1] === "null" ? null : BigInt(r[1]!),
    amount: r[2] === "null" ? null : r[2],
    ratio: json(r[3]),
    name: json(r[4]),
    city: json(r[5]),
    at: BigInt(Date.parse(`${json(r[6]).slice(0, 19)}Z`)) * 1000n + BigInt(i % 1_000_000),
    day: Date.parse(`${json(r[7])}T00:00:00Z`) / 86_400_000,
    ok: json(r[8]),
    meta: r[9] ?? null,
    small: (i % 30_000) - 15_000,
    f4: Math.fround((i + 1) / 3),
  };
}

describe("a Parquet file from CKAN's rows", () => {
  it("holds every value as CKAN wrote it: digits, escapes, surrogate pairs, microseconds, JSON text", async () => {
    const rows = await read(file(5000, 1200));
    expect(rows.length).toBe(5000);
    for (const i of [0, 1, 2, 3, 4, 7, 1234, 4999]) expect(rows[i], `row ${i}`).toEqual(expected(i));
    expect(rows.every((r, i) => r["name"] === `name "${i}" ½`)).toBe(true);
  });

  it("keeps each row group's min, max and nulls, text in byte order", async () => {
    const buffer = file(3000, 1000);
    const metadata = parquetMetadata(buffer);
    expect(metadata.row_groups.map((g) => Number(g.num_rows))).toEqual([1000, 2000]);
    const stats = (g: number, c: number) => metadata.row_groups[g]!.columns[c]!.meta_data!.statistics!;
    expect(stats(0, 0)).toMatchObject({ min_value: 0, max_value: 999, null_count: 0n });
    expect(stats(1, 1)).toMatchObject({ min_value: 1000n * 1_000_000_000_007n, null_count: 286n });
    expect(stats(0, 3)).toMatchObject({ min_value: 0.125, max_value: 999 / 8, null_count: 91n });
    // "Zürich" < "東京" < "😀" in UTF-8 (not in UTF-16, where 😀's surrogates sort before 東).
    expect(stats(0, 5)).toMatchObject({ min_value: "Reykjavík", max_value: "😀 😀", null_count: 200n });
    expect(stats(0, 8)).toMatchObject({ min_value: false, max_value: true, null_count: 334n });
    // No order of JSON text: its nulls only.
    expect(stats(0, 9)).toEqual({ null_count: 250n });
    // A float4's bounds are its own (single-precision) values.
    expect(stats(0, 10)).toMatchObject({ min_value: -15_000, max_value: -14_001 });
    expect(stats(1, 11)).toMatchObject({ min_value: Math.fround(1001 / 3), max_value: Math.fround(1000) });
  });

  it("is the same file when written over several invocations, each pausing with its own row groups' entries only", async () => {
    let continued: Continued | undefined;
    const parts: (string | Uint8Array)[] = [];
    const paused: EncoderCarry[] = [];
    for (const [from, to] of [
      [0, 1500],
      [1500, 1600],
      [1600, 4000],
    ] as const) {
      const encoder = parquetEncoder(COLUMNS, options, continued);
      parts.push(encoder.begin(), ...pages(from, to, 700).map((p) => encoder.page(p)));
      const pause = encoder.pause();
      parts.push(pause.chunk);
      // Kept as a snapshot keeps it: through JSON.
      paused.push(JSON.parse(JSON.stringify(pause.carried)));
      continued = { rows: to };
    }
    // Each invocation hands on its own groups' entries: the first page's and 800 rows, 100, 2,400.
    expect(paused.map((p) => (p as { groups: unknown[] }).groups.length)).toEqual([2, 1, 1]);
    parts.push(parquetEnd(COLUMNS, options, paused));
    const buffer = joined(parts);
    const rows = await read(buffer);
    expect(rows.length).toBe(4000);
    for (const i of [0, 1499, 1500, 1599, 1600, 3999]) expect(rows[i], `row ${i}`).toEqual(expected(i));
    const groups = parquetMetadata(buffer).row_groups;
    expect(groups.map((g) => Number(g.num_rows)).reduce((a, b) => a + b)).toBe(4000);
    expect(groups[1]!.columns[0]!.meta_data!.statistics).toMatchObject({ min_value: 700, max_value: 1499 });
  });

  it("refuses a file written in parts whose footer entries would pass what its last part holds", () => {
    expect(footerEntriesRefusal(MAX_FOOTER_ENTRIES)).toBeUndefined();
    const refusal = footerEntriesRefusal(MAX_FOOTER_ENTRIES + 1);
    expect(refusal).toBeInstanceOf(FormatSizeExceeded);
    expect(refusal?.message).toMatch(
      /more than the 8 MiB its last step can hold.*Snapshot it as CSV, or with a smaller limit/,
    );
  });

  it("ends a file written in parts only with parquetEnd: its own end would lack the earlier groups", () => {
    const encoder = parquetEncoder(COLUMNS, options, { rows: 100 });
    encoder.page(pages(100, 200, 100)[0]!);
    expect(() => encoder.end()).toThrow(/parquetEnd/);
  });

  it("writes a file with no rows: the schema alone", async () => {
    const encoder = parquetEncoder(COLUMNS, options);
    const buffer = joined([encoder.begin(), encoder.end()]);
    expect(parquetMetadata(buffer).schema.map((e) => e.name)).toEqual(["root", ...options.names]);
    expect(await read(buffer)).toEqual([]);
  });
});

describe("text cells as UTF-8", () => {
  it("are the bytes TextEncoder gives for the string JSON.parse reads, lone surrogates as U+FFFD", () => {
    const utf8 = new TextEncoder();
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.oneof(
            fc.constantFrom("\ud800", "\udc00", "\ud83d\ude00", "\\", '"', "\n"),
            fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
          ),
        }),
        (text) => {
          for (const raw of [JSON.stringify(text), JSON.stringify(text).replace(/[^\x20-\x7e]/g, escape16)]) {
            const out = new Uint8Array(3 * raw.length);
            const end = textUtf8(raw, out, 0);
            expect(out.subarray(0, end)).toEqual(utf8.encode(JSON.parse(raw) as string));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** A character as JSON's \uXXXX escape. */
const escape16 = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

describe("Parquet row groups of JSON rows and CSV cells together", () => {
  const utf8 = new TextEncoder();
  /** Cells as parquet-from-csv.ts frames them: each text's length (-1 for null), then its UTF-8. */
  const cells = (rows: (string | null)[][]) => {
    const parts: number[] = [];
    const ends: number[] = [];
    for (const row of rows) {
      for (const text of row) {
        const bytes = text === null ? new Uint8Array(0) : utf8.encode(text);
        const n = text === null ? -1 : bytes.length;
        parts.push(n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24, ...bytes);
      }
      ends.push(parts.length);
    }
    return { bytes: Uint8Array.from(parts), rows: rows.length, ends: Uint32Array.from(ends) };
  };
  const columns: Column[] = [
    { id: "n", type: "numeric" },
    { id: "meta", type: "json" },
    { id: "t", type: "text" },
  ];

  it("read every value back, the same values from both, texts that differ by quotes or a BOM apart", async () => {
    // A snapshot's continued part: its first page of JSON rows shares a row group with the cells after it.
    const encoder = parquetEncoder(columns, { names: ["n", "meta", "t"], numeric: "text" }, { rows: 1 });
    const parts: (string | Uint8Array)[] = [new Uint8Array([0x50, 0x41, 0x52, 0x31]), encoder.begin()];
    parts.push(
      encoder.page([
        ["1", '{"a": 1}', '"abc"'],
        ["2", "null", '"q14171"'],
      ]),
    );
    parts.push(
      encoder.passed!(
        cells([
          ["1", '{"a": 1}', "abc"],
          ["2", '{"a": 1}', '"abc"'],
          ["2", null, "a485405"],
          ["3", '{"b": 2}', '"q14171"'],
          ["3", "[1, 2]", "X"],
          ["4", "[1, 2]", "\ufeffX"],
          ["4", null, "Y"],
          ["5", null, "Y"],
        ]),
      ),
    );
    const { chunk, carried } = encoder.pause!();
    parts.push(chunk, parquetEnd(columns, { names: ["n", "meta", "t"], numeric: "text" }, [carried]));
    const file = joined(parts);
    // Text decoded keeping a leading BOM (hyparquet's default decoder drops it).
    const keep = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
    const rows = await parquetReadObjects({ file, parsers: { stringFromBytes: (b: Uint8Array) => keep.decode(b) } });
    expect(rows.map((r) => [r.n, r.meta, r.t])).toEqual([
      ["1", { a: 1 }, "abc"],
      ["2", null, "q14171"],
      ["1", { a: 1 }, "abc"],
      ["2", { a: 1 }, '"abc"'],
      ["2", null, "a485405"],
      ["3", { b: 2 }, '"q14171"'],
      ["3", [1, 2], "X"],
      ["4", [1, 2], "\ufeffX"],
      ["4", null, "Y"],
      ["5", null, "Y"],
    ]);
  });
});
