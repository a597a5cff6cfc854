/// <reference types="vite/client" />
import { parquetReadObjects } from "hyparquet";
import { describe, expect, it } from "vitest";
import { parseAnswer } from "../src/ckan/raw-json.ts";
import { parquetEncoder } from "../src/format/parquet.ts";
import { parquetCsvReader } from "../src/format/parquet-from-csv.ts";
import type { Column, Row } from "../src/rows/types.ts";

// Real CKAN's answers to one request as `lists` and as `csv` (the recordings' raw bytes): Parquet
// written from the JSON rows and from the CSV cells holds the same values, every column type.

type Recorded = { raw_body_text: string };
const files = import.meta.glob<Recorded>(
  [
    "./fixtures/ckan-2.10-real/records_*.json",
    "./fixtures/ckan-2.11/records_*.json",
    "./fixtures/ckan-2.12/records_*.json",
  ],
  { eager: true, import: "default" },
);
const answer = (folder: string, format: "csv" | "lists"): Uint8Array =>
  new TextEncoder().encode(files[`./fixtures/${folder}/records_${format}.json`]!.raw_body_text);

/** Values read back, text kept as it is (a leading BOM too), timestamps as microseconds. */
async function read(parts: (string | Uint8Array)[]): Promise<unknown[]> {
  const bytes = parts.filter((p): p is Uint8Array => typeof p !== "string");
  const file = new Uint8Array(bytes.reduce((n, p) => n + p.byteLength, 0));
  let at = 0;
  for (const p of bytes) file.set(p, (at += p.byteLength) - p.byteLength);
  const keep = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  const rows = await parquetReadObjects({
    file: file.buffer,
    parsers: {
      timestampFromMicroseconds: (v: bigint) => String(v),
      dateFromDays: (d: number) => d,
      stringFromBytes: (b: Uint8Array) => keep.decode(b),
      jsonFromBytes: (b: Uint8Array) => keep.decode(b),
    } as never,
  });
  return rows.map((r) => JSON.parse(JSON.stringify(r, (_, v) => (typeof v === "bigint" ? String(v) : v))));
}

describe.each(["ckan-2.10-real", "ckan-2.11", "ckan-2.12"])("Parquet from real CKAN's answers (%s)", (folder) => {
  it("holds the same values written from the CSV cells as from the JSON rows", async () => {
    const lists = parseAnswer(answer(folder, "lists")) as { result: { fields: Column[]; records: Row[] } };
    const columns = lists.result.fields.map(({ id, type }) => ({ id, type }));
    const options = { names: columns.map((c) => c.id), numeric: "text" as const };

    const fromRows = parquetEncoder(columns, options);
    const viaRows = await read([fromRows.begin(), fromRows.page(lists.result.records), fromRows.end()]);

    const csv = answer(folder, "csv");
    const at = new TextDecoder().decode(csv).indexOf('"records": "') + '"records": '.length;
    const { page } = parquetCsvReader(columns, columns.length)(csv, at);
    const fromCells = parquetEncoder(columns, options);
    const viaCells = await read([fromCells.begin(), fromCells.passed!(page), fromCells.end()]);

    expect(viaRows.length).toBe(12);
    expect(viaCells).toEqual(viaRows);
  });
});
