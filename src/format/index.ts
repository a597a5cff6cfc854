import { csvEncoder } from "./csv.ts";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import type { Column, CsvOptions, Encoder } from "./types.ts";

export type { Column, CsvOptions, Encoder, Row } from "./types.ts";

interface Format {
  contentType: string;
  extension: string;
  /** Parameters only this format understands. */
  params: readonly string[];
  encoder(columns: Column[], csv: CsvOptions): Encoder;
}

/** The one table of formats: route extension -> content type and renderer. */
export const FORMATS = {
  csv: {
    contentType: "text/csv; charset=utf-8",
    extension: "csv",
    params: ["bom", "header", "delimiter", "formula_guard"],
    encoder: csvEncoder,
  },
  tsv: {
    contentType: "text/tab-separated-values; charset=utf-8",
    extension: "tsv",
    params: ["bom", "header", "formula_guard"],
    encoder: (columns, csv) => csvEncoder(columns, { ...csv, delimiter: "\t" }),
  },
  json: { contentType: "application/json; charset=utf-8", extension: "json", params: [], encoder: jsonEncoder },
  ndjson: { contentType: "application/x-ndjson; charset=utf-8", extension: "ndjson", params: [], encoder: ndjsonEncoder },
} as const satisfies Record<string, Format>;

export type FormatName = keyof typeof FORMATS;

export const isFormatName = (name: string): name is FormatName => Object.hasOwn(FORMATS, name);
