import type { Column } from "../rows/types.ts";
import type { FormatName, FormatOptions, Output } from "../query/formats.ts";
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

export interface FormatEncoder<Options> {
  encoder(columns: Column[], options: Options, continued?: Continued): Encoder<string | Uint8Array>;
  /** Whether `continued` works: all its state fits in `Continued` (XLSX's ZIP and deflate state, Parquet's row groups do not). */
  resumable: boolean;
  /** A container the encoded bytes are streamed into (XLSX: the workbook's ZIP around its sheet). */
  package?: () => ReadableWritablePair<Uint8Array, Uint8Array>;
  /** The most encoded bytes the format holds, and what a file past it would be told. */
  maxBytes?: { limit: number; refusal: (estimate: number) => string };
}

/** One renderer per format of query/formats.ts, each taking that format's own options. */
export const ENCODERS: { [F in FormatName]: FormatEncoder<FormatOptions[F]> } = {
  // TSV's options carry the tab as their delimiter.
  csv: { encoder: csvEncoder, resumable: true },
  tsv: { encoder: csvEncoder, resumable: true },
  json: { encoder: (columns, _options, continued) => jsonEncoder(columns, continued), resumable: true },
  // One line per row, nothing before or after them: nothing to carry.
  ndjson: { encoder: (columns) => ndjsonEncoder(columns), resumable: true },
  xlsx: {
    resumable: false,
    encoder: (columns, options) => xlsxEncoder(columns, { header: headerText(columns, options.header) }),
    package: xlsxPackage,
    maxBytes: {
      limit: ZIP_ENTRY_LIMIT,
      refusal: (estimate) =>
        `This workbook's sheet would be about ${Math.max(4, Math.round(estimate / 2 ** 30))} GiB, more than the 4 GiB one XLSX sheet holds. Use a smaller limit, fewer fields, or CSV.`,
    },
  },
  parquet: {
    resumable: false,
    encoder: (columns, options) =>
      parquetEncoder(columns, { names: headerText(columns, options.header), numeric: options.numeric }),
  },
};

/** An encoder for the export's format, given that format's own options. */
export function encoderFor(output: Output, columns: Column[], continued?: Continued): Encoder<string | Uint8Array> {
  // The format names both the entry and its options' type: one pair, looked up together.
  const entry = ENCODERS[output.format] as FormatEncoder<Output["options"]>;
  return entry.encoder(columns, output.options, continued);
}
