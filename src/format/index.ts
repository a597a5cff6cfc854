import { csvEncoder, headerText } from "./csv.ts";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import type { Column, CsvOptions, Encoder } from "./types.ts";
import { SHEET_ROWS, xlsxEncoder, xlsxPackage } from "./xlsx.ts";

export type { Column, CsvOptions, Encoder, Row } from "./types.ts";

export interface Format {
  contentType: string;
  extension: string;
  /** Parameters only this format understands. */
  params: readonly string[];
  encoder(columns: Column[], csv: CsvOptions): Encoder;
  /** The most data rows the format holds, when it has a limit of its own. */
  maxRows?: number;
  /** A container the encoded bytes are streamed into (XLSX: the workbook's ZIP around its sheet). */
  package?: () => ReadableWritablePair<Uint8Array, Uint8Array>;
}

/** The one table of formats: route extension -> content type and renderer. */
export const FORMATS = {
  csv: {
    contentType: "text/csv; charset=utf-8",
    extension: "csv",
    params: ["bom", "header", "delimiter", "decimal", "formula_guard", "errors"],
    encoder: csvEncoder,
  },
  tsv: {
    contentType: "text/tab-separated-values; charset=utf-8",
    extension: "tsv",
    params: ["bom", "header", "decimal", "formula_guard", "errors"],
    encoder: (columns, csv) => csvEncoder(columns, { ...csv, delimiter: "\t" }),
  },
  json: { contentType: "application/json; charset=utf-8", extension: "json", params: [], encoder: jsonEncoder },
  ndjson: { contentType: "application/x-ndjson; charset=utf-8", extension: "ndjson", params: [], encoder: ndjsonEncoder },
  xlsx: {
    contentType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    extension: "xlsx",
    params: ["header", "errors"],
    encoder: (columns, csv) => xlsxEncoder(columns, { header: headerText(columns, csv.header === "label" ? "label" : "id") }),
    // One sheet, its first row the header.
    maxRows: SHEET_ROWS - 1,
    package: xlsxPackage,
  },
} as const satisfies Record<string, Format>;

export type FormatName = keyof typeof FORMATS;

export const isFormatName = (name: string): name is FormatName => Object.hasOwn(FORMATS, name);

/** The most rows one export in this format may hold: the worker's maximum, or the format's own when lower. */
export const formatMaxRows = (format: FormatName, workerMax: number): number => {
  const own: Format = FORMATS[format];
  return Math.min(workerMax, own.maxRows ?? workerMax);
};
