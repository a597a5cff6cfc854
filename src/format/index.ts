import type { Column } from "../rows/types.ts";
import type { CsvOptions, FormatName, NumericMode } from "../query/formats.ts";
import { csvEncoder, headerText } from "./csv.ts";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import { parquetEncoder } from "./parquet.ts";
import type { Encoder } from "./types.ts";
import { xlsxEncoder, xlsxPackage } from "./xlsx.ts";
import { ZIP_ENTRY_LIMIT } from "./zip.ts";

export interface FormatEncoder {
  encoder(columns: Column[], csv: CsvOptions, numeric: NumericMode): Encoder<string | Uint8Array>;
  /** A container the encoded bytes are streamed into (XLSX: the workbook's ZIP around its sheet). */
  package?: () => ReadableWritablePair<Uint8Array, Uint8Array>;
  /** The most encoded bytes the format holds, and what a file past it would be told. */
  maxBytes?: { limit: number; refusal: (estimate: number) => string };
}

/** One renderer per format of query/formats.ts. */
export const ENCODERS: Record<FormatName, FormatEncoder> = {
  csv: { encoder: csvEncoder },
  tsv: { encoder: (columns, csv) => csvEncoder(columns, { ...csv, delimiter: "\t" }) },
  json: { encoder: jsonEncoder },
  ndjson: { encoder: ndjsonEncoder },
  xlsx: {
    encoder: (columns, csv) => xlsxEncoder(columns, { header: headerText(columns, csv.header === "label" ? "label" : "id") }),
    package: xlsxPackage,
    maxBytes: {
      limit: ZIP_ENTRY_LIMIT,
      refusal: (estimate) =>
        `This workbook's sheet would be about ${Math.max(4, Math.round(estimate / 2 ** 30))} GiB, more than the 4 GiB one XLSX sheet holds. Use a smaller limit, fewer fields, or CSV.`,
    },
  },
  parquet: {
    encoder: (columns, csv, numeric) => parquetEncoder(columns, { names: headerText(columns, csv.header === "label" ? "label" : "id"), numeric }),
  },
};
