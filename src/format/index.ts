import type { Column } from "../rows/types.ts";
import type { CsvOptions, FormatName, NumericMode } from "../query/formats.ts";
import { csvEncoder, headerText } from "./csv.ts";
import { jsonEncoder, ndjsonEncoder } from "./json.ts";
import { parquetEncoder } from "./parquet.ts";
import type { Encoder } from "./types.ts";
import { xlsxEncoder, xlsxPackage } from "./xlsx.ts";
import { ZIP_ENTRY_LIMIT } from "./zip.ts";

/**
 * A file an earlier invocation began (a snapshot run's earlier steps): its start and `rows` rows are
 * written, and the encoder goes on as if it had written them itself.
 */
export interface Continued {
  rows: number;
}

export interface FormatEncoder {
  encoder(columns: Column[], csv: CsvOptions, numeric: NumericMode, continued?: Continued): Encoder<string | Uint8Array>;
  /** Whether `continued` works: all its state fits in `Continued` (XLSX's ZIP and deflate state, Parquet's row groups do not). */
  resumable: boolean;
  /** A container the encoded bytes are streamed into (XLSX: the workbook's ZIP around its sheet). */
  package?: () => ReadableWritablePair<Uint8Array, Uint8Array>;
  /** The most encoded bytes the format holds, and what a file past it would be told. */
  maxBytes?: { limit: number; refusal: (estimate: number) => string };
}

/** One renderer per format of query/formats.ts. */
export const ENCODERS: Record<FormatName, FormatEncoder> = {
  csv: { encoder: (columns, csv, _numeric, continued) => csvEncoder(columns, csv, continued), resumable: true },
  tsv: { encoder: (columns, csv, _numeric, continued) => csvEncoder(columns, { ...csv, delimiter: "\t" }, continued), resumable: true },
  json: { encoder: (columns, _csv, _numeric, continued) => jsonEncoder(columns, continued), resumable: true },
  // One line per row, nothing before or after them: nothing to carry.
  ndjson: { encoder: ndjsonEncoder, resumable: true },
  xlsx: {
    resumable: false,
    encoder: (columns, csv) => xlsxEncoder(columns, { header: headerText(columns, csv.header === "label" ? "label" : "id") }),
    package: xlsxPackage,
    maxBytes: {
      limit: ZIP_ENTRY_LIMIT,
      refusal: (estimate) =>
        `This workbook's sheet would be about ${Math.max(4, Math.round(estimate / 2 ** 30))} GiB, more than the 4 GiB one XLSX sheet holds. Use a smaller limit, fewer fields, or CSV.`,
    },
  },
  parquet: {
    resumable: false,
    encoder: (columns, csv, numeric) => parquetEncoder(columns, { names: headerText(columns, csv.header === "label" ? "label" : "id"), numeric }),
  },
};
